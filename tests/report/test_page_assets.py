"""The pages carry their stylesheets and scripts from ``data/`` (table.css/js inline in the table's
page, atlas.css/js written beside the atlas' pages), and each script finds the elements it uses."""

from __future__ import annotations

import re
from pathlib import Path

from pytest_rocm._resources import PACKAGE_DIR
from pytest_rocm.cli import main

REPORTS = Path(__file__).resolve().parents[1] / "data" / "report"
#: elements a script looks for only where the page has them (``if(speed)``)
OPTIONAL = {"speed", "charts-block"}


def _asset(name: str) -> str:
    return (PACKAGE_DIR / "data" / name).read_text(encoding="utf-8")


def _ids(script: str) -> set[str]:
    return set(re.findall(r"getElementById\(['\"]([\w-]+)['\"]\)", script))


def _has_id(page: str, name: str) -> bool:
    return re.search(rf"\bid=(?:\"{re.escape(name)}\"|{re.escape(name)}[\s>])", page) is not None


def test_the_tables_page_carries_its_stylesheet_and_script(tmp_path: Path) -> None:
    page = tmp_path / "table.html"
    assert main(["table", str(REPORTS / "cpu_run.json"), str(REPORTS / "gfx942.json"), "-o", str(page)]) == 0
    text = page.read_text(encoding="utf-8")
    script = _asset("table.js")
    assert f"<style>{_asset('table.css')}</style>" in text
    assert f"<script>{script}</script>" in text
    missing = sorted(name for name in _ids(script) - OPTIONAL if not _has_id(text, name))
    assert _ids(script) and missing == []


def test_the_atlas_writes_its_stylesheet_and_script_and_calls_what_it_defines(tmp_path: Path) -> None:
    site = tmp_path / "site"
    assert main(["atlas", str(REPORTS), "-o", str(site)]) == 0
    script = _asset("atlas.js")
    assert (site / "atlas.css").read_text(encoding="utf-8") == _asset("atlas.css")
    assert (site / "atlas.js").read_text(encoding="utf-8") == script
    defined = set(re.findall(r"^function (\w+)\(", script, re.MULTILINE))
    pages = [p.read_text(encoding="utf-8") for p in site.rglob("*.html")]
    called = {name for page in pages for name in re.findall(r"<script>(atlas\w+)\(", page)}
    assert called and called <= defined
    for name in _ids(script):  # each element a script function fills is on a page that calls it
        assert any(_has_id(page, name) for page in pages), name
