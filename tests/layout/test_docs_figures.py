"""The docs' figures of the project itself (the suites' items, the tests, their times) come from
``benchmarks/figures.json``, which the benchmarks write, never from a number typed into a page.

Two rules: a quote (``<!-- figure KEY -->2,343<!-- /figure -->``) and docs/benchmarks.md's generated
table say what figures.json holds; and a paragraph that states such a figure (the CPU baseline's
time, the plugin's test count, the fast loop...) states it through a quote. The old pages broke both
("about a minute", "1,638", "49 s" for a suite of 406 items): each rule is run on such text too.
"""

from __future__ import annotations

import datetime
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import figures  # noqa: E402  (benchmarks/figures.py: a script's module, not a package)

DOCS = ROOT / "docs"


def _pages() -> dict[str, str]:
    return {f"docs/{p.name}": p.read_text(encoding="utf-8") for p in sorted(DOCS.glob("*.md"))}


def test_every_quote_and_the_generated_table_are_figures_json() -> None:
    assert figures.drift(_pages(), figures.load()) == []


def test_a_quote_that_went_stale_is_noticed() -> None:
    recorded = figures.load()
    page = "the ci profile has <!-- figure suites_ci_items -->406<!-- /figure --> items"
    assert figures.drift({"docs/x.md": page}, recorded) == [
        f"docs/x.md: figure suites_ci_items quoted as 406, figures.json has {figures.text_of(recorded['suites_ci_items'])}"
    ]
    unknown = "<!-- figure suites_nightly_items -->12<!-- /figure -->"
    assert figures.drift({"docs/x.md": unknown}, recorded) == [
        "docs/x.md: quotes figure suites_nightly_items, which benchmarks/figures.json does not hold"
    ]
    table = (DOCS / "benchmarks.md").read_text(encoding="utf-8")
    edited = figures.BLOCK.sub(lambda m: m.group(1) + m.group(2).replace(" s |", " min |", 1) + m.group(3), table)
    assert edited != table
    assert figures.drift({"docs/benchmarks.md": edited}, recorded) == [
        "docs/benchmarks.md: the generated figures block is not figures.json's (run benchmarks/figures.py --write)"
    ]


def test_a_rewrite_takes_every_quote_from_the_file() -> None:
    recorded = figures.load()
    page = (
        "<!-- figure plugin_tests -->1,638<!-- /figure --> tests\n<!-- figures:begin -->\nold\n<!-- figures:end -->\n"
    )
    new = figures.rewrite(page, recorded)
    assert figures.drift({"docs/x.md": new}, recorded) == []
    assert f"-->{figures.text_of(recorded['plugin_tests'])}<!--" in new and "old" not in new


def test_each_figure_says_what_when_where_and_how() -> None:
    for key, fig in figures.load().items():
        assert re.fullmatch(r"[a-z][a-z0-9_]*", key), key
        assert fig["what"] and fig["where"] and fig["unit"], key
        assert datetime.date.fromisoformat(fig["measured"]) <= datetime.date.today(), key
        scripts = [w for w in fig["how"].split() if w.startswith(("benchmarks/", ".ci/"))]
        assert all((ROOT / s).exists() for s in scripts), f"{key}: {fig['how']} names a script the checkout lacks"
        figures.text_of(fig)  # a number


@pytest.mark.parametrize("value", ["12", None, True, [1]])
def test_a_figure_that_is_no_number_is_refused(value: object) -> None:
    with pytest.raises(ValueError, match="is not a number"):
        figures.text_of({"value": value})


# -- a figure of the project is stated through a quote ---------------------------------------------
#: what the figures are about: a paragraph that says one of these and gives a figure quotes it
CLAIMS = (
    "cpu baseline of the ci profile",
    "the plugin's own tests",
    "the fast loop",
    "every suite in the",
    "every bundled suite",
    "whole bundled suites",
)
FIGURE = re.compile(
    r"(?<![\w.-])(?:about )?\d[\d,.]*\s*(?:s|min|minutes|items|tests|results)\b|\babout (?:a|one|two) minutes?\b|\(\d[\d,]*\)"
)


#: a sentence that dates its figure is history ("49 s on 2026-11-29, when they had 406 items")
DATED = re.compile(r"\b20\d\d-\d\d-\d\d\b")


def _sentences(text: str) -> list[str]:
    """Each sentence of each paragraph (a table's rows each one), whitespace folded, quotes kept."""
    out = []
    for block in text.split("\n\n"):
        rows = block.splitlines()
        for part in rows if rows and rows[0].startswith("|") else [block]:  # a table: each row its own
            out.extend(re.split(r"(?<=\.)\s+(?=[A-Z`])", " ".join(part.split())))
    return out


def unquoted_figures(pages: dict[str, str]) -> list[str]:
    found = []
    for name, text in pages.items():
        text = figures.BLOCK.sub("", text)  # the generated table is figures.json itself
        for sentence in _sentences(text):
            plain = figures.QUOTE.sub("", sentence)
            claim = next((c for c in CLAIMS if c in plain.lower()), None)
            if claim is None or DATED.search(plain):
                continue
            found += [f"{name}: {claim!r} with {m.group(0)!r} typed in, not quoted" for m in FIGURE.finditer(plain)]
    return found


def test_the_pages_quote_the_projects_own_figures() -> None:
    assert unquoted_figures(_pages()) == []


@pytest.mark.parametrize(
    ("text", "typed"),
    [
        # the sentences this rule was written for, as they stood before figures.json
        ("the CPU baseline of the ci profile takes\nabout a minute on 2 cores, and", "about a minute"),
        # a date does not excuse a sentence whose figure it does not date
        ("The CPU baseline of the ci profile takes 49 s. It was 2026-11-29.", "49 s"),
        ("| the plugin's own tests (1,638) | 206–257 s with `-n 2` |", "(1,638)"),
        ('`pytest -m "not slow"` is the fast loop while developing (2,445 tests in 77 s', "2,445 tests"),
        ("| whole bundled suites through nox, `-n auto` | 49 s (torch 2.13) |", "49 s"),
        ("| every suite in the `ci` profile, serial (1,013 items) | 61.2 s wall |", "1,013 items"),
    ],
)
def test_a_figure_typed_into_a_page_is_noticed(text: str, typed: str) -> None:
    found = unquoted_figures({"docs/x.md": text})
    assert any(repr(typed) in line for line in found), found
    # the same sentence through quotes passes
    quoted = text.replace(typed, "<!-- figure plugin_tests -->3,093<!-- /figure -->")
    assert not any(repr(typed) in line for line in unquoted_figures({"docs/x.md": quoted}))
