"""Row names of the compatibility table for the model suite: ``models/<workload>/<check>[<dtype>]``.

Set explicitly through the ``feature`` marker on each parameter, so a row keeps its name when a
test function is renamed or split, and the name can be read off the test file.
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest

SUITE = "models"


def row(workload: str, check: str, dtype: str) -> str:
    return f"{SUITE}/{workload}/{check}[{dtype}]"


def rows(workload: str, check: str, dtypes: Iterable[str]) -> list:
    """``pytest.param`` per dtype, id = the dtype, carrying the row's ``feature`` marker."""
    return [pytest.param(d, id=d, marks=pytest.mark.rocm_feature(row(workload, check, d))) for d in dtypes]
