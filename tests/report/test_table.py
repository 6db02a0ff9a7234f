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
from pytest_rocm.report.html import chart_svg, render_html
from pytest_rocm.report.load import load_reports
from pytest_rocm.report.records import assemble
from pytest_rocm.report.table import Cell, build_table, render_csv, render_markdown, row_status

DATA = Path(__file__).parents[1] / "data" / "report"
GFX1100, GFX942 = DATA / "gfx1100.json", DATA / "gfx942.json"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def table_of(*paths: Path):
    return build_table(load_reports(paths), [str(p) for p in paths])


@pytest.mark.parametrize(
    ("outcomes", "status"),
    [
        (["passed", "xpassed"], "works everywhere"),
        (["passed", "failed"], "partial"),
        (["passed", "skipped"], "partial"),  # not shown to work in every column
        (["passed", None], "partial"),
        (["failed", "crashed", "xfailed"], "broken"),
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
    assert [c.outcome for c in conv.cells.values()] == ["failed", "passed"] and conv.status == "partial"
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
    assert "| operators/conv2d[bfloat16] | failed (bf16 4.0e-01) | passed (bf16 3.5e-03) | partial |" in md
    assert md.index("## operators") < md.index("## libraries") < md.index("## models")
    assert cli.main(["table", str(GFX1100), str(GFX942), "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    crashed = next(r for r in rows if r["feature"] == "libraries/int8_matmul")
    assert crashed["rocm torch2.6.0 rocm6.2.4 gfx942"] == "crashed"
    assert crashed["rocm torch2.6.0 rocm6.2.4 gfx942 reason"].startswith("worker 'gw3' crashed")


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
    assert 'title="RuntimeError: miopenStatusUnknownError"' in html  # the reason on hover
    assert html.count("<svg") == 2  # one fp16-vs-bf16 chart per column


def test_chart_bars_are_log_scaled() -> None:
    svg = chart_svg({"operators/matmul": {"float16": 1e-4, "bfloat16": 1e-2}}, "t")
    widths = [float(w) for w in re.findall(r'<rect x="230" y="\d+" width="([\d.]+)" height="9"', svg)]
    assert len(widths) == 2 and widths[1] > widths[0] > 0
    # 1e-4 sits at the left axis, 1e-2 at the right end of the log axis (two decades)
    assert widths[0] == pytest.approx(1.0) and widths[1] == pytest.approx(440.0)


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
    # the script ran (it writes the count) and every feature row is there and visible
    assert "13 of 13 rows shown" in dom
    assert len(re.findall(r'<tr class="row"', dom)) == 13 and 'class="row hidden"' not in dom
    # a filter on an outcome hides the rows without it, and the suite headings of empty suites
    dom = _chromium(page.as_uri() + "#outcome=crashed,timeout", tmp_path, "--dump-dom")
    assert "2 of 13 rows shown" in dom
    visible = re.findall(r'<tr class="row" data-suite="\w+" data-outcomes="[^"]*"><td>([^<]+)</td>', dom)
    assert visible == ["libraries/int8_matmul", "models/generate[bfloat16]"]
    assert re.search(r'<tr class="suite-head hidden" data-suite="operators">', dom)
    dom = _chromium(page.as_uri() + "#suite=libraries", tmp_path, "--dump-dom")
    assert "3 of 13 rows shown" in dom
    shot = tmp_path / "shot.png"
    _chromium(page.as_uri(), tmp_path, f"--screenshot={shot}", "--window-size=1200,1600")
    assert shot.stat().st_size > 10_000  # a rendered page, not a blank one
