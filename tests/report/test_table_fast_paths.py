"""The table's fast paths for the common case, each held to the general rule it skips: a fast
path that answered differently would change what a table or a diff says."""

from __future__ import annotations

import gc
import math
from pathlib import Path
from typing import Any

import pytest

from pytest_rocm import cli
from pytest_rocm.parity.reading import read_parity
from pytest_rocm.report.growth import grew, grown_errors, parity_figures
from pytest_rocm.report.load import metric
from pytest_rocm.table.grid import combined_status
from pytest_rocm.table.html import op_errors
from pytest_rocm.table.model import STATUSES, Cell, Row, Status, Table, _merge, bad_counts, row_status
from pytest_rocm.table.oneline import worst_failing

EDGE_ERRORS = [0.0, 1e-7, 1e-6, 9.99e-6, 1e-5, 1.1e-5, 1e-3, 1e-2, 1.1e-2, -1.0, math.inf, -math.inf, math.nan]


@pytest.mark.parametrize("after_value", EDGE_ERRORS)
def test_grown_errors_reports_exactly_what_grew_calls_grown(after_value: float) -> None:
    # every comparison goes through grew(): nothing it calls grown is hidden (-inf, NaN, a value
    # just past the bound), nothing else reported
    before = {("float16", str(i)): b for i, b in enumerate(EDGE_ERRORS)}
    after = dict.fromkeys(before, after_value)
    found = {(g.dtype, g.name) for g in grown_errors("f", before, after, 10.0, 1e-6)}
    assert found == {key for key, b in before.items() if grew(b, after_value, 10.0, 1e-6)}


@pytest.mark.parametrize("status", STATUSES)
def test_a_feature_of_one_row_has_that_rows_status(status: Status) -> None:
    # feature_rows gives a feature of one dtype row its row's status without combined_status
    assert combined_status([status]) == status


@pytest.mark.parametrize("parity", [[], None, "absent"])
@pytest.mark.parametrize("perf", [None, {"median_s": 0.1, "reps": 3}])
def test_a_record_without_parity_merges_into_the_general_cell(parity: Any, perf: Any) -> None:
    # _merge skips the parity helpers where a record has no parity records: the same cell
    record: dict[str, Any] = {"nodeid": "t", "feature": "f", "outcome": "skipped", "reason": "r", "perf": perf}
    if parity != "absent":
        record["parity"] = parity
    errors, tolerances, named = parity_figures([])
    general = Cell("skipped", "r", errors, bad_counts([]), perf, tolerances, named, worst_failing([]))
    assert _merge(None, record) == general  # type: ignore[arg-type]


FIGURES: list[Any] = [1e-3, 0.0, 2, True, "nan", "inf", "abc", None, math.nan, math.inf]


@pytest.mark.parametrize("normwise", FIGURES)
@pytest.mark.parametrize("rtol", [1e-3, 1, True, "1e-3", None])
def test_parity_figures_reads_a_record_as_the_one_reader_does(normwise: Any, rtol: Any) -> None:
    # parity_figures takes a float figure as it stands, without a call: any other value must still
    # come out as parity.reading (the one reader) reads it (repr: NaN compares unequal)
    record = {"dtype": "float16", "normwise": normwise, "max_rel": 5e-2, "rtol": rtol, "normwise_tol": 2e-3}
    reading = read_parity(record)
    value, tol = reading.error, reading.tolerance
    assert metric(record) is value or repr(metric(record)) == repr(value)
    errors, tolerances, named = parity_figures([record])  # type: ignore[list-item]
    assert repr(errors) == repr({"float16": value} if value is not None else {})
    assert repr(named) == repr({("float16", None): value} if value is not None else {})
    assert repr(tolerances) == repr({"float16": tol} if value is not None and tol is not None else {})


def test_a_row_works_everywhere_only_where_every_column_passed() -> None:
    # row_status answers "works everywhere" before its general rule when every cell passed
    assert row_status([]) == "untested"
    for outcomes in (["passed"], ["xpassed", "passed"], ["passed", "passed", "xpassed"]):
        assert row_status([Cell(o) for o in outcomes]) == "works everywhere"
    assert row_status([Cell("passed"), None]) == "regressed"  # as diff: passed -> missing
    assert row_status([Cell("passed"), Cell("skipped")]) == "regressed"


def test_op_errors_keeps_the_worst_figure_and_nan_is_the_worst() -> None:
    # per operation the chart shows the worst error, NaN worse than any number (as the cells rank
    # it): in whatever order the rows come, a NaN anywhere is what the chart shows
    values = [1e-3, math.nan, 2e-3, 5e-4, math.inf, math.nan]
    for with_nan in (values, [v for v in values if v == v]):
        for start in range(len(with_nan)):
            order = with_nan[start:] + with_nan[:start]
            rows = [
                Row(
                    "operators",
                    f"operators/op[float16-{i}]",
                    {"a": Cell("passed", None, {"float16": v})},
                    "works everywhere",
                )
                for i, v in enumerate(order)
            ]
            expected = math.nan if any(v != v for v in order) else max(order)
            assert repr(op_errors(Table(["a"], {}, rows), "a")) == repr({"operators/op": {"float16": expected}})


@pytest.mark.parametrize("command", ["table", "diff"])
def test_the_collector_is_paused_while_reports_load_and_back_on_after(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `table` and `diff` keep the cyclic collector off from the first report parsed to the last
    # object freed (re-enabled after each step, it walked every object that step had made)
    from pytest_rocm.cli import diff as diff_cli
    from pytest_rocm.cli import table as table_cli
    from pytest_rocm.report import load

    module = table_cli if command == "table" else diff_cli
    seen: list[bool] = []
    real = load.load_report

    def loading(path: Any, ended: Any = None) -> Any:
        seen.append(gc.isenabled())
        return real(path, ended)

    monkeypatch.setattr(load, "load_report", loading)
    monkeypatch.setattr(module, "load_report", loading, raising=False)
    data = Path(__file__).parents[1] / "data" / "report"
    args = [command, str(data / "gfx942.json"), str(data / "gfx1100.json")]
    assert gc.isenabled()
    status = cli.main([*args, "-o", str(tmp_path / "t.html")] if command == "table" else args)
    assert status in (0, 1) and seen == [False, False] and gc.isenabled()


def test_a_cells_tolerance_text_is_written_as_its_value_each_time() -> None:
    # Cell.figure keeps each tolerance's text: 0.0 and -0.0 (one dict key), the two kinds of one
    # value and NaN must each still come out as formatted afresh, the first time and after
    from pytest_rocm.table import model as table_module

    tolerances = [("rtol", 0.0), ("rtol", -0.0), ("tol", 1e-3), ("rtol", 1e-3), ("rtol", math.nan), ("tol", 5e-324)]
    for _ in range(2):
        for tol in tolerances:
            cell = Cell("passed", None, {"float16": 1e-4}, tolerances={"float16": tol})
            assert cell.figure() == f"fp16 1.0e-04 ({tol[0]} {tol[1]:.1e})"
    for i in range(5000):  # many distinct tolerances: the kept texts stay bounded
        Cell("passed", None, {"float16": 1.0}, tolerances={"float16": ("rtol", 1.0 + i)}).figure()
    assert len(table_module._TOLERANCE_TEXT) <= 4096
