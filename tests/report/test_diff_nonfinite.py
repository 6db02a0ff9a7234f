"""The upgrade gate and non-finite parity errors (issue 19): NaN never compares, so ``>`` alone
let an error that became NaN through ``--fail-on-grown-errors``; inf was caught."""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import pytest

from pytest_rocm import cli
from pytest_rocm.report.diff import compare, grew, verdict
from pytest_rocm.report.files import write_json
from pytest_rocm.report.load import load_report
from pytest_rocm.table.grid import feature_rows, split_dtype
from pytest_rocm.table.model import build_table

DATA = Path(__file__).parents[1] / "data" / "report"


def _with_error(report: dict[str, Any], value: Any) -> dict[str, Any]:
    """A copy whose first parity record's normwise error is ``value`` (a float or "nan"/"inf")."""
    new = copy.deepcopy(report)
    new["label"] = "candidate"
    record = next(r for r in new["results"] if r["parity"])
    record["parity"][0]["normwise"] = value
    return new


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", math.nan, math.inf])
def test_an_error_that_became_non_finite_has_grown(value: Any, tmp_path: Path) -> None:
    base = load_report(DATA / "gfx942.json")
    diff = compare(base, _with_error(base, value))
    assert len(diff.grown_errors) == 1 and not math.isfinite(diff.grown_errors[0].candidate)
    assert verdict(diff, fail_on_grown_errors=True) == 1
    write_json(tmp_path / "c.json", _with_error(base, value if isinstance(value, str) else str(value)))
    assert cli.main(["diff", "--fail-on-grown-errors", str(DATA / "gfx942.json"), str(tmp_path / "c.json")]) == 1


def test_nan_among_several_records_of_one_dtype_is_not_lost() -> None:
    """``max(x, nan)`` is x: the worst of several errors must keep the NaN."""
    base = load_report(DATA / "gfx942.json")
    candidate = _with_error(base, 1e-4)
    record = next(r for r in candidate["results"] if r["parity"])
    record["parity"].append({**record["parity"][0], "normwise": "nan"})
    assert len(compare(base, candidate).grown_errors) == 1


def _nan_second(base: dict[str, Any], *, split: bool) -> dict[str, Any]:
    """A candidate whose first parity feature has errors [1e-4, nan] in one dtype: two parity
    records of one result, or (``split``) two results of the feature, one record each."""
    candidate = _with_error(base, 1e-4)
    record = next(r for r in candidate["results"] if r["parity"])
    second = {**record["parity"][0], "normwise": "nan", "normwise_tol": 5e-3}
    if split:
        candidate["results"].append({**record, "nodeid": record["nodeid"] + "_again", "parity": [second]})
    else:
        record["parity"].append(second)
    return candidate


@pytest.mark.parametrize("split", [False, True], ids=["records-of-one-result", "results-of-one-feature"])
def test_the_table_keeps_a_nan_that_comes_second_and_agrees_with_diff(split: bool) -> None:
    """``max(1e-4, nan)`` is 1e-4: the table's worst error must be the NaN, marked as grown like
    ``diff`` counts it, with the NaN record's tolerance beside it. (Two results of one feature
    are matched by node id in ``diff``, so the NaN one is "added" there: only the table merges.)"""
    base = load_report(DATA / "gfx942.json")
    candidate = _nan_second(base, split=split)
    feature = next(r for r in candidate["results"] if r["parity"])["feature"]
    if not split:
        assert len(compare(base, candidate).grown_errors) == 1
    table = build_table([base, candidate])
    (row,) = [r for r in table.rows if r.feature == feature]
    cell = row.cells["candidate"]
    assert cell is not None and math.isnan(cell.errors["float16"])
    assert cell.figure().startswith("fp16 nan (tol 5.0e-03)")
    (grouped,) = [r for r in feature_rows(table) if r.feature == split_dtype(feature)[0]]
    assert grouped.growth == {("candidate", "float16"): math.inf}


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        (1e-3, math.nan, True),
        (1e-3, math.inf, True),
        (1e-3, 2e-3, False),
        (1e-3, 1.1e-2, True),
        (math.nan, math.nan, False),  # already broken: nowhere to grow
        (math.inf, math.nan, False),
        (math.nan, 1e-3, False),
        (0.0, 5e-6, False),  # below factor x floor
    ],
)
def test_grew(before: float, after: float, expected: bool) -> None:
    assert grew(before, after, 10.0, 1e-6) is expected
