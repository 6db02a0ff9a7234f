"""The project's own figures (how many items the suites have, how many tests, how long each takes),
kept in one file the benchmarks write, and quoted in the docs from it.

    python benchmarks/figures.py            # the figures, as docs/benchmarks.md shows them
    python benchmarks/figures.py --write    # rewrite the docs' quotes and generated block from figures.json
    python benchmarks/figures.py --check    # exit 1, naming each, where a doc quotes another figure

``benchmarks/figures.json`` holds each figure with when, where and how it was measured. A
benchmark that measures one records it (``record``: ``bench_ci_profile.py --record``,
``bench_test_counts.py --record``); a figure that needs a long measurement keeps its last measured
value and says when that was. The docs quote a figure between markers,
``<!-- figure suites_ci_items -->2,074<!-- /figure -->`` (the comments do not render), and
docs/benchmarks.md carries the whole table between ``<!-- figures:begin -->`` and
``<!-- figures:end -->``; ``tests/layout/test_docs_figures.py`` holds both to this file, so a doc
cannot go on quoting a figure the benchmarks no longer print. Stdlib only.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FIGURES = ROOT / "benchmarks" / "figures.json"
DOCS = ROOT / "docs"
QUOTE = re.compile(r"<!-- figure (\w+) -->(.*?)<!-- /figure -->")
BLOCK = re.compile(r"(<!-- figures:begin -->\n)(.*?)(<!-- figures:end -->)", re.S)


def load(path: Path = FIGURES) -> dict[str, dict[str, Any]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return {k: v for k, v in data.items() if not k.startswith("_")}


def text_of(figure: Mapping[str, Any]) -> str:
    """How the docs write a figure's value: thousands with a comma, ``about`` kept as given."""
    value = figure["value"]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"figure value {value!r} is not a number")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    number = f"{value:,}" if isinstance(value, int) else f"{value:g}"
    return f"{figure.get('prefix', '')}{number}"


def block(figures: Mapping[str, Mapping[str, Any]]) -> str:
    """The generated table of docs/benchmarks.md."""
    lines = ["| figure | value | measured | how |", "| --- | --- | --- | --- |"]
    for key, fig in figures.items():
        value = f"{text_of(fig)} {fig.get('unit', '')}".strip()
        lines.append(f"| {fig['what']} (`{key}`) | {value} | {fig['measured']}, {fig['where']} | `{fig['how']}` |")
    return "\n".join(lines) + "\n"


def rewrite(text: str, figures: Mapping[str, Mapping[str, Any]]) -> str:
    """The page with every quote and the generated block taken from ``figures``."""

    def quote(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in figures:
            raise KeyError(f"a doc quotes figure {key!r}, which benchmarks/figures.json does not hold")
        return f"<!-- figure {key} -->{text_of(figures[key])}<!-- /figure -->"

    text = QUOTE.sub(quote, text)
    return BLOCK.sub(lambda m: m.group(1) + block(figures) + m.group(3), text)


def drift(pages: Mapping[str, str], figures: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """``docs/x.md: figure K quoted as 49, figures.json has 238``, per quote that differs."""
    found = []
    for name, text in pages.items():
        for key, quoted in QUOTE.findall(text):
            if key not in figures:
                found.append(f"{name}: quotes figure {key}, which benchmarks/figures.json does not hold")
            elif quoted != text_of(figures[key]):
                found.append(f"{name}: figure {key} quoted as {quoted}, figures.json has {text_of(figures[key])}")
        if (m := BLOCK.search(text)) and m.group(2) != block(figures):
            found.append(
                f"{name}: the generated figures block is not figures.json's (run benchmarks/figures.py --write)"
            )
    return found


def machine() -> str:
    """Where a figure was measured: CPUs and the load at the time (a shared machine's figures move)."""
    load1 = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return f"{os.cpu_count()} CPUs, load {load1:.1f}"


def record(key: str, value: float, *, what: str, unit: str, how: str, path: Path = FIGURES) -> None:
    """Write one measured figure into figures.json, with today's date and this machine."""
    data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    data[key] = {
        "what": what,
        "value": value,
        "unit": unit,
        "measured": datetime.date.today().isoformat(),
        "where": machine(),
        "how": how,
    }
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"recorded {key} = {value} {unit} in {path.relative_to(ROOT)}")


def _pages() -> dict[str, str]:
    return {f"docs/{p.name}": p.read_text(encoding="utf-8") for p in sorted(DOCS.glob("*.md"))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite the docs' quotes and block from figures.json")
    parser.add_argument("--check", action="store_true", help="exit 1 where a doc quotes another figure")
    args = parser.parse_args()
    figures = load()
    if args.write:
        for name, text in _pages().items():
            new = rewrite(text, figures)
            if new != text:
                (ROOT / name).write_text(new, encoding="utf-8")
                print(f"rewrote {name}")
        return 0
    if args.check:
        problems = drift(_pages(), figures)
        for line in problems:
            print(line, file=sys.stderr)
        return 1 if problems else 0
    sys.stdout.write(block(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
