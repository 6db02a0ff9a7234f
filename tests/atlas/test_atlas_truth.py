"""The atlas shows what was run (issue 56, point 7): an index cell names its run and prefers the
most complete one, a tool-version note only where recorded versions differ, page names that
never collide, no write through a symbolic link inside the site, and a device string it cannot
parse said in one line."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from pytest_rocm import cli
from pytest_rocm.atlas.model import build_atlas
from pytest_rocm.atlas.names import page_names
from pytest_rocm.atlas.site import index_page

DATA = Path(__file__).parents[1] / "data" / "report"


def _report(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / f"{name}.json").read_text())
    return data


def _own_project(full: dict[str, Any], date: str, passed: int, failed: int) -> dict[str, Any]:
    """A user's own project run later on the same machine and combination, default label and all."""
    small = copy.deepcopy(full)
    small["created"] = f"{date}T10:00:00+00:00"
    small["results"] = [
        {"nodeid": f"tests/test_mine.py::test_{i}", "feature": f"tests/test_mine::test_{i}", "suite": "tests",
         "outcome": "passed" if i < passed else "failed", "reason": None if i < passed else "AssertionError"}
        for i in range(passed + failed)
    ]  # fmt: skip
    small.pop("summary", None)
    return small


def _cell(html: str, gfx: str) -> str:
    found = re.search(rf'<a href="gfx/{gfx}.html">{gfx}</a></th>(<td.*?</td>)', html)
    assert found is not None, html
    return found.group(1)


def test_a_later_small_run_does_not_hide_the_full_suite_run_in_the_index() -> None:
    full = _report("gfx1100")
    full["created"] = "2026-01-05T10:00:00+00:00"
    atlas = build_atlas([("full.json", full), ("mine.json", _own_project(full, "2026-01-06", 5, 3))])
    cell = _cell(index_page(atlas), "gfx1100")
    # the full suite's run stands for the combination, named; the later 8-row run is shown under it
    assert re.match(r'<td class="failed" title="[^"]*">10/12 passed<br><small>rocm torch', cell), cell
    assert "2026-01-05 (13 rows)" in cell and "2 run(s) on 1 machine(s)" in cell
    assert re.search(r'<small class="failed"[^>]*>latest: 5/8 passed, rocm torch[^<]*, 2026-01-06 \(8 rows\)', cell)


def test_a_subset_or_interrupted_run_gives_way_to_a_whole_one_and_a_lone_run_has_no_latest_line() -> None:
    full = _report("gfx1100")
    full["created"] = "2026-01-05T10:00:00+00:00"
    subset = copy.deepcopy(full)
    subset["created"] = "2026-01-07T10:00:00+00:00"
    subset["selection"] = {"args": [], "keyword": "conv", "markers": None, "deselected": 0}
    killed = copy.deepcopy(full)
    killed["created"] = "2026-01-08T10:00:00+00:00"
    killed["interrupted"] = True
    cell = _cell(index_page(build_atlas([("a.json", full), ("b.json", subset), ("c.json", killed)])), "gfx1100")
    assert "2026-01-05 (13 rows)" in cell.split("latest:")[0]
    assert "latest: 10/12 passed" in cell and "(13 rows, interrupted)" in cell
    cell = _cell(index_page(build_atlas([("a.json", full), ("b.json", subset)])), "gfx1100")
    assert "2026-01-05 (13 rows)" in cell.split("latest:")[0] and "subset: -k &#x27;conv&#x27;" in cell
    alone = _cell(index_page(build_atlas([("a.json", full)])), "gfx1100")
    assert "latest:" not in alone and "1 run(s) on 1 machine(s)" in alone


def _with_tool(document: dict[str, Any], version: str | None, date: str) -> dict[str, Any]:
    out = copy.deepcopy(document)
    out["created"] = f"{date}T10:00:00+00:00"
    if version is not None:
        out["tool"] = {"name": "pytest-rocm", "version": version}
    return out


def test_mixed_tool_versions_are_warned_of_only_where_recorded_versions_differ() -> None:
    a = _report("gfx1100")
    same = [("a.json", _with_tool(a, "0.1.0", "2026-01-01")), ("b.json", _with_tool(a, "0.1.0", "2026-01-02"))]
    assert "different pytest-rocm versions" not in index_page(build_atlas(same))
    differ = [("a.json", _with_tool(a, "0.1.0", "2026-01-01")), ("b.json", _with_tool(a, "0.10.0", "2026-01-02"))]
    assert "different pytest-rocm versions (0.1.0, 0.10.0)" in index_page(build_atlas(differ))
    # a report that records no version (a vet report, before it recorded one) is not "another version"
    unknown = [("a.json", _with_tool(a, "0.1.0", "2026-01-01")), ("b.json", _with_tool(a, None, "2026-01-02"))]
    html = index_page(build_atlas(unknown))
    assert "different pytest-rocm versions" not in html
    assert "1 report(s) do not record the pytest-rocm version that wrote them" in html
    # all without one: nothing to compare, nothing said
    none = [("a.json", _with_tool(a, None, "2026-01-01")), ("b.json", _with_tool(a, None, "2026-01-02"))]
    assert "pytest-rocm version" not in index_page(build_atlas(none))


def test_a_vet_report_records_the_tool_and_machine_that_wrote_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_rocm._resources import VERSION

    (tmp_path / "pkg" / "okvet").mkdir(parents=True)
    (tmp_path / "pkg" / "okvet" / "__init__.py").write_text("VALUE = 1\n")
    monkeypatch.setattr(
        "pytest_rocm.vet.live.live_check",
        lambda *a, **k: {"check": "import", "module": None, "suite": None, "records": []},
    )
    report = tmp_path / "vet.json"
    assert cli.main(["vet", str(tmp_path / "pkg"), "--run", "--unsafe-run", "--report", str(report)]) == 0
    document = json.loads(report.read_text())
    assert document["tool"] == {"name": "pytest-rocm", "version": VERSION}
    assert document["machine"]["id"].startswith("m-")


def test_page_names_never_collide() -> None:
    names = page_names(["lib/a", "lib-a", "Lib-a", "tests/unit", "tests-unit", "", "gfx942"])
    assert len({n.casefold() for n in names.values()}) == len(names)
    assert names["Lib-a"] == "Lib-a" and names["lib-a"] == "lib-a-2"  # one disk may ignore case
    assert names["gfx942"] == "gfx942" and names["tests-unit"] == "tests-unit"  # a safe name stays as it is
    assert names["lib/a"].startswith("lib-a-") and names["tests/unit"].startswith("tests-unit-")
    # stable: the same set names alike, whatever order it came in
    assert page_names(reversed(list(names))) == names


def test_two_suites_whose_names_meet_keep_a_page_each(tmp_path: Path) -> None:
    document = _report("cpu_run")
    document["results"] = [
        {"nodeid": "a/test_x.py::test_one", "feature": "x/one", "suite": "tests/unit", "outcome": "passed"},
        {"nodeid": "b/test_x.py::test_two", "feature": "x/two", "suite": "tests-unit", "outcome": "failed"},
    ]
    document.pop("summary", None)
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "r.json").write_text(json.dumps(document))
    site = tmp_path / "site"
    assert cli.main(["atlas", str(tmp_path / "r"), "-o", str(site)]) == 0
    pages = sorted((site / "library").glob("*.html"))
    assert len(pages) == 2
    texts = "".join(p.read_text() for p in pages)
    assert '<tr id="x/one">' in texts and '<tr id="x/two">' in texts
    # every link of the index and of the search leads to a page that holds its row
    index = (site / "index.html").read_text()
    for link in re.findall(r'href="(library/[^"]+)"', index):
        assert (site / link).is_file(), link
    search = (site / "search.js").read_text()
    for row in json.loads(search[search.index("=") + 1 : search.rindex(";")]):
        page, _, anchor = row[2].partition("#")
        assert f'<tr id="{anchor}">' in (site / page).read_text()


@pytest.mark.parametrize("inside", ["gfx", "library"])
def test_a_symlinked_folder_inside_the_site_is_refused_not_written_through(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], inside: str
) -> None:
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "r.json").write_text(json.dumps(_report("gfx1100")))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    site = tmp_path / "site"
    site.mkdir()
    (site / inside).symlink_to(elsewhere)
    assert cli.main(["atlas", str(tmp_path / "r"), "-o", str(site)]) == 2
    err = capsys.readouterr().err.strip()
    assert "symbolic link" in err and f"{site / inside}" in err and "\n" not in err
    assert list(elsewhere.iterdir()) == []


def test_a_symlinked_page_inside_the_site_is_refused_not_written_through(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "r.json").write_text(json.dumps(_report("gfx1100")))
    victim = tmp_path / "victim.txt"
    victim.write_text("mine")
    site = tmp_path / "site"
    (site / "gfx").mkdir(parents=True)
    (site / "gfx" / "gfx1100.html").symlink_to(victim)
    assert cli.main(["atlas", str(tmp_path / "r"), "-o", str(site)]) == 2
    assert "symbolic link" in capsys.readouterr().err
    assert victim.read_text() == "mine"


@pytest.mark.parametrize("device", ["cuda:\u00b2", "cuda:\u0663", "cuda:x", "tpu:0", 7])
def test_a_device_it_cannot_parse_is_one_line_and_the_rest_is_built(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], device: object
) -> None:
    (tmp_path / "r").mkdir()
    odd = _report("gfx942")
    odd["device"] = device
    (tmp_path / "r" / "odd.json").write_text(json.dumps(odd))
    (tmp_path / "r" / "fine.json").write_text(json.dumps(_report("gfx1100")))
    site = tmp_path / "site"
    code = cli.main(["atlas", str(tmp_path / "r"), "-o", str(site)])
    captured = capsys.readouterr()
    assert code == 1 and "Traceback" not in captured.err
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "odd.json" in lines[0] and "device" in lines[0], lines
    assert "1 reports" in captured.out and "odd.json" in (site / "runs.html").read_text()


def test_the_device_under_test_picks_its_gfx_and_an_unlisted_index_is_unknown() -> None:
    mixed = _report("gfx942")
    mixed["environment"]["devices"][1]["gfx"] = "gfx90a"
    for device, gfx in [("cuda:1", "gfx90a"), ("hip:1", "gfx90a"), ("cuda", "gfx942"), ("cuda:9", "unknown")]:
        mixed["device"] = device
        assert build_atlas([("m.json", mixed)]).runs[0].gfx == gfx, device
