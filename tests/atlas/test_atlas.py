"""``rocm-compat atlas``: a fleet's reports (machines, dates) as static pages: the index by gfx x
ROCm x torch, a page per gfx and per library, each row's history, a search; in headless Chromium."""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pytest_rocm import cli
from pytest_rocm.atlas.model import Result, build_atlas, changes
from pytest_rocm.atlas.site import gfx_page, index_page
from pytest_rocm.report.fleet import machine_id

DATA = Path(__file__).parents[1] / "data" / "report"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
ROW = "operators/conv2d[bfloat16]"  # failed on the gfx1100 report, passed on the gfx942 one


def _report(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / f"{name}.json").read_text())
    return data


def _as_of(document: dict[str, Any], date: str, torch: str, rocm: str, outcome: str | None = None) -> dict[str, Any]:
    """The same machine later, on another combination: the row ROW with ``outcome``."""
    later = copy.deepcopy(document)
    later["created"] = f"{date}T10:00:00+00:00"
    later["environment"]["torch"] = f"{torch}+rocm{rocm}"
    later["environment"]["rocm"] = rocm
    gfx = later["environment"]["devices"][0]["gfx"]
    later["label"] = f"rocm torch{torch} rocm{rocm} {gfx}"
    if outcome is not None:
        for record in later["results"]:
            if record["feature"] == ROW:
                record["outcome"], record["reason"] = (
                    outcome,
                    None if outcome == "passed" else "AssertionError: bf16 conv",
                )
    return later


def fleet(folder: Path) -> Path:
    """Four runs: gfx1100 on 2.6 (ROW fails), 2.7 (ROW fixed), 2.8 (ROW broke again); gfx942 on 2.6
    with a host label. Written as a CI artefact folder would hold them (one folder per run)."""
    gfx1100, gfx942 = _report("gfx1100"), _report("gfx942")
    gfx942["machine"] = {"id": machine_id(gfx942["environment"]), "host": "frontier-n0042"}
    runs = {
        "2026-01-05/a.json": _as_of(gfx1100, "2026-01-05", "2.6.0", "6.2.4"),
        "2026-02-05/a.json": _as_of(gfx1100, "2026-02-05", "2.7.1", "6.3", "passed"),
        "2026-03-05/a.json": _as_of(gfx1100, "2026-03-05", "2.8.0", "6.4", "failed"),
        "2026-01-05/b.json": _as_of(gfx942, "2026-01-05", "2.6.0", "6.2.4"),
    }
    for name, document in runs.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(json.dumps(document))
    return folder


def test_a_rows_history_names_first_failing_fixed_and_broke_skips_change_nothing() -> None:
    results = [Result(0, "failed", None), Result(1, "skipped", None), Result(2, "passed", None)]
    results += [Result(3, "not-installed", None), Result(4, "passed", None), Result(5, "crashed", None)]
    assert [(c.kind, c.state, c.run) for c in changes(results)] == [
        ("first seen", "fail", 0),
        ("fixed", "pass", 2),
        ("broke", "fail", 5),
    ]
    assert changes([Result(0, "skipped", None)]) == []


def test_the_site_has_the_index_gfx_and_library_pages_and_each_rows_history(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reports = fleet(tmp_path / "reports")
    (reports / "notes.json").write_text('{"not": "a report"}')  # another tool's JSON: passed over
    site = tmp_path / "site"
    assert cli.main(["atlas", str(reports), "-o", str(site)]) == 0
    out = capsys.readouterr().out
    assert "4 reports, 13 rows, 2 gfx" in out
    index = (site / "index.html").read_text()
    assert "4 reports from 2 machine(s), 2026-01-05 to 2026-03-05" in index
    # gfx x ROCm x torch: the latest run of each, with how many rows passed of those judged
    assert re.search(r'<a href="gfx/gfx1100.html">gfx1100</a></th><td class="failed"[^>]*>10/12 passed', index)
    # gfx942's only failures are an xfail, a crash and a timeout: red; an xfail alone would be amber
    assert re.search(r'<a href="gfx/gfx942.html">gfx942</a></th><td class="failed"[^>]*>10/13 passed', index)
    gfx1100 = (site / "gfx" / "gfx1100.html").read_text()
    row = re.search(rf'<tr id="{re.escape(ROW)}">(.*?)</tr>', gfx1100)
    assert row is not None
    cells = re.findall(r'<td class="(\w[\w-]*)" title="([^"]*)"', row.group(1))
    # one column per combination, in order: 2.6 failed, 2.7 passed, 2.8 failed
    assert [c for c, _ in cells] == ["failed", "passed", "failed"]
    assert cells[1][1].startswith("2026-02-05, m-") and "rocm torch2.7.1 rocm6.3 gfx1100" in cells[1][1]
    history = re.search(r"<td class=hist>(.*?)</td>", row.group(1))
    assert history is not None
    text = history.group(1)
    assert text.startswith("first seen failing 2026-01-05 (rocm torch2.6.0 rocm6.2.4 on m-")
    assert "; fixed 2026-02-05 (rocm torch2.7.1 rocm6.3 on m-" in text
    assert "; broke 2026-03-05 (rocm torch2.8.0 rocm6.4 on m-" in text
    # a row that passed from its first run has nothing to tell
    assert re.search(r'<tr id="operators/matmul\[float16\]">.*?<td class=hist></td></tr>', gfx1100)
    # where: the gfx942 report named its host
    gfx942 = (site / "gfx" / "gfx942.html").read_text()
    assert "(frontier-n0042), rocm torch2.6.0 rocm6.2.4 gfx942" in gfx942
    # a page per library (libraries/<kind>/<library>/... rows) or suite, every row by gfx
    operators = (site / "library" / "operators.html").read_text()
    assert f'<tr id="{ROW}">' in operators and "gfx1100: first seen failing" in operators
    # each gfx's cell is its latest run, whatever the combination: gfx1100's is March's 2.8
    lib_row = re.search(rf'<tr id="{re.escape(ROW)}">(.*?)</tr>', operators)
    assert lib_row is not None
    titles = re.findall(r'<td class="\w+" title="([^"]*)"', lib_row.group(1))
    assert titles[0].startswith("2026-03-05, m-") and "torch2.8.0" in titles[0]
    runs = (site / "runs.html").read_text()
    assert runs.count("<tr><td>2026-") == 4 and "notes.json" not in runs
    search = (site / "search.js").read_text()
    rows = json.loads(search[search.index("=") + 1 : search.rindex(";")])
    hit = next(r for r in rows if r[0] == ROW)
    assert hit[2] == f"library/operators.html#{ROW}" and hit[3] == "failed on gfx1100; passed on gfx942"
    assert hit[4] == "gfx1100=failed gfx942=passed"


def test_an_index_cell_with_only_expected_failures_is_not_red(tmp_path: Path) -> None:
    quiet = _report("gfx1100")
    quiet["results"] = [r for r in quiet["results"] if r["outcome"] != "failed"]  # left: passes, an xfail, a skip
    html = index_page(build_atlas([("q.json", quiet)]))
    assert re.search(r'<td class="xfailed"[^>]*>10/11 passed', html)


def test_combinations_are_in_release_order_not_string_order(tmp_path: Path) -> None:
    gfx1100 = _report("gfx1100")
    runs = [_as_of(gfx1100, "2026-01-05", "2.10.0", "7.1"), _as_of(gfx1100, "2026-02-05", "2.6.0", "6.2.4")]
    runs.append(_as_of(gfx1100, "2026-03-05", "2.9.1", "6.4"))
    atlas = build_atlas([(f"r{i}.json", r) for i, r in enumerate(runs)])
    page = gfx_page(atlas, "gfx1100")
    heads = re.findall(r"<th>(rocm torch[^<]+)</th>", page)
    assert heads == ["rocm torch2.6.0 rocm6.2.4", "rocm torch2.9.1 rocm6.4", "rocm torch2.10.0 rocm7.1"]
    index = index_page(atlas)
    assert re.findall(r"<th>ROCm ([0-9.]+)<br>", index) == ["6.2.4", "6.4", "7.1"]


def test_a_killed_runs_sidecar_and_an_undated_report_are_runs_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reports = tmp_path / "reports"
    reports.mkdir()
    undated = _report("gfx1100")
    del undated["created"]
    (reports / "undated.json").write_text(json.dumps(undated))
    header = {"schema": "pytest-rocm/report-sidecar/1", "label": "killed", "created": "2026-05-01T00:00:00+00:00"}
    header["environment"] = _report("gfx942")["environment"]
    lines = [json.dumps(header)] + [json.dumps(r) for r in _report("gfx942")["results"][:3]]
    (reports / "k.json.partial.jsonl").write_text("\n".join(lines) + "\n")
    assert cli.main(["atlas", str(reports), "-o", str(tmp_path / "site")]) == 0
    assert "2 reports" in capsys.readouterr().out
    runs = (tmp_path / "site" / "runs.html").read_text()
    assert "<tr><td>undated</td><td>rocm torch2.6.0 rocm6.2.4 gfx1100</td>" in runs
    assert "<td>killed (interrupted: partial)</td><td>gfx942</td>" in runs


def test_unreadable_reports_are_named_and_the_exit_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    reports = fleet(tmp_path / "reports")
    broken = _report("gfx942")
    broken["results"][0]["outcome"] = "passd"
    (reports / "broken.json").write_text(json.dumps(broken))
    (reports / "copy").mkdir()
    shutil.copy(reports / "2026-01-05" / "b.json", reports / "copy" / "b.json")  # the same run twice: read once
    venv = reports / "venv"
    (venv / "lib").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr\n")
    (venv / "lib" / "r.json").write_text(json.dumps(broken))  # inside a venv: never looked at
    site = reports / "site"  # the site inside the reports folder (the merge job's layout)
    assert cli.main(["atlas", str(reports), "-o", str(site)]) == 1
    captured = capsys.readouterr()
    assert "4 reports" in captured.out
    assert captured.err.strip().splitlines() == [
        f"rocm-compat atlas: not read: {reports / 'broken.json'}: results[0].outcome is 'passd', expected one of"
        " 'passed', 'failed', 'error', 'skipped', 'xfailed', 'xpassed', 'not-installed', 'crashed', 'timeout', 'not-run'"
    ]
    assert "broken.json" in (site / "runs.html").read_text()
    assert "1 file(s) not read" in (site / "index.html").read_text()
    # built again over its own output: the site's files are not reports
    assert cli.main(["atlas", str(reports), "-o", str(site)]) == 1
    assert "4 reports" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: None, "no report under"),
        (lambda p: (p / "site").write_text("x"), "exists and is not a folder"),
    ],
)
def test_bad_atlas_input_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make: Any, message: str
) -> None:
    make(tmp_path)
    assert cli.main(["atlas", str(tmp_path), "-o", str(tmp_path / "site")]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert cli.main(["atlas", str(tmp_path / "absent"), "-o", str(tmp_path / "s")]) == 2


def test_values_from_reports_are_escaped_in_every_page(tmp_path: Path) -> None:
    hostile = _report("gfx1100")
    payload = '<script>document.title="PWNED"</script>'
    hostile["results"][0]["feature"] = f"operators/x{payload}"
    hostile["label"] = "lab<img src=x onerror=alert(1)>"
    hostile["machine"] = {"id": machine_id(hostile["environment"]), "host": '"><b>host</b>'}
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "h.json").write_text(json.dumps(hostile))
    assert cli.main(["atlas", str(tmp_path / "r"), "-o", str(tmp_path / "site")]) == 0
    for page in (tmp_path / "site").rglob("*.html"):
        text = page.read_text()
        assert "<script>document" not in text and "<img src=x" not in text and "<b>host" not in text, page
    search = (tmp_path / "site" / "search.js").read_text()
    assert "</script>" not in search and "<\\/script>" in search


def _chromium(url: str, tmp_path: Path, *extra: str) -> str:
    command = [CHROMIUM or "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
    command += ["--no-first-run", f"--user-data-dir={tmp_path / 'profile'}", *extra, url]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=90, env={**os.environ, "HOME": str(tmp_path)}
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_the_atlas_searches_and_filters_in_headless_chromium_from_file_urls(tmp_path: Path) -> None:
    site = tmp_path / "site"
    assert cli.main(["atlas", str(fleet(tmp_path / "reports")), "-o", str(site)]) == 0
    # the search reads search.js from a file:// page (no server, no network) and lists the rows
    dom = _chromium((site / "index.html").as_uri() + "?q=conv2d", tmp_path, "--dump-dom")
    assert "2 rows" in dom
    listed = re.findall(r'<li><a href="([^"]+)">([^<]+)</a> \(operators\) ([^<]*)</li>', dom)
    assert [(name, said) for _, name, said in listed] == [
        ("operators/conv2d[bfloat16]", "failed on gfx1100; passed on gfx942"),
        ("operators/conv2d[float16]", "passed on gfx1100 gfx942"),
    ]
    dom = _chromium((site / "index.html").as_uri() + "?q=timeout+gfx942", tmp_path, "--dump-dom")
    assert re.findall(r'<li><a href="[^"]+">([^<]+)</a>', dom) == ["models/generate[bfloat16]"]
    # an outcome on one gfx: conv2d[bfloat16] failed on gfx1100, not on gfx942
    dom = _chromium((site / "index.html").as_uri() + "?q=gfx1100%3Dfailed", tmp_path, "--dump-dom")
    assert re.findall(r'<li><a href="[^"]+">([^<]+)</a>', dom) == ["operators/conv2d[bfloat16]"]
    # a gfx page's filter hides the rows without the words
    dom = _chromium((site / "gfx" / "gfx1100.html").as_uri() + "?q=broke", tmp_path, "--dump-dom")
    assert "1 of 13 rows" in dom
    shot = tmp_path / "index.png"
    _chromium((site / "index.html").as_uri() + "?q=conv", tmp_path, f"--screenshot={shot}", "--window-size=1200,900")
    assert shot.stat().st_size > 10_000
