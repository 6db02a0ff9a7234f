"""The docs' account of the code, held to the code: docs/design.md's module list and layer
diagram, docs/index.md's page list, command table, suites and checkout layout.

Each reader parses the page's own format (a module per line, a table's first column), so a
module, page, command or suite added without its line fails here, and so does a line left behind
for one that is gone. Each reader is also run on a made-up page that drifted, to show it notices.
"""

from __future__ import annotations

import argparse
import importlib
import re
from collections.abc import Mapping

import pytest
from test_import_rules import LAYERS, PACKAGE, read_package

ROOT = PACKAGE.parent
DOCS = ROOT / "docs"


def _section(text: str, heading: str) -> list[str]:
    """The lines of a ``## heading`` section, up to the next ``## ``."""
    lines = text.splitlines()
    start = lines.index(f"## {heading}") + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    return lines[start:end]


# -- docs/design.md: every module ---------------------------------------------------------------
#: the listing's columns: a package or top-level module at 6 spaces, a package's module at 8
_TOP = re.compile(r"^ {6}([\w.]+/|[\w.]+\.py)(?: |$)")
_MODULE = re.compile(r"^ {8}(\w+)(?: |$)")


def documented_modules(text: str) -> set[str]:
    """The dotted module names design.md's listing names (``""`` the root, ``"env"`` a package,
    ``"env.arch"`` its module); a folder without Python (``data/``) comes back with its slash."""
    lines = _section(text, "Layers")
    start = lines.index("    pytest_rocm/") + 1
    names: set[str] = set()
    package: str | None = None
    for line in lines[start:]:
        if line and not line.startswith("      "):
            break  # the end of the indented block
        if top := _TOP.match(line):
            entry = top.group(1)
            if entry.endswith("/"):
                package = entry[:-1]
                names.add(package if (PACKAGE / package / "__init__.py").exists() else entry)
            else:
                package = None
                names.add("" if entry == "__init__.py" else entry.removesuffix(".py"))
        elif (module := _MODULE.match(line)) and package is not None:
            names.add(f"{package}.{module.group(1)}")
    return names


def module_list_drift(text: str, modules: set[str]) -> list[str]:
    listed = documented_modules(text)
    folders = {n for n in listed if n.endswith("/") and (PACKAGE / n).is_dir()}  # data/: no Python, listed
    return [f"docs/design.md does not list {m or 'pytest_rocm/__init__.py'}" for m in sorted(modules - listed)] + [
        f"docs/design.md lists {m}, which is not a module" for m in sorted(listed - modules - folders)
    ]


def test_design_lists_every_module_and_only_modules() -> None:
    assert module_list_drift((DOCS / "design.md").read_text(encoding="utf-8"), set(read_package(PACKAGE))) == []


def test_a_module_without_its_line_is_noticed() -> None:
    text = (DOCS / "design.md").read_text(encoding="utf-8")
    modules = set(read_package(PACKAGE))
    assert module_list_drift(text, modules | {"table.sparkline"}) == ["docs/design.md does not list table.sparkline"]
    gone = text.replace("        oneline           a cell that did not pass, in one line\n", "")
    assert module_list_drift(gone, modules) == ["docs/design.md does not list table.oneline"]
    moved = text.replace("        growth  ", "        growths  ")
    assert module_list_drift(moved, modules) == [
        "docs/design.md does not list report.growth",
        "docs/design.md lists report.growths, which is not a module",
    ]


# -- docs/design.md: the layer diagram is LAYERS ------------------------------------------------
_LAYER_LINE = re.compile(r"^ {4}(\d)  ")
#: where the diagram's comments begin (the names stand left of it)
_COMMENT_COLUMN = 45


def documented_layers(text: str) -> dict[str, int]:
    """``{"cli": 5, "": 5, ...}`` from the diagram under "Layers (0 is the lowest)"."""
    lines = _section(text, "Layers")
    start = next(i for i, line in enumerate(lines) if line.startswith("Layers (0 is the lowest)")) + 1
    layers: dict[str, int] = {}
    layer: int | None = None
    for line in lines[start:]:
        if line.startswith("- "):
            break
        if found := _LAYER_LINE.match(line):
            layer = int(found.group(1))
        elif not line.startswith(" " * 7) or layer is None:
            continue
        names = line[7:_COMMENT_COLUMN].strip()
        for token in re.split(r"\s{2,}", names) if names else []:
            name = token.split()[0].rstrip("/,")
            layers["" if name == "pytest_rocm" else name] = layer
    return layers


def test_the_layer_diagram_is_the_layer_table() -> None:
    assert documented_layers((DOCS / "design.md").read_text(encoding="utf-8")) == LAYERS


def test_a_diagram_that_drifted_is_noticed() -> None:
    text = (DOCS / "design.md").read_text(encoding="utf-8")
    drifted = text.replace("    3  vet/  atlas/  table/  repro/  ", "    3  vet/  atlas/  repro/          ")
    assert "table" not in documented_layers(drifted)
    assert documented_layers(drifted) != LAYERS


# -- docs/index.md: pages, commands, suites, layout -------------------------------------------
def _first_column(lines: list[str]) -> list[str]:
    rows = [line for line in lines if line.startswith("| ") and not line.startswith("| ---")]
    return [row.split(" | ")[0].removeprefix("| ") for row in rows[1:]]  # the header row left out


def indexed_pages(text: str) -> set[str]:
    return {p for cell in _first_column(_section(text, "Pages")) for p in re.findall(r"`docs/([\w-]+\.md)`", cell)}


def test_the_page_list_is_the_docs_folder() -> None:
    pages = {p.name for p in DOCS.glob("*.md")} - {"index.md"}
    assert indexed_pages((DOCS / "index.md").read_text(encoding="utf-8")) == pages


def test_a_page_left_out_of_the_list_is_noticed() -> None:
    text = (DOCS / "index.md").read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith("| `docs/workload.md`"))
    assert "workload.md" not in indexed_pages(text.replace(row + "\n", ""))


def _commands() -> Mapping[str, argparse.ArgumentParser]:
    """Each ``rocm-compat`` subcommand's parser, built the way the command line builds it."""
    cli = importlib.import_module("pytest_rocm.cli")
    (command,) = [a for a in cli._top_parser()._actions if a.dest == "command"]
    parsers = {}
    for name in command.choices:
        module_name, help_ = cli.COMMANDS[name]
        parser = cli.OneLineParser(prog=f"rocm-compat {name}", description=help_)
        importlib.import_module(module_name).configure_parser(parser)
        parsers[name] = parser
    return parsers


def command_table_drift(text: str, parsers: Mapping[str, argparse.ArgumentParser]) -> list[str]:
    """What the command table says that the parsers do not: a command it lacks or names wrongly,
    an option a row shows that its command does not take."""
    found: list[str] = []
    listed: set[str] = set()
    for usage in _first_column(_section(text, "Commands")):
        usage = usage.strip("`").replace("\\|", "|")
        if not usage.startswith("rocm-compat "):
            path = usage.split()[1] if usage.startswith("bash ") else usage.split()[0]
            if not (ROOT / path).exists():
                found.append(f"the command table names {path}, which is not in the checkout")
            continue
        name = usage.split()[1]
        listed.add(name)
        if name not in parsers:
            found.append(f"the command table shows rocm-compat {name}, which is no command")
            continue
        known = parsers[name]._option_string_actions
        found += [
            f"rocm-compat {name} has no option {option}"
            for option in re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", usage)
            if option not in known
        ]
    found += [f"the command table lacks rocm-compat {name}" for name in sorted(set(parsers) - listed)]
    return found


def test_the_command_table_is_the_command_line() -> None:
    assert command_table_drift((DOCS / "index.md").read_text(encoding="utf-8"), _commands()) == []


def test_a_command_table_that_drifted_is_noticed() -> None:
    text = (DOCS / "index.md").read_text(encoding="utf-8")
    parsers = _commands()
    row = next(line for line in text.splitlines() if line.startswith("| `rocm-compat capture"))
    assert command_table_drift(text.replace(row + "\n", ""), parsers) == ["the command table lacks rocm-compat capture"]
    wrong = text.replace("`rocm-compat table REPORT... [--format", "`rocm-compat table REPORT... [--fmt")
    assert command_table_drift(wrong, parsers) == ["rocm-compat table has no option --fmt"]
    extra = text.replace("| `rocm-compat atlas", "| `rocm-compat chart X` | x | x |\n| `rocm-compat atlas")
    assert command_table_drift(extra, parsers) == ["the command table shows rocm-compat chart, which is no command"]


def indexed_suites(text: str) -> set[str]:
    return {m for cell in _first_column(_section(text, "The suites")) for m in re.findall(r"`suites/(\w+)`", cell)}


def test_the_suite_table_is_the_suites_folder() -> None:
    suites = {p.name for p in (ROOT / "suites").iterdir() if p.is_dir() and not p.name.startswith(("_", "."))}
    assert indexed_suites((DOCS / "index.md").read_text(encoding="utf-8")) == suites


def indexed_layout(text: str) -> tuple[set[str], set[str]]:
    """(the checkout's entries, pytest_rocm/'s entries) of the "Layout of the checkout" block."""
    checkout: set[str] = set()
    package: set[str] = set()
    inside = False
    for line in _section(text, "Layout of the checkout"):
        if found := re.match(r"^ {4}(\S+)(?: |$)", line):
            checkout.add(found.group(1))
            inside = found.group(1) == "pytest_rocm/"
        elif (found := re.match(r"^ {6}(\S+)(?: |$)", line)) and inside:
            package.add(found.group(1))
    return checkout, package


def test_the_checkout_layout_is_the_checkout() -> None:
    checkout, package = indexed_layout((DOCS / "index.md").read_text(encoding="utf-8"))
    assert [entry for entry in sorted(checkout) if not (ROOT / entry).exists()] == []
    actual = {p.name + "/" if p.is_dir() else p.name for p in PACKAGE.iterdir() if not p.name.startswith(".")}
    actual -= {"__pycache__/", "py.typed", "_suites/", "_matrix/"}  # built into the wheel, not kept here
    assert package == actual


def test_a_layout_that_drifted_is_noticed() -> None:
    text = (DOCS / "index.md").read_text(encoding="utf-8")
    _, package = indexed_layout(text.replace("      table/  ", "      matrix.py  "))
    assert "matrix.py" in package and "table/" not in package


_PACKAGES = "|".join(sorted(name for name in LAYERS if name and not name.startswith("_")))
_NAMED = re.compile(rf"`((?:{_PACKAGES})(?:[./]\w+)+)")
#: what a page names in the same spelling that is no module path (each read on its page)
_NOT_MODULES = {
    "parity.device": "the parity fixture's attribute (docs/parity.md)",
    "repro.OPS": "suites/known_issues/repro.py's table (docs/known_issues.md)",
    "workload/aten.addmm.default": "a workload row's name (docs/workload.md)",
}
_FILES = (".md", ".json", ".jsonl", ".toml", ".html", ".yml", ".txt", ".csv", ".sh")


def gone_modules(text: str, package: Mapping[str, tuple[str, bool]]) -> list[str]:
    """The package paths a page names (```report.table```, ```report/coverage.py```,
    ```plugin/__init__.pytest_report_header```) whose module is not there: the second part must
    be a module of the package, or a name its ``__init__`` defines."""
    gone = []
    for named in sorted(set(_NAMED.findall(text))):
        parts = [p for p in named.replace("/", ".").split(".") if p not in ("py", "__init__")]
        if len(parts) < 2 or named.endswith(_FILES) or named in _NOT_MODULES:
            continue  # a page, a data file, a bare package, a name that is no path
        head, name = parts[0], parts[1]
        source = package.get(head, ("", True))[0]
        defined = rf"^(?:def |class |async def )?{name}\b"
        lazy = rf"^\s+\"{name}\": \"pytest_rocm\."  # a name the module loads on first use (_lazy)
        if f"{head}.{name}" in package or re.search(defined, source, re.M) or re.search(lazy, source, re.M):
            continue
        gone.append(named)
    return gone


@pytest.mark.parametrize("page", sorted(p.name for p in DOCS.glob("*.md")))
def test_a_page_names_no_module_that_is_gone(page: str) -> None:
    assert gone_modules((DOCS / page).read_text(encoding="utf-8"), read_package(PACKAGE)) == []


def test_a_page_naming_a_moved_module_is_noticed() -> None:
    package = read_package(PACKAGE)
    assert gone_modules(
        "`report.table.Table`, `report/coverage.py`, `table.model.Table`, `suite_support.reproducer_sample`, "
        "`suite_support.no_such_name`",
        package,
    ) == [
        "report.table.Table",
        "report/coverage.py",
        "suite_support.no_such_name",
    ]
