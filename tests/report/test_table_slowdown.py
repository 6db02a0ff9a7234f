"""rocm-compat table across reports marks a measured row that ran slower than in the first column,
by diff's rule (report.perf.slowdown_of): past --max-slowdown's default and beyond the recorded
spread; a change within the spread is noise and is not marked."""

from __future__ import annotations

from typing import Any, cast

import pytest

from pytest_rocm.report.records import ReportDocument, ResultRecord, assemble
from pytest_rocm.table.grid import LEGEND, SLOWDOWN_FACTOR, feature_rows
from pytest_rocm.table.html import render_html
from pytest_rocm.table.markdown import render_markdown
from pytest_rocm.table.model import build_table


def _report(label: str, median_s: float, spread: float) -> ReportDocument:
    flops = 2 * 128**3
    perf = {
        "median_s": median_s,
        "spread": spread,
        "reps": 7,
        "work": {"flops": flops},
        "throughput": flops / median_s / 1e9,
        "unit": "GFLOP/s",
    }
    record: dict[str, Any] = {
        "nodeid": "suites/operators/test_perf.py::test_gemm[mm-bfloat16]",
        "feature": "operators/perf_gemm[mm-bfloat16]",
        "suite": "operators",
        "outcome": "passed",
        "reason": None,
        "perf": perf,
    }
    return assemble(label, {}, [cast(ResultRecord, record)])


def test_a_row_three_times_slower_is_marked_in_both_renderers() -> None:
    table = build_table([_report("old", 0.001, 0.05), _report("new", 0.003, 0.05)])
    (row,) = feature_rows(table)
    assert row.slowdown == {("new", "bfloat16"): pytest.approx(3.0)}
    assert row.status_text == "works everywhere, 3.0x slower" and row.differs(table.labels)
    md = render_markdown(table)
    assert "## Differences between columns (1)" in md
    assert "· 3.0x slower vs old |" in md and "| works everywhere, 3.0x slower |" in md
    # in the speed block, the differences and all results; never in the base
    assert md.count("x slower vs old") == 3 and md.index("## Speed") < md.index("## Differences")
    html = render_html(table)
    assert html.count("<small class=slower>&#9660; 3.0x slower vs old</small>") == 2
    assert "'slower' marks a measured row over 1.25x slower" in LEGEND and LEGEND in md


def test_a_change_within_the_recorded_spread_is_not_marked() -> None:
    # 1.4x slower is past the 1.25 threshold, but each run's repetitions already spread by 50 %
    noisy = build_table([_report("old", 0.001, 0.5), _report("new", 0.0014, 0.1)])
    assert SLOWDOWN_FACTOR < 1.4
    (row,) = feature_rows(noisy)
    assert row.slowdown == {} and not row.differs(noisy.labels)
    assert "slower vs" not in render_markdown(noisy) and "class=slower" not in render_html(noisy)
    # the same change with tight spreads is a slowdown: the spread is what made it noise
    tight = build_table([_report("old", 0.001, 0.05), _report("new", 0.0014, 0.05)])
    assert feature_rows(tight)[0].slowdown == {("new", "bfloat16"): pytest.approx(1.4)}


def test_faster_or_within_the_threshold_or_unmeasured_is_not_marked() -> None:
    for after in (_report("new", 0.0005, 0.01), _report("new", 0.0012, 0.01)):
        assert feature_rows(build_table([_report("old", 0.001, 0.01), after]))[0].slowdown == {}
    unmeasured = _report("new", 0.003, 0.01)
    del unmeasured["results"][0]["perf"]
    assert feature_rows(build_table([_report("old", 0.001, 0.01), unmeasured]))[0].slowdown == {}
    # only against the first column: the first column itself is never marked
    assert feature_rows(build_table([_report("old", 0.003, 0.01), _report("new", 0.001, 0.01)]))[0].slowdown == {}
