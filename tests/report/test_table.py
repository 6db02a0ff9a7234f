"""rocm-compat table: merging, statuses, md/csv/html, bad input; the HTML in headless Chromium."""

from __future__ import annotations

import csv
import io
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pytest_rocm import cli
from pytest_rocm.report.load import load_reports
from pytest_rocm.report.records import assemble
from pytest_rocm.table.html import chart_svg, render_html
from pytest_rocm.table.markdown import render_markdown
from pytest_rocm.table.model import Cell, build_table, render_csv, row_status

DATA = Path(__file__).parents[1] / "data" / "report"
GFX1100, GFX942 = DATA / "gfx1100.json", DATA / "gfx942.json"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def table_of(*paths: Path):
    return build_table(load_reports(paths), [str(p) for p in paths])


@pytest.mark.parametrize(
    ("outcomes", "status"),
    [
        (["passed", "xpassed"], "works everywhere"),
        (["passed", "failed"], "regressed"),  # passed in the first column, failed in a later one
        (["failed", "passed"], "fixed"),
        (["passed", "passed", "crashed"], "regressed"),
        (["error", "passed", "xpassed"], "fixed"),
        (["failed", "passed", "failed"], "partial"),  # fixed in one, not in the other
        (["failed", "skipped"], "broken"),
        (["skipped", "passed", "failed"], "partial"),  # no first column to compare with
        (["passed", "failed", None], "regressed"),
        # diff's judgement: passed -> skipped and passed -> absent (its module stopped importing)
        # are regressions, so the row is regressed, not "partial"
        (["passed", "skipped"], "regressed"),
        (["passed", None], "regressed"),
        (["failed", "crashed", "xfailed"], "broken"),
        (["xfailed", "xfailed"], "expected failure"),  # a known failure: not "broken"
        (["xfailed", "skipped"], "expected failure"),
        (["xfailed", "failed"], "regressed"),  # green for pytest, red now
        (["xfailed", "passed"], "fixed"),
        (["passed", "xfailed"], "regressed"),
        (["failed", "xfailed"], "broken"),
        (["timeout", "skipped"], "broken"),
        (["skipped", "not-installed", None], "untested"),
    ],
)
def test_row_status(outcomes: list[str | None], status: str) -> None:
    assert row_status([Cell(o) if o else None for o in outcomes]) == status


def test_rows_grouped_by_suite_with_worst_error_per_dtype() -> None:
    table = table_of(GFX1100, GFX942)
    assert table.labels == ["rocm torch2.6.0 rocm6.2.4 gfx1100", "rocm torch2.6.0 rocm6.2.4 gfx942"]
    suites = [r.suite for r in table.rows]
    assert suites == sorted(suites, key=["operators", "libraries", "models"].index)
    rows = {r.feature: r for r in table.rows}
    conv = rows["operators/conv2d[bfloat16]"]
    assert [c.outcome for c in conv.cells.values()] == ["failed", "passed"] and conv.status == "fixed"
    assert conv.cells[table.labels[0]].errors == {"bfloat16": pytest.approx(0.4)}
    assert rows["libraries/int8_matmul"].cells[table.labels[1]].outcome == "crashed"
    assert rows["operators/matmul[float16]"].status == "works everywhere"


def test_one_feature_tested_twice_shows_the_worst() -> None:
    records = [
        {
            "nodeid": "suites/operators/test_a.py::test_x",
            "feature": "op",
            "outcome": "passed",
            "parity": [{"dtype": "float16", "normwise": 1e-4}],
        },
        {
            "nodeid": "suites/operators/test_b.py::test_x",
            "feature": "op",
            "outcome": "failed",
            "reason": "bad",
            "parity": [{"dtype": "float16", "normwise": 3e-2}],
        },
    ]
    for record in records:
        record["suite"] = "operators"
    cell = build_table([assemble("L", {}, records)]).rows[0].cells["L"]
    assert (cell.outcome, cell.reason, cell.errors) == ("failed", "bad", {"float16": 3e-2})


def test_a_known_issue_row_names_its_report_in_every_format() -> None:
    issue = {
        "url": "https://github.com/pytorch/pytorch/issues/189849",
        "seen_on": {"gfx": "gfx1151", "torch": "2.14.0a0"},
        "fixed_in": None,
    }
    records = [
        {
            "nodeid": "suites/known_issues/test_k.py::test_k[a]",
            "feature": "known_issues/sdpa[bf16]",
            "suite": "known_issues",
            "outcome": "failed",
            "reason": "wrong",
            "info": {"issue": issue},
        },
        {
            "nodeid": "suites/operators/test_a.py::test_x",
            "feature": "operators/x",
            "suite": "operators",
            "outcome": "passed",
        },
    ]
    table = build_table([assemble("L", {}, records)])
    row = next(r for r in table.rows if r.suite == "known_issues")
    text = "pytorch/pytorch#189849; seen on gfx gfx1151, torch 2.14.0a0; fixed in not stated"
    assert row.issue_text() == text
    assert f"[{text}](https://github.com/pytorch/pytorch/issues/189849)" in render_markdown(table)
    lines = list(csv.reader(io.StringIO(render_csv(table))))
    assert lines[0][-3:] == ["issue url", "seen on", "fixed in"]
    by_feature = {line[1]: line for line in lines[1:]}
    assert by_feature["known_issues/sdpa[bf16]"][-3:] == [issue["url"], "gfx gfx1151, torch 2.14.0a0", ""]
    assert by_feature["operators/x"][-3:] == ["", "", ""]
    assert 'href="https://github.com/pytorch/pytorch/issues/189849"' in render_html(table)


def test_markdown_and_csv(capsys: pytest.CaptureFixture[str]) -> None:
    md = render_markdown(table_of(GFX1100, GFX942))
    assert "8× AMD Instinct MI300X (gfx942:sramecc+:xnack-)" in md
    # the summary first, then the rows that differ, the failures, and every row per suite
    assert md.index("## Summary") < md.index("## Differences between columns (4)") < md.index("## All results")
    assert md.index("## All results") < md.index("<details><summary>operators")
    # the one row that fails in neither column is an xfailed one: a known failure, not a failure
    assert "## Failures" not in md and "1 expected failure" in md
    assert (
        md.index("<details><summary>operators")
        < md.index("<details><summary>libraries")
        < md.index("<details><summary>models")
    )
    # passed, xfailed (its own column: counted as neither passed nor failed), failed, crashed...
    assert "| operators | rocm torch2.6.0 rocm6.2.4 gfx1100 | 7 | 1 | 1 | 0 | 0 | 0 |" in md
    assert "| models | rocm torch2.6.0 rocm6.2.4 gfx942 | 0 | 0 | 0 | 1 | 0 | 0 |" in md
    # one row per feature, the dtypes as sub-columns; reasons and tolerances in the cell
    assert (
        "| operators/conv2d | passed · fp16 6.0e-04 (rtol 1.0e-03) | failed: bf16 4.0e-01 (rtol 1.6e-02), criterion not recorded [note 1](#note-1)"
        " | passed · fp16 7.2e-04 (rtol 1.0e-03) | passed · bf16 3.5e-03 (rtol 1.6e-02) | fixed |"
    ) in md
    # the note has the whole reason and every figure, escaped
    note = md[md.index('<a id="note-1"></a>') :]
    assert note.startswith(
        '<a id="note-1"></a>**note 1**: `operators/conv2d bf16` in rocm torch2.6.0 rocm6.2.4 gfx1100: failed\n\n'
        "<pre>bf16 4.0e-01 (rtol 1.6e-02), criterion not recorded\nRuntimeError: miopenStatusUnknownError\n"
        "bf16 4.0e-01 (rtol 1.6e-02)</pre>"
    )
    assert "| feature | rocm torch2.6.0 rocm6.2.4 gfx1100 fp16 | rocm torch2.6.0 rocm6.2.4 gfx1100 bf16 |" in md
    assert "timeout: over 900.0s [note" in md  # one line in the cell, the whole reason in its note
    assert "<pre>Timeout (&gt;900.0s) from pytest-timeout</pre>" in md
    assert "`tol` is the normwise tolerance" in md  # the legend
    assert cli.main(["table", str(GFX1100), str(GFX942), "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    crashed = next(r for r in rows if r["feature"] == "libraries/int8_matmul")
    assert crashed["rocm torch2.6.0 rocm6.2.4 gfx942"] == "crashed"
    assert crashed["rocm torch2.6.0 rocm6.2.4 gfx942 reason"].startswith("worker 'gw3' crashed")


def _records(*cells: tuple[str, str, float, float | None]) -> list[dict[str, object]]:
    """(feature, outcome, bf16 normwise error, its normwise_tol) -> operator records."""
    return [
        {
            "nodeid": f"suites/operators/test_x.py::test_{i}",
            "feature": feature,
            "suite": "operators",
            "outcome": outcome,
            "reason": None if outcome == "passed" else "RuntimeError: wrong",
            "parity": [{"dtype": "bfloat16", "normwise": error, "normwise_tol": tol, "rtol": 1.6e-2}],
        }
        for i, (feature, outcome, error, tol) in enumerate(cells)
    ]


def test_a_grown_error_is_marked_and_makes_the_row_differ() -> None:
    """Issue 20: an error that grew 50x between two columns still read "works everywhere"."""
    base = assemble("old", {}, _records(("operators/mm[bfloat16]", "passed", 1e-4, 8e-3)))
    same = assemble("same", {}, _records(("operators/mm[bfloat16]", "passed", 2e-4, 8e-3)))
    worse = assemble("new", {}, _records(("operators/mm[bfloat16]", "passed", 5e-3, 8e-3)))
    md = render_markdown(build_table([base, worse]))
    assert "## Differences between columns (1)" in md
    assert (
        "| operators/mm | passed · bf16 1.0e-04 (tol 8.0e-03) | passed · bf16 5.0e-03 (tol 8.0e-03) · error grew 50x vs old"
        " | works everywhere, error grew 50x |"
    ) in md
    assert "&#9650; error grew 50x vs old" in render_html(build_table([base, worse]))
    calm = render_markdown(build_table([base, same]))  # 2x is noise, not growth
    assert "## Differences" not in calm and "x vs old" not in calm


def test_the_perf_figure_and_chart_are_on_the_page_where_rows_measured_speed() -> None:
    perf = {"median_s": 0.002, "spread": 0.05, "reps": 9, "throughput": 1000.0, "unit": "GFLOP/s"}
    records = _records(("operators/mm[bfloat16]", "passed", 1e-4, 8e-3))
    records[0]["perf"] = perf
    table = build_table([assemble("gpu", {}, records)])
    html = render_html(table)
    assert "<section id=perf-chart><svg" in html and html.index("id=perf-chart") < html.index("id=all-rows")
    assert "1 TFLOP/s" in render_markdown(table)  # the cell's perf figure (report/perf.py)
    assert "id=perf-chart" not in render_html(table_of(GFX1100))  # nothing measured: no chart


def test_a_cpu_column_gets_the_baseline_banner() -> None:
    cpu = assemble("cpu torch2.13.0", {"backend": "cpu"}, _records(("operators/mm[bfloat16]", "passed", 1e-4, None)))
    cpu["device"] = "cpu"
    gpu = assemble("gpu", {"backend": "rocm"}, _records(("operators/mm[bfloat16]", "passed", 1e-4, None)))
    gpu["device"] = "cuda:0"
    table = build_table([cpu, gpu])
    assert render_markdown(table).count("> **CPU reference baseline**: `cpu torch2.13.0`") == 1
    html = render_html(table)
    assert html.count("class=banner") == 1 and 'data-label="cpu torch2.13.0"' in html


def test_output_format_follows_the_file_suffix(tmp_path: Path) -> None:
    assert cli.main(["table", str(GFX1100), "-o", str(tmp_path / "t.html")]) == 0
    assert (tmp_path / "t.html").read_text().startswith("<!doctype html>")
    assert cli.main(["table", str(GFX1100), "-o", str(tmp_path / "t.md")]) == 0
    assert (tmp_path / "t.md").read_text().startswith("# Compatibility table")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["missing.json"], r"missing\.json: no such file$"),
        (["trunc.json"], r"trunc\.json: truncated JSON"),
        (["other.json"], r"other\.json: schema is 'pytest-rocm/report/0'"),
        (["text.json"], r"text\.json: not valid JSON"),
        ([str(GFX1100), str(GFX1100)], r"gfx1100\.json: label .* is also the label of .*gfx1100\.json"),
        ([str(GFX1100), "-o", "no/such/dir/t.md"], r"no/such/dir/t\.md: cannot write \(No such file or directory\)"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], args: list[str], expected: str
) -> None:
    monkeypatch.chdir(tmp_path)
    good = GFX1100.read_text()
    (tmp_path / "trunc.json").write_text(good[: len(good) // 2])
    (tmp_path / "other.json").write_text(good.replace("pytest-rocm/report/1", "pytest-rocm/report/0"))
    (tmp_path / "text.json").write_text("label,outcome\n")
    assert cli.main(["table", *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rocm-compat table: ")
    assert re.search(expected, lines[0]), lines[0]


def test_html_is_self_contained_and_readable_without_a_browser() -> None:
    html = render_html(table_of(GFX1100, GFX942))
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)  # nothing fetched from a network
    assert "<script src" not in html and "<link" not in html
    # one line in the cell; the whole reason behind a click
    # a record that does not say which criterion failed is not given one (issue 56.4)
    assert "<summary class=line>failed: bf16 4.0e-01 (rtol 1.6e-02), criterion not recorded</summary>" in html
    assert (
        "<pre class=full>bf16 4.0e-01 (rtol 1.6e-02), criterion not recorded\nRuntimeError: miopenStatusUnknownError</pre>"
        in html
    )
    assert html.count("<svg") == 2  # one fp16-vs-bf16 chart per column
    # the summary, then what differs, then the charts (the first column's open), then every row in a
    # collapsed section per suite
    assert html.index("id=summary") < html.index("id=differences") < html.index("id=charts") < html.index("id=all-rows")
    assert html.count("<details open>") == 1 and "<details open" not in html[html.index("id=all-rows") :]


def test_chart_bars_are_log_scaled_and_labels_fit() -> None:
    name = "operators/scaled_dot_product_attention"
    svg = chart_svg({name: {"float16": 1e-4, "bfloat16": 1e-2}}, "t")
    left, widths = (
        re.findall(r'<rect x="(\d+)" y="\d+" width="([\d.]+)" height="9"', svg)[0][0],
        [float(w) for _, w in re.findall(r'<rect x="(\d+)" y="\d+" width="([\d.]+)" height="9"', svg)],
    )
    assert len(widths) == 2 and widths[1] > widths[0] > 0
    # 1e-4 sits at the left axis, 1e-2 at the right end of the log axis (two decades)
    assert widths[0] == pytest.approx(1.0) and widths[1] == pytest.approx(440.0)
    # the label ends at the axis and starts inside the picture (12 px text, ~7 px a character)
    assert int(left) - 6 - len(name) * 7.2 >= 0


def _chromium(url: str, tmp_path: Path, *extra: str) -> str:
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'profile'}",
        *extra,
        url,
    ]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=90, env={**os.environ, "HOME": str(tmp_path)}
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_html_in_headless_chromium_shows_rows_and_filters_them(tmp_path: Path) -> None:
    page = tmp_path / "table.html"
    assert cli.main(["table", str(GFX1100), str(GFX942), "-o", str(page)]) == 0
    dom = _chromium(page.as_uri(), tmp_path, "--dump-dom")
    # the script ran (it writes the count); every feature row is there, its suite folded away
    assert "9 of 9 rows shown" in dom
    all_rows = dom[dom.index('id="all-rows"') :]
    assert len(re.findall(r'<tr class="row"', all_rows)) == 9 and "<details open" not in all_rows
    # a filter on an outcome hides the rows without it, and opens the suites where it found some
    dom = _chromium(page.as_uri() + "#outcome=crashed,timeout", tmp_path, "--dump-dom")
    assert "2 of 9 rows shown" in dom
    all_rows = dom[dom.index('id="all-rows"') :]
    visible = re.findall(r'<tr class="row" data-suite="\w+" data-outcomes="[^"]*"><td>([^<]+)</td>', all_rows)
    assert visible == ["libraries/int8_matmul", "models/generate"]
    assert re.search(r'<details data-suite="operators" class="hidden">', all_rows)
    assert re.search(r'<details data-suite="libraries" open="">', all_rows)
    dom = _chromium(page.as_uri() + "#suite=libraries", tmp_path, "--dump-dom")
    assert "3 of 9 rows shown" in dom
    shot = tmp_path / "shot.png"
    _chromium(page.as_uri(), tmp_path, f"--screenshot={shot}", "--window-size=1400,1600")
    assert shot.stat().st_size > 10_000  # a rendered page, not a blank one


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_the_summary_numbers_in_the_browser_are_the_reports_counts(tmp_path: Path) -> None:
    """Reads the summary table from the DOM chromium built and counts the same from the reports'
    JSON, result by result: a summary that miscounts (or a page that renders none) fails."""
    page = tmp_path / "table.html"
    assert cli.main(["table", str(GFX1100), str(GFX942), "-o", str(page)]) == 0
    dom = _chromium(page.as_uri(), tmp_path, "--dump-dom")
    shown: dict[tuple[str, str], dict[str, int]] = {}
    for suite, label, cells in re.findall(r'<tr data-suite="(\w*)" data-label="([^"]+)">(.*?)</tr>', dom):
        shown[(suite, label)] = {name: int(n) for name, n in re.findall(r'class="n n-([\w-]+)[^"]*">(\d+)</td>', cells)}
    groups = {
        "passed": ("passed", "xpassed"),
        "xfailed": ("xfailed",),  # its own column: a known failure, counted as neither passed nor failed
        "failed": ("failed", "error"),
        "crashed": ("crashed", "timeout"),
    }
    groups |= {"not-installed": ("not-installed",), "skipped": ("skipped", "not-run")}
    expected: dict[tuple[str, str], dict[str, int]] = {}
    for report in load_reports([GFX1100, GFX942]):
        for record in report["results"]:
            counts = expected.setdefault((record["suite"], report["label"]), dict.fromkeys(groups, 0))
            counts[next(name for name, outs in groups.items() if record["outcome"] in outs)] += 1
    assert shown == expected
    assert shown[("operators", "rocm torch2.6.0 rocm6.2.4 gfx1100")]["failed"] == 1
    assert shown[("operators", "rocm torch2.6.0 rocm6.2.4 gfx1100")]["xfailed"] == 1
    assert re.search(r'<b id="differ-count">4</b> differ between columns', dom)
