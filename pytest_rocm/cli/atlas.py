"""``rocm-compat atlas REPORTS_DIR... -o SITE``: a static site of many reports (docs/clusters.md)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from pytest_rocm.cli.argtypes import path_text


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths",
        nargs="+",
        metavar="REPORTS",
        type=path_text,
        help="folders of reports (searched below) or report files",
    )
    parser.add_argument(
        "-o", "--output", metavar="SITE", type=path_text, required=True, help="the folder of the site (index.html)"
    )


def run(args: argparse.Namespace) -> int:
    from pytest_rocm.atlas.collect import iter_reports
    from pytest_rocm.atlas.model import build_atlas
    from pytest_rocm.atlas.site import write_site
    from pytest_rocm.report.files import UnsafeTarget

    roots = [Path(p) for p in args.paths]
    out = Path(args.output)
    missing = next((p for p in roots if not p.exists()), None)
    if missing is not None:
        print(f"rocm-compat atlas: {missing}: no such folder or file", file=sys.stderr)
        return 2
    if out.exists() and not out.is_dir():
        print(f"rocm-compat atlas: -o {out}: exists and is not a folder", file=sys.stderr)
        return 2
    started = time.monotonic()
    unread: list[tuple[str, str]] = []
    atlas = build_atlas(iter_reports(roots, unread, skip=out), unread)
    for _source, why in atlas.unread:  # files not read, and reports whose run cannot be placed
        print(f"rocm-compat atlas: not read: {why}", file=sys.stderr)
    if not atlas.runs:
        print(f"rocm-compat atlas: no report under {', '.join(map(str, roots))}", file=sys.stderr)
        return 2
    try:
        written = write_site(atlas, out)
    except (OSError, UnsafeTarget) as exc:
        print(f"rocm-compat atlas: -o {out}: cannot write ({exc})", file=sys.stderr)
        return 2
    size = sum(p.stat().st_size for p in written)
    print(
        f"rocm-compat atlas: {len(atlas.runs)} reports, {len(atlas.rows)} rows, {len(atlas.gfx_list())} gfx -> "
        f"{out / 'index.html'} ({len(written)} files, {size / 1e6:.1f} MB, {time.monotonic() - started:.1f} s)"
    )
    return 1 if atlas.unread else 0
