"""Reports are shared, so what is in them is hostile until escaped: a ``javascript:`` known-issue
URL, markup in features and reasons, a URL with a newline or a pipe, CSV cells a spreadsheet
would run as formulas, escape sequences for the terminal, a label with control characters.

Built on the recorded gfx1100 report (``tests/data/report/gfx1100.json``), with hostile values
put into its records."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pytest_rocm import cli
from pytest_rocm.report.escape import csv_cell, markdown_cell, terminal, web_url
from pytest_rocm.report.load import load_reports
from pytest_rocm.table.markdown import render_markdown
from pytest_rocm.table.model import build_table, render_csv

DATA = Path(__file__).parents[1] / "data" / "report"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")

JS_URL = "javascript:document.title='PWNED-link'"
IMG = "<img src=x onerror=\"document.title='PWNED-img'\">"
SCRIPT = "<script>document.title='PWNED-script'</script>"
ESC = "\x1b[2J\x1b]0;PWNED-title\x07"  # clear the screen, set the terminal's title


def hostile_report(tmp_path: Path, name: str = "hostile.json", **changes: Any) -> Path:
    doc = json.loads((DATA / "gfx1100.json").read_text())
    results = doc["results"]
    results[0]["info"] = {"issue": {"url": JS_URL, "seen_on": {"torch": "2.6"}, "fixed_in": None}}
    results[1]["feature"] = f"operators/softmax{IMG}"
    results[1]["info"] = {"issue": {"url": "https://x.org/a|b (c)", "seen_on": "x", "fixed_in": None}}
    results[2]["outcome"], results[2]["reason"] = "failed", f"boom {SCRIPT} {ESC}"
    results[3]["feature"] = '=HYPERLINK("http://evil","x")'
    results[4]["feature"] = "@SUM(1+1)"
    results[5]["outcome"], results[5]["reason"] = "failed", "+cmd|' /C calc'!A0"
    results[6]["outcome"], results[6]["reason"] = "failed", "\tTAB"
    results[7]["outcome"], results[7]["reason"] = "failed", "-2+3"
    results[8]["info"] = {"issue": {"url": "https://x.org/a\n| evil | row |", "seen_on": "x", "fixed_in": None}}
    doc.update(changes)
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def test_only_http_urls_are_links() -> None:
    assert web_url("https://github.com/pytorch/pytorch/issues/1") is not None
    assert web_url("HTTP://example.org/") is not None
    for bad in (JS_URL, " javascript:x", "JavaScript:x", "data:text/html,x", "vbscript:x", "//evil", "https://a\nb"):
        assert web_url(bad) is None, bad


def test_html_makes_no_javascript_link_and_escapes_markup(tmp_path: Path) -> None:
    page = tmp_path / "t.html"
    assert cli.main(["table", str(hostile_report(tmp_path)), "-o", str(page)]) == 0
    html = page.read_text()
    assert 'href="javascript:' not in html.lower() and "<img src=x" not in html and "<script>document" not in html
    assert "not an http(s) link" in html


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_no_payload_runs_in_chromium_not_even_when_every_link_is_clicked(tmp_path: Path) -> None:
    """Each payload sets ``document.title``; the page is loaded, every link that is not http(s) is
    clicked (a ``javascript:`` link runs when clicked), and the title read back."""
    page = tmp_path / "t.html"
    assert cli.main(["table", str(hostile_report(tmp_path)), "-o", str(page)]) == 0
    clicker = (
        "<script>window.addEventListener('load', () => { let n = 0;"
        " for (const a of document.querySelectorAll('a')) {"
        "  if (!/^https?:$/.test(a.protocol)) { a.click(); n++; } }"
        " document.body.setAttribute('data-clicked', String(n)); });</script>"
    )
    page.write_text(page.read_text().replace("</body>", clicker + "</body>"))
    command = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
    command += ["--no-first-run", f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=3000"]
    done = subprocess.run(
        [*command, "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=90,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    dom = done.stdout
    title = re.search(r"<title>(.*?)</title>", dom, re.S)
    assert title is not None and "PWNED" not in title.group(1), title.group(1) if title else dom[:500]
    assert 'data-clicked="0"' in dom, dom[-500:]  # the clicker ran, and found no link to click
    assert "rows shown" in dom  # the page's own script ran: scripts were on


def test_markdown_escapes_html_and_keeps_one_row_per_feature(tmp_path: Path) -> None:
    table = build_table(load_reports([hostile_report(tmp_path)]))
    md = render_markdown(table)
    assert "<img" not in md and "<script" not in md and "&lt;img src=x" in md
    assert "](javascript" not in md
    # every table line has as many cells as its header: the newline and pipes of the URL stay inside
    for block in re.findall(r"(\| feature \|.*?)(?:\n\n|\Z)", md, re.S):
        lines = block.splitlines()
        widths = {len(re.findall(r"(?<!\\)\|", line)) for line in lines}
        assert len(widths) == 1, lines
    assert "](https://x.org/a%7Cb%20%28c%29)" in md  # a link's pipe, space and brackets encoded
    assert "evil \\| row" in md and "](https://x.org/a\n" not in md  # a URL with a newline: no link


def test_markdown_cell_rules() -> None:
    assert markdown_cell("a|b\nc<d>&") == "a\\|b c&lt;d>&amp;"
    assert markdown_cell("x\x1b[2Jy") == "x\\x1b[2Jy"


def test_csv_cells_are_never_formulas(tmp_path: Path) -> None:
    table = build_table(load_reports([hostile_report(tmp_path)]))
    rows = list(csv.reader(io.StringIO(render_csv(table))))
    cells = [c for row in rows for c in row]
    assert cells and not [c for c in cells if c[:1] in ("=", "+", "-", "@", "\t", "\r")]
    assert '\'=HYPERLINK("http://evil","x")' in cells and "'@SUM(1+1)" in cells
    assert "'+cmd|' /C calc'!A0" in cells and "'\tTAB" in cells and "'-2+3" in cells
    assert csv_cell("-1.5") == "-1.5" and csv_cell(-3) == -3  # numbers stay numbers


def test_terminal_output_of_table_and_diff_has_no_escape_sequences(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hostile = hostile_report(tmp_path)
    assert cli.main(["table", str(hostile)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\\x1b[2J" in out
    base = tmp_path / "base.json"
    base.write_text((DATA / "gfx1100.json").read_text().replace('gfx1100"', 'gfx1100 base"', 1))
    cli.main(["diff", str(base), str(hostile)])
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\\x1b[2J" in out


def test_terminal_rule() -> None:
    assert terminal("ok\n\tline") == "ok\n\tline"
    assert terminal("\x1b]0;t\x07\x9b\u202e") == "\\x1b]0;t\\x07\\x9b\\u202e"


@pytest.mark.parametrize("label", ["evil\x1b[2Jlabel", "two\nlines", "tab\there"])
def test_a_report_label_with_control_characters_is_refused_on_load(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], label: str
) -> None:
    path = hostile_report(tmp_path, label=label)
    assert cli.main(["table", str(path)]) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and "control characters" in lines[0], err
    assert "\x1b" not in err and "\n" not in err.strip()


def test_the_same_label_rule_as_the_option(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_x="def test_a(): pass\n")
    result = pytester.runpytest("--rocm-label=a\x1bb", "--rocm-report=r.json", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "control characters" in "\n".join(result.errlines)
