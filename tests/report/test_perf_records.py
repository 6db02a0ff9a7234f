"""results[*].perf in report/1: recorded from user_properties, validated, optional for old reports;
the table's figure and chart; the gate's slowdown rule."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_rocm.report.load import ReportError, load_report
from pytest_rocm.report.outcomes import PERF_PROPERTY
from pytest_rocm.report.perf import perf_figure, slowdown_of
from pytest_rocm.report.records import assemble, build_record
from pytest_rocm.table.perf_chart import perf_chart_svg, table_chart_svg

PERF = {
    "median_s": 0.002,
    "spread": 0.05,
    "reps": 9,
    "work": {"flops": 2e9},
    "throughput": 1000.0,
    "unit": "GFLOP/s",
    "peak_fraction": 0.04,
    "backend": {"blas": "hipblaslt"},
}


def _phase(when: str, props: list[tuple[str, Any]]) -> SimpleNamespace:
    return SimpleNamespace(
        when=when, passed=True, failed=False, skipped=False, longrepr=None, duration=0.1, user_properties=props
    )


def _report(tmp_path: Path, results: list[dict[str, Any]], name: str = "r.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(assemble(name, {}, results)))  # type: ignore[arg-type]
    return path


def test_the_perf_property_becomes_the_records_perf() -> None:
    props = [(PERF_PROPERTY, dict(PERF))]
    record = build_record(
        "suites/operators/test_perf.py::test_gemm[bf16]", [_phase("setup", []), _phase("call", props)]
    )
    assert record["perf"] == PERF
    plain = build_record("suites/operators/test_x.py::test_y", [_phase("call", [])])
    assert "perf" not in plain


def test_reports_without_perf_still_load_and_perf_is_validated(tmp_path: Path) -> None:
    old = {"nodeid": "a.py::t", "feature": "a/t", "outcome": "passed"}
    assert "perf" not in load_report(_report(tmp_path, [old]))["results"][0]
    good = {**old, "perf": PERF}
    assert load_report(_report(tmp_path, [good]))["results"][0]["perf"]["throughput"] == 1000.0
    for bad, field in (
        ({**PERF, "median_s": -1}, "median_s"),
        ({**PERF, "reps": 0}, "reps"),
        ({**PERF, "work": {"flops": 0}}, "flops"),
        ({k: v for k, v in PERF.items() if k != "median_s"}, "median_s"),
        ("fast", "perf"),
    ):
        with pytest.raises(ReportError, match=field):
            load_report(_report(tmp_path, [{**old, "perf": bad}]))


def test_perf_figure() -> None:
    assert perf_figure(PERF) == "1 TFLOP/s, 4 % of peak"
    assert perf_figure({**PERF, "throughput": 312.4, "peak_fraction": None}) == "312 GFLOP/s"
    assert perf_figure({"median_s": 0.0123, "reps": 3, "throughput": None, "unit": None}) == "12.3 ms"
    # a spread that would hide a 2x change, and a row cut short by its budget, say so
    assert perf_figure({**PERF, "peak_fraction": None, "spread": 1.4}) == "1 TFLOP/s, too noisy to judge (spread 1.4)"
    assert (
        perf_figure({**PERF, "peak_fraction": None, "reps": 2, "truncated": "budget"})
        == "1 TFLOP/s, 2 reps in its budget"
    )
    assert perf_figure({"median_s": 4e-5, "reps": 3}) == "40 µs"
    assert perf_figure({"median_s": 1, "throughput": 0.85, "unit": "GB/s"}) == "850 MB/s"
    assert perf_figure(None) == "" and perf_figure({}) == ""


def test_slowdown_beyond_the_threshold_and_the_noise() -> None:
    slower = {**PERF, "median_s": 0.006, "throughput": 1000.0 / 3}
    found = slowdown_of("operators/gemm", PERF, slower, 1.25)
    assert found is not None and found.factor == pytest.approx(3.0) and not found.noisy
    # within the threshold: nothing; a faster candidate: nothing
    assert slowdown_of("g", PERF, {**PERF, "throughput": 900.0}, 1.25) is None
    assert slowdown_of("g", PERF, {**PERF, "throughput": 3000.0}, 1.25) is None
    # the change (1.5x) is narrower than the recorded spread (±80 %): noisy, not a slowdown
    wide = slowdown_of("g", {**PERF, "spread": 0.8}, {**PERF, "throughput": 1000 / 1.5, "spread": 0.1}, 1.25)
    assert wide is not None and wide.noisy
    # no throughput: the medians, when the work is the same
    timed = slowdown_of("g", {"median_s": 0.01, "reps": 3}, {"median_s": 0.05, "reps": 3}, 1.25)
    assert timed is not None and timed.factor == pytest.approx(5.0)
    assert slowdown_of("g", None, PERF, 1.25) is None and slowdown_of("g", PERF, None, 1.25) is None


def test_a_row_timed_on_a_busy_machine_cannot_judge_a_change() -> None:
    """Every sample of a 20 us GEMM took 25 ms on a loaded machine (torch's threads waiting for a
    core): the spread stayed small, so the gate judged scheduling. A row whose threads waited for a
    core half the time or more says so, and its change is noisy, never a slowdown nor a pass."""
    busy = {**PERF, "run_queue_share": 1.3}
    assert perf_figure({**busy, "peak_fraction": None}) == (
        "1 TFLOP/s, timed on a busy machine (waited for a core 130% of the time): cannot judge"
    )
    assert perf_figure({**PERF, "peak_fraction": None, "run_queue_share": 0.08}) == "1 TFLOP/s"
    three_times = {**PERF, "median_s": 0.006, "throughput": 1000.0 / 3}
    for base, candidate in ((busy, three_times), (PERF, {**three_times, "run_queue_share": 0.5})):
        found = slowdown_of("g", base, candidate, 1.25)
        assert found is not None and found.noisy and found.busy is not None and found.busy >= 0.5
    quiet = slowdown_of("g", {**PERF, "run_queue_share": 0.1}, {**three_times, "run_queue_share": 0.49}, 1.25)
    assert quiet is not None and not quiet.noisy and quiet.busy is None


def test_run_queue_share_is_validated(tmp_path: Path) -> None:
    old = {"nodeid": "a.py::t", "feature": "a/t", "outcome": "passed"}
    loaded = load_report(_report(tmp_path, [{**old, "perf": {**PERF, "run_queue_share": 0.2}}]))
    assert loaded["results"][0]["perf"]["run_queue_share"] == 0.2
    with pytest.raises(ReportError, match="run_queue_share"):
        load_report(_report(tmp_path, [{**old, "perf": {**PERF, "run_queue_share": -1}}]))


def test_chart_has_a_bar_per_measured_cell_relative_to_the_rows_best() -> None:
    rows = [
        ("operators/perf_gemm[bf16]", {"rocm": {**PERF, "throughput": 500.0}, "cuda": PERF, "cpu": None}),
        ("operators/unmeasured", {"rocm": None, "cuda": None, "cpu": None}),
    ]
    svg = perf_chart_svg(rows, ["rocm", "cuda", "cpu"])
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert "operators/unmeasured" not in svg and "operators/perf_gemm[bf16]" in svg
    assert 'width="360"' in svg and 'width="180"' in svg  # the best column full width, half as fast half
    assert "cpu: not measured" in svg
    assert perf_chart_svg([("x", {"a": None})], ["a"]) == ""


def test_the_table_cell_shows_the_perf_figure_next_to_the_parity_figure() -> None:
    from pytest_rocm.table.model import build_table, render_csv

    parity = [{"dtype": "bfloat16", "normwise": 3.1e-3, "max_rel": 1e-2}]
    results: list[dict[str, Any]] = [
        {
            "nodeid": "suites/operators/test_perf.py::test_perf_gemm[mm-bfloat16]",
            "feature": "operators/perf_gemm[mm]",
            "suite": "operators",
            "outcome": "passed",
            "reason": None,
            "parity": parity,
            "perf": PERF,
        },
        {
            "nodeid": "suites/operators/test_x.py::test_y",
            "feature": "operators/y",
            "suite": "operators",
            "outcome": "passed",
            "reason": None,
            "parity": [],
        },
    ]
    table = build_table([assemble("rocm", {}, results)])  # type: ignore[arg-type]
    cells = {row.feature: row.cells["rocm"] for row in table.rows}
    assert cells["operators/perf_gemm[mm]"].text() == "passed (bf16 3.1e-03 1 TFLOP/s, 4 % of peak)"  # type: ignore[union-attr]
    assert cells["operators/y"].text() == "passed"  # type: ignore[union-attr]
    assert "1 TFLOP/s, 4 % of peak" in render_csv(table)
    svg = table_chart_svg(table)
    assert "operators/perf_gemm[mm]" in svg and "operators/y" not in svg and "rocm: 1 TFLOP/s" in svg
