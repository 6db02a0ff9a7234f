"""The atlas as static pages (``rocm-compat atlas``): plain files, no server, no network.

- ``index.html``: gfx x ROCm x torch, each cell how many rows passed in the latest run of that
  combination on that gfx, and on how many machines it was measured; a search over every row;
- ``gfx/<gfx>.html``: every row (suites and libraries) x combination, each cell the latest outcome
  with where (machine id, host when named), when (run date) and which run (label) on hover, and the
  row's history on that gfx (first seen failing, broke, fixed in);
- ``library/<name>.html``: a library's (or suite's) rows x gfx, with their histories;
- ``runs.html``: every report read: date, label, machine, tool version, file.

Every value from a report is escaped; the search reads ``search.js`` (a ``<script src>`` works from
``file://``, a fetch does not) and builds its results with ``textContent``, never HTML.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from html import escape
from pathlib import Path

from pytest_rocm._resources import VERSION, load_text
from pytest_rocm.atlas.cells import counts_of, index_cell, notes_of
from pytest_rocm.atlas.model import (
    FAIL,
    PASS,
    Atlas,
    Result,
    Run,
    changes,
    combination_key,
    latest_by,
    library_of,
    shown_runs,
    state_of,
    version_key,
)
from pytest_rocm.atlas.names import gfx_pages, library_pages
from pytest_rocm.report.files import UnsafeTarget, write_text_atomic

#: the site's stylesheet and script, written beside its pages as atlas.css and atlas.js
CSS = load_text("atlas.css")
SEARCH_JS = load_text("atlas.js")


def _e(text: object) -> str:
    return escape(str(text), quote=True)


def _page(title: str, body: str, depth: int) -> str:
    up = "../" * depth
    nav = f'<nav><a href="{up}index.html">index</a><a href="{up}runs.html">runs</a></nav>'
    return (
        f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{_e(title)}</title>"
        f'<link rel=stylesheet href="{up}atlas.css"><script src="{up}atlas.js"></script></head>'
        f"<body>{nav}<h1>{_e(title)}</h1>{body}"
        f"<p class=hist>rocm-compat atlas (pytest-rocm {VERSION})</p></body></html>\n"
    )


def _cell(result: Result | None, runs: Sequence[Run]) -> str:
    if result is None:
        return "<td></td>"
    run = runs[result.run]
    said = f"{run.day}, {run.where}, {run.label}" + (f": {result.reason[:200]}" if result.reason else "")
    return f'<td class="{_e(result.outcome)}" title="{_e(said)}">{_e(result.outcome)}</td>'


def history_text(results: Sequence[Result], runs: Sequence[Run]) -> str:
    """``first seen failing 2026-01-03 (rocm torch2.6.0 rocm6.2.4 on m-...); fixed 2026-03-01 (...)``"""
    found = changes(results)
    if [c.kind for c in found] == ["first seen"] and found[0].state == PASS:
        return ""  # passing since its first run: nothing to tell
    said = []
    for change in found:
        run = runs[change.run]
        what = (
            f"{change.kind} {'passing' if change.state == PASS else 'failing'}"
            if change.kind == "first seen"
            else change.kind
        )
        said.append(f"{what} {run.day} ({run.combination} on {run.where})")
    return "; ".join(said)


def _filter_box() -> str:
    return (
        '<p><input type=search id=filter placeholder="filter rows (words: a feature, an outcome...)">'
        " <span id=shown></span></p>"
    )


def _table_script() -> str:
    return "<script>atlasFilter(document.getElementById('filter'), document.getElementById('rows'))</script>"


def gfx_page(atlas: Atlas, gfx: str) -> str:
    runs = atlas.runs
    here = {r.index for r in atlas.runs_on(gfx)}
    first: dict[str, Run] = {}
    for run in runs:
        if run.index in here:
            first.setdefault(run.combination, run)
    combos = sorted(first, key=lambda c: combination_key(first[c]))
    head = "".join(f"<th>{_e(c)}</th>" for c in combos)
    lines = []
    for (suite, feature), results in sorted(atlas.rows.items()):
        mine = [r for r in results if r.run in here]
        if not mine:
            continue
        latest = latest_by(mine, runs, "combination")
        cells = "".join(_cell(latest.get(c), runs) for c in combos)
        lines.append(
            f'<tr id="{_e(feature)}"><td>{_e(suite)}</td><td>{_e(feature)}</td>{cells}'
            f"<td class=hist>{_e(history_text(mine, runs))}</td></tr>"
        )
    machines = {r.where for r in runs if r.index in here}
    intro = (
        f"<p>{len(here)} runs on {len(machines)} machine(s); each cell is the latest run of that combination "
        "(hover: when, where, which run); history: the row's changes on this gfx in date order.</p>"
    )
    table = (
        f"<table id=rows><thead><tr><th>suite</th><th>row</th>{head}<th>history</th></tr></thead>"
        f"<tbody>{''.join(lines)}</tbody></table>"
    )
    return _page(f"{gfx}: every row, by combination", intro + _filter_box() + table + _table_script(), 1)


def library_page(atlas: Atlas, name: str, keys: Sequence[tuple[str, str]]) -> str:
    runs = atlas.runs
    gfx_list = atlas.gfx_list()
    names = gfx_pages(atlas)
    head = "".join(f'<th><a href="../gfx/{_e(names[g])}.html">{_e(g)}</a></th>' for g in gfx_list)
    lines = []
    for key in keys:
        results = atlas.rows[key]
        latest = latest_by(results, runs, "gfx")
        cells = "".join(_cell(latest.get(g), runs) for g in gfx_list)
        histories = "<br>".join(
            f"{_e(g)}: {_e(text)}"
            for g in gfx_list
            if (text := history_text([r for r in results if runs[r.run].gfx == g], runs))
        )
        lines.append(f'<tr id="{_e(key[1])}"><td>{_e(key[1])}</td>{cells}<td class=hist>{histories}</td></tr>')
    table = (
        f"<table id=rows><thead><tr><th>row</th>{head}<th>history per gfx</th></tr></thead>"
        f"<tbody>{''.join(lines)}</tbody></table>"
    )
    intro = "<p>Each cell: the latest run on that gfx, whatever its combination (hover: when, where, which run).</p>"
    return _page(f"{name}: every row, by gfx", intro + _filter_box() + table + _table_script(), 1)


def index_page(atlas: Atlas) -> str:
    runs = atlas.runs
    columns = sorted({(r.rocm, r.torch) for r in runs}, key=lambda c: (version_key(c[0]), version_key(c[1])))
    head = "".join(
        f"<th>{_e(('ROCm ' + rocm) if rocm else 'CPU')}<br>torch {_e(torch)}</th>" for rocm, torch in columns
    )
    by_cell: dict[tuple[str, str, str], list[Run]] = {}
    for run in runs:
        by_cell.setdefault((run.gfx, run.rocm, run.torch), []).append(run)
    wanted = {r.index for cell in by_cell.values() for r in shown_runs(cell) if r is not None}
    counts = counts_of(atlas, wanted)
    gfx_names = gfx_pages(atlas)
    lines = []
    for gfx in atlas.gfx_list():
        cells = [
            index_cell(by_cell[(gfx, rocm, torch)], counts) if (gfx, rocm, torch) in by_cell else "<td></td>"
            for rocm, torch in columns
        ]
        lines.append(f'<tr><th><a href="gfx/{_e(gfx_names[gfx])}.html">{_e(gfx)}</a></th>{"".join(cells)}</tr>')
    library_names = library_pages(atlas)
    links = " ".join(f'<a href="library/{_e(library_names[n])}.html">{_e(n)}</a>' for n in sorted(library_names))
    notes = "".join(f"<p class=note>{_e(n)}</p>" for n in notes_of(atlas))
    body = (
        f"<p>{len(runs)} reports from {len({r.where for r in runs})} machine(s), "
        f"{_e(runs[0].day if runs else '-')} to {_e(runs[-1].day if runs else '-')}; {len(atlas.rows)} rows.</p>{notes}"
        '<h2>Search every row</h2><p><input type=search id=q placeholder="words of a row, a library, an outcome; gfx942=failed: on that gfx">'
        " <span id=hits></span></p><ul id=results></ul>"
        "<script src=search.js></script><script>atlasSearch(document.getElementById('q'), document.getElementById('results'))</script>"
        "<h2>gfx x ROCm x torch</h2><p>Each cell: rows passed of those judged (skips not counted) in the most "
        "complete run of that combination (finished, the whole suite, the most rows; then the latest), named "
        "under it; the latest run under that when it is another one.</p>"
        f"<table><thead><tr><th>gfx</th>{head}</tr></thead><tbody>{''.join(lines)}</tbody></table>"
        f"<h2>Libraries and suites</h2><p>{links}</p>"
    )
    return _page("ROCm compatibility atlas", body, 0)


def runs_page(atlas: Atlas) -> str:
    lines = [
        f"<tr><td>{_e(r.date or 'undated')}</td><td>{_e(r.label)}{' (interrupted: partial)' if r.interrupted else ''}</td><td>{_e(r.gfx)}</td><td>{_e(r.machine)}</td>"
        f"<td>{_e(r.host or '')}</td><td>{_e(r.tool or 'not recorded')}</td><td>{_e(r.source)}</td></tr>"
        for r in atlas.runs
    ]
    unread = "".join(f"<li>{_e(source)}: {_e(why)}</li>" for source, why in atlas.unread)
    body = (
        "<table><thead><tr><th>run date</th><th>label</th><th>gfx</th><th>machine id</th><th>host</th>"
        f"<th>tool</th><th>file</th></tr></thead><tbody>{''.join(lines)}</tbody></table>"
        + (f"<h2>Not read</h2><ul>{unread}</ul>" if unread else "")
    )
    return _page("Runs", body, 0)


def search_rows(atlas: Atlas) -> list[list[str]]:
    """``[feature, suite, page, "crashed on gfx942; passed on gfx1100", "gfx942=crashed gfx1100=passed"]``
    per row (each gfx's latest outcome): the search's data."""
    rows = []
    library_names = library_pages(atlas)
    for (suite, feature), results in sorted(atlas.rows.items()):
        by_outcome: dict[str, list[str]] = {}
        for gfx, result in sorted(latest_by(results, atlas.runs, "gfx").items()):
            by_outcome.setdefault(result.outcome, []).append(gfx)
        order = sorted(by_outcome, key=lambda o: (state_of(o) != FAIL, state_of(o) != PASS, o))
        said = "; ".join(f"{outcome} on {' '.join(by_outcome[outcome])}" for outcome in order)
        page = f"library/{library_names[library_of(suite, feature)]}.html#{feature}"
        # gfx942=crashed: one word per gfx, so a search can ask for an outcome on one gfx
        pairs = " ".join(f"{gfx}={outcome}" for outcome in order for gfx in by_outcome[outcome])
        rows.append([feature, suite, page, said, pairs])
    return rows


def _unsafe_folder(folder: Path) -> str | None:
    """Why the site must not be written into ``folder``: a symbolic link (a write would land
    wherever it points), or something other than a folder; None when it is a folder or absent."""
    if folder.is_symlink():
        return f"{folder} is a symbolic link (to {os.readlink(folder)}): the site's folders are never written through"
    if folder.exists() and not folder.is_dir():
        return f"{folder} is not a folder"
    return None


def write_site(atlas: Atlas, out: Path) -> list[Path]:
    """Every page of the atlas under ``out``; the files written. UnsafeTarget (nothing written)
    when a folder or page inside the site is a symbolic link or not what it should be: the site
    is rebuilt in place, and a link planted there must not carry a page outside it."""
    for folder in (out / "gfx", out / "library"):
        problem = _unsafe_folder(folder)
        if problem:
            raise UnsafeTarget(problem)
    pages: dict[Path, str] = {
        out / "atlas.css": CSS,
        out / "atlas.js": SEARCH_JS,
        out / "index.html": index_page(atlas),
        out / "runs.html": runs_page(atlas),
        # a <script> body: "</" escaped so no feature name can close the element
        out / "search.js": "window.ATLAS_ROWS = " + json.dumps(search_rows(atlas)).replace("</", "<\\/") + ";\n",
    }
    for gfx, name in gfx_pages(atlas).items():
        pages[out / "gfx" / f"{name}.html"] = gfx_page(atlas, gfx)
    by_library: dict[str, list[tuple[str, str]]] = {}
    for key in sorted(atlas.rows):
        by_library.setdefault(library_of(*key), []).append(key)
    for name, page in library_pages(atlas).items():
        pages[out / "library" / f"{page}.html"] = library_page(atlas, name, by_library[name])
    linked = next((path for path in pages if path.is_symlink()), None)
    if linked is not None:
        raise UnsafeTarget(f"{linked} is a symbolic link (to {os.readlink(linked)}): a page is never written through")
    (out / "gfx").mkdir(parents=True, exist_ok=True)
    (out / "library").mkdir(exist_ok=True)
    for path, text in pages.items():
        write_text_atomic(path, text)
    return list(pages)
