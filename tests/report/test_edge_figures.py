"""Figures at the edges of float: a parity error of 1e308, 1.7e308 or 5e-324 (the smallest
subnormal) in the HTML chart; a base ``perf.median_s`` of 0 or non-finite in the speed gate, which
is "not comparable" (shown, and failing ``--fail-on-slowdown``), never a silent pass."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, cast

import pytest

from pytest_rocm import cli
from pytest_rocm.report.diff import compare, verdict
from pytest_rocm.report.diff_text import render_text
from pytest_rocm.report.perf import slowdown_of
from pytest_rocm.report.records import ReportDocument, ResultRecord, assemble
from pytest_rocm.table.html import chart_svg, render_html
from pytest_rocm.table.markdown import render_markdown
from pytest_rocm.table.model import build_table

DATA = Path(__file__).parents[1] / "data" / "report"


@pytest.mark.parametrize(
    "values",
    [[1e308], [1.7976931348623157e308], [5e-324], [5e-324, 1.7e308], [0.0, 1e-3], [math.inf, 5e-324]],
    ids=["1e308", "max float", "min subnormal", "both ends", "zero", "inf and subnormal"],
)
def test_the_chart_draws_any_figure(values: list[float]) -> None:
    ops = {f"op{i}": {"float16": v, "bfloat16": v} for i, v in enumerate(values)}
    svg = chart_svg(ops, "errors")
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    widths = [float(w) for w in re.findall(r'<rect x="\d+" y="\d+" width="([\d.]+)"', svg)]
    assert widths and all(0 <= w <= 440 for w in widths)
    assert len(re.findall(r"<line ", svg)) <= 70  # a bounded axis, not 600 decades


def test_an_html_page_of_a_report_with_extreme_figures(tmp_path: Path) -> None:
    doc = json.loads((DATA / "gfx1100.json").read_text())
    doc["results"][0]["parity"][0].update(max_abs=1e308, max_rel=1e308, normwise=1e308)
    doc["results"][1]["parity"][0].update(max_abs=5e-324, max_rel=5e-324, normwise=5e-324)
    path = tmp_path / "edge.json"
    path.write_text(json.dumps(doc))
    page = tmp_path / "t.html"
    assert cli.main(["table", str(path), "-o", str(page)]) == 0
    assert "1.0e+308" in page.read_text()


def _report(label: str, median_s: float) -> ReportDocument:
    record: dict[str, Any] = {
        "nodeid": "suites/operators/test_perf.py::test_gemm[mm-bfloat16]",
        "feature": "operators/perf_gemm[mm-bfloat16]",
        "suite": "operators",
        "outcome": "passed",
        "reason": None,
        "perf": {"median_s": median_s, "spread": 0.05, "reps": 7},
    }
    return assemble(label, {}, [cast(ResultRecord, record)])


@pytest.mark.parametrize("base_s", [0.0, math.inf, -1.0], ids=["zero", "inf", "negative"])
def test_a_base_figure_of_zero_is_not_comparable_and_fails_the_gate(base_s: float) -> None:
    slow = slowdown_of("f", {"median_s": base_s}, {"median_s": 5.0}, 1.25)
    assert slow is not None and not slow.comparable and not slow.noisy
    diff = compare(_report("base", base_s), _report("new", 5.0), 10.0, 0.0, 1.25)
    assert verdict(diff, fail_on_slowdown=True) == 1 and verdict(diff) == 0
    text = render_text(diff, "base", "new", 10.0, 1.25)
    assert "not comparable" in text and "infx" not in text, text


def test_diff_cli_on_a_zero_base(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base, new = tmp_path / "base.json", tmp_path / "new.json"
    base.write_text(json.dumps(_report("base", 0.0)))
    new.write_text(json.dumps(_report("new", 100.0)))
    assert cli.main(["diff", str(base), str(new), "--fail-on-slowdown"]) == 1
    out = capsys.readouterr().out
    assert "not comparable" in out and "verdict: FAIL" in out


def test_the_table_shows_not_comparable() -> None:
    table = build_table([_report("base", 0.0), _report("new", 0.003)])
    md = render_markdown(table)
    assert "not comparable with base" in md and "infx" not in md and "inf x" not in md
    assert "not comparable with base" in render_html(table)


def test_a_usable_base_is_still_compared() -> None:
    slow = slowdown_of("f", {"median_s": 0.001}, {"median_s": 0.003}, 1.25)
    assert slow is not None and slow.comparable and slow.factor == pytest.approx(3.0)
    assert slowdown_of("f", {"median_s": 0.001}, {"median_s": 0.001}, 1.25) is None
    assert slowdown_of("f", {"median_s": 0.001}, {"median_s": 0.0}, 1.25) is None  # faster, not slower


def test_the_tables_one_pass_over_parity_figures_agrees_with_each_view() -> None:
    # table.parity_figures reads each record once; diff's growth reads report.growth.parity_errors:
    # the two must name the same worst errors (NaN the worst, names and dtypes apart), or the
    # table would mark a growth the gate does not see
    from pytest_rocm.report.growth import parity_errors
    from pytest_rocm.table.model import parity_figures

    parity = [
        {"dtype": "float16", "normwise": 1e-3, "normwise_tol": 2e-3, "rtol": 1e-3},
        {"dtype": "float16", "normwise": "nan", "rtol": 1e-3},
        {"dtype": "float16", "name": "grad", "max_rel": 5e-2, "rtol": 1e-2},
        {"dtype": "bfloat16", "max_rel": 4e-2, "rtol": 1.6e-2},
        {"dtype": "bfloat16", "max_rel": 1e-2, "normwise_tol": 9.0},  # not normwise: its rtol (none) counts
        {"dtype": "float32", "max_abs": 1.0},  # no figure the table reads
        "not a record",
    ]
    errors, tolerances, named = parity_figures(parity)  # type: ignore[arg-type]
    assert named == parity_errors(parity)
    assert errors.keys() == {"float16", "bfloat16"} and math.isnan(errors["float16"]) and errors["bfloat16"] == 4e-2
    assert tolerances == {"float16": ("rtol", 1e-3), "bfloat16": ("rtol", 1.6e-2)}
    assert math.isnan(named[("float16", None)]) and named[("float16", "grad")] == 5e-2
