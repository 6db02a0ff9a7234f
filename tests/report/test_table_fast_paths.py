"""The table's fast paths for the common case, each held to the general rule it skips: a fast
path that answered differently would change what a table or a diff says."""

from __future__ import annotations

import math

import pytest

from pytest_rocm.report.grid import combined_status
from pytest_rocm.report.growth import grew, grown_errors
from pytest_rocm.report.table import STATUSES, Status

EDGE_ERRORS = [0.0, 1e-7, 1e-6, 9.99e-6, 1e-5, 1.1e-5, 1e-3, 1e-2, 1.1e-2, -1.0, math.inf, -math.inf, math.nan]


@pytest.mark.parametrize("after_value", EDGE_ERRORS)
def test_grown_errors_skips_only_what_grew_would_reject(after_value: float) -> None:
    # grown_errors skips a comparison within factor x the floored base without calling grew(): the
    # skip must never hide what grew() calls grown (-inf, NaN, a value just past the bound)
    before = {("float16", str(i)): b for i, b in enumerate(EDGE_ERRORS)}
    after = dict.fromkeys(before, after_value)
    found = {(g.dtype, g.name) for g in grown_errors("f", before, after, 10.0, 1e-6)}
    assert found == {key for key, b in before.items() if grew(b, after_value, 10.0, 1e-6)}


@pytest.mark.parametrize("status", STATUSES)
def test_a_feature_of_one_row_has_that_rows_status(status: Status) -> None:
    # feature_rows gives a feature of one dtype row its row's status without combined_status
    assert combined_status([status]) == status
