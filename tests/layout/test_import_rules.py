"""The package's import rules (docs/design.md, "Layers"), checked on the source.

The checker reads every module with ``ast`` (nothing is imported), so a rule that breaks shows
here even when no test exercises the offending line. Each rule is also run against a small
made-up package that breaks it, so the checker itself is shown to catch what it claims to.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_rocm"

#: lower layers never import higher ones (same layer: allowed, cycles aside)
LAYERS: dict[str, int] = {
    "_resources": 0,
    "_values": 0,
    "_lifetime": 0,
    "_supervisor": 0,
    "_import_probe": 0,
    "_lazy": 0,
    "env": 1,
    "coverage": 1,
    "doctor": 2,
    "parity": 2,
    "perf": 2,
    "report": 2,
    "matrix": 2,
    "suite_command": 2,
    "workload": 2,
    "vet": 3,
    "repro": 3,
    "atlas": 3,
    "setup": 3,
    # the compatibility table's views, read from report/ (which never imports them)
    "table": 3,
    "plugin": 4,
    "cli": 5,
    # the bundled suites' support (not a user API): its lazy names reach setup/; nothing in the
    # package imports it
    "suite_support": 5,
    # the package root: the public API (its lazy names reach plugin/), above everything but cli/,
    # which may read its __version__
    "": 5,
}
#: modules that must not import torch or pytest at all (not even inside a function)
PURE = (
    "env",
    "coverage",
    "doctor",
    "report",
    "matrix",
    "atlas",
    "setup",
    "table",
    "parity.tolerances",
    "parity.result",
    "parity.reading",
    "parity.options",
    "perf.stats",
    "perf.peaks",
    "workload.schema",
    "workload.signature",
    "workload.command",
    "repro.spec",
    "repro.write",
    "repro.issue",
    "_resources",
    "_values",
    "_lifetime",
    "_lazy",
)
#: the one sanctioned way torch enters a pure layer: the seam loads it on request
TORCH_DOORS = {"env.seam"}
HEAVY = ("torch", "pytest", "_pytest")


@dataclass(frozen=True)
class Import:
    target: str  # absolute dotted name ("pytest_rocm.env.model", "torch")
    top_level: bool  # run at import (at module level: not inside a function, not for the type checker only)
    line: int
    #: inside ``if TYPE_CHECKING:``: never executed, so torch/pytest may come in this way, but it is
    #: an arrow between modules all the same (layers, cycles): a type-only circle is a circle
    type_only: bool = False


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _lazy_table(node: ast.AnnAssign | ast.Assign) -> list[str]:
    """The modules a ``_LAZY`` table (public name -> module) names; [] for any other assignment."""
    targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
    if not any(isinstance(t, ast.Name) and t.id == "_LAZY" for t in targets) or not isinstance(node.value, ast.Dict):
        return []
    values = [v.value for v in node.value.values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
    return [v.partition(":")[0] for v in values]  # "module:attribute"


def imports_of(source: str, module: str, is_package: bool) -> Iterator[Import]:
    """Every import in a module with its absolute target (relative imports resolved)."""
    tree = ast.parse(source)

    def visit(nodes: list[ast.stmt], top: bool, typing: bool = False) -> Iterator[Import]:
        for node in nodes:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield Import(alias.name, top and not typing, node.lineno, typing)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    package = module.split(".") if is_package else module.split(".")[:-1]
                    package = package[: len(package) - node.level + 1]
                    base = ".".join([*package, base] if base else package)
                    base = f"pytest_rocm.{base}" if base else "pytest_rocm"
                for alias in node.names:
                    # `from pytest_rocm.env import arch` imports the module pytest_rocm.env.arch
                    target = f"{base}.{alias.name}" if base.startswith("pytest_rocm") else base
                    yield Import(target, top and not typing, node.lineno, typing)
            elif isinstance(node, ast.AnnAssign | ast.Assign) and _lazy_table(node):
                # ``_LAZY = {"name": "pytest_rocm.x.y"}``: imported on first use (PEP 562), an import all the same
                for target in _lazy_table(node):
                    yield Import(target, False, node.lineno)
            elif isinstance(node, ast.If) and _is_type_checking(node):
                # for the type checker only: never executed (its ``else`` is)
                yield from visit(node.body, top, True)
                yield from visit(node.orelse, top, typing)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield from visit(node.body, False, typing)
            elif isinstance(node, ast.ClassDef):
                yield from visit(node.body, top, typing)
            else:
                for field in ("body", "orelse", "finalbody", "handlers"):
                    children = getattr(node, field, None)
                    if isinstance(children, list):
                        stmts = [c for c in children if isinstance(c, ast.stmt)]
                        for handler in children:
                            if isinstance(handler, ast.ExceptHandler):
                                stmts.extend(handler.body)
                        yield from visit(stmts, top, typing)

    yield from visit(tree.body, True)


def read_package(root: Path) -> dict[str, tuple[str, bool]]:
    """``{"env.model": (source, is_package)}`` for every module below root."""
    return {
        module_name(p, root): (p.read_text(encoding="utf-8"), p.name == "__init__.py")
        for p in sorted(root.rglob("*.py"))
        if "_suites" not in p.parts
    }


def _local(target: str, modules: Mapping[str, object]) -> str | None:
    """The package module an absolute target names (``pytest_rocm.env.arch.family_of`` -> env.arch)."""
    if not target.startswith("pytest_rocm"):
        return None
    parts = target.split(".")[1:]
    while parts:
        name = ".".join(parts)
        if name in modules:
            return name
        parts.pop()
    return ""  # the package itself


def _layer(module: str) -> int | None:
    return LAYERS.get(module.split(".")[0])


def violations(package: Mapping[str, tuple[str, bool]]) -> list[str]:
    found: list[str] = []
    graph: dict[str, set[str]] = {m: set() for m in package}
    for module, (source, is_package) in package.items():
        head = module.split(".")[0]
        for imp in imports_of(source, module, is_package):
            root = imp.target.split(".")[0]
            where = f"pytest_rocm/{module.replace('.', '/')}{'/__init__' if is_package else ''}.py:{imp.line}"
            if root in HEAVY:
                if imp.type_only:
                    continue  # never executed: the type checker reads it, the program does not
                if root != "torch" and imp.top_level and head != "plugin":
                    found.append(f"{where}: imports {imp.target} at module level outside plugin/")
                pure = any(module == p or module.startswith(p + ".") for p in PURE)
                if pure and not (root == "torch" and module in TORCH_DOORS and not imp.top_level):
                    found.append(f"{where}: {module} must not import {root}")
                continue
            local = _local(imp.target, package)
            if local is None or local == module:
                continue
            graph[module].add(local)
            if local.split(".")[0] == "cli" and head != "cli":
                found.append(f"{where}: imports {local} from cli/ (only cli/ may)")
            mine, theirs = _layer(module), _layer(local)
            if mine is not None and theirs is not None and theirs > mine:
                found.append(
                    f"{where}: {module or 'pytest_rocm'} (layer {mine}) imports {local or 'pytest_rocm'} (layer {theirs})"
                )
    found.extend(f"import cycle: {' -> '.join(c)}" for c in cycles(graph))
    return found


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """One representative path per cycle (Tarjan's strongly connected components)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    result: list[list[str]] = []

    def strongconnect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                result.append([*sorted(component), sorted(component)[0]])

    for v in sorted(graph):
        if v not in index:
            strongconnect(v)
    return result


def test_the_package_keeps_its_import_rules() -> None:
    assert violations(read_package(PACKAGE)) == []


def test_every_top_level_part_has_a_layer() -> None:
    # a new subpackage must be placed in LAYERS, or the layer rule silently ignores it
    heads = {m.split(".")[0] for m in read_package(PACKAGE)}
    assert "" in heads  # the root is read, and has its layer
    assert heads - set(LAYERS) == set()


# -- the checker catches what it claims to: each rule broken on purpose ---------------------
def _pkg(**modules: str) -> dict[str, tuple[str, bool]]:
    return {name.replace("__", "."): (source, False) for name, source in modules.items()}


@pytest.mark.parametrize(
    ("package", "expected"),
    [
        (_pkg(report__table="import pytest\n"), "imports pytest at module level outside plugin/"),
        (_pkg(report__table="def f():\n    import pytest\n"), "report.table must not import pytest"),
        (_pkg(env__detect="import torch\n"), "env.detect must not import torch"),
        (_pkg(env__seam="import torch\n"), "env.seam must not import torch"),  # the door is lazy only
        (_pkg(matrix="from pytest_rocm.cli import run\n", cli__run=""), "from cli/"),
        (_pkg(env__model="from pytest_rocm.report import records\n", report__records=""), "(layer 1) imports"),
        # relative imports are resolved: env.model's ``..report`` is pytest_rocm.report
        (_pkg(env__model="from ..report import records\n", report__records=""), "(layer 1) imports"),
        (_pkg(env__model="from ..report.records import SCHEMA\n", report__records=""), "(layer 1) imports"),
        # the table's views stand above the report they read: report/ never reaches up to them
        (
            _pkg(report__diff="from pytest_rocm.table.model import Table\n", table__model=""),
            "(layer 2) imports table.model",
        ),
        # the root is a layer: a lower layer reaching it (for __file__, say) stands above plugin/
        (_pkg(vet__live="import pytest_rocm\n", **{"": ""}), "vet.live (layer 3) imports pytest_rocm (layer 5)"),
        (_pkg(vet__live="def f():\n    from pytest_rocm import Environment\n", **{"": ""}), "(layer 3) imports"),
        # the root's lazy table is read as imports
        (_pkg(**{"": '_LAZY = {"x": "pytest_rocm.cli.run"}\n'}, cli__run=""), "from cli/"),
        (
            _pkg(
                report__table="from pytest_rocm.report import html\n",
                report__html="def f():\n    from pytest_rocm.report.table import Table\n",
            ),
            "import cycle: report.html -> report.table -> report.html",
        ),
        # a type-only import is an arrow too: the table <-> oneline circle was one the checker missed
        (
            _pkg(
                table__model="from pytest_rocm.table.oneline import line\n",
                table__oneline="from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pytest_rocm.table.model import Cell\n",
            ),
            "import cycle: table.model -> table.oneline -> table.model",
        ),
        (
            _pkg(
                report__diff="from pytest_rocm.report.diff_text import render\n",
                report__diff_text="import typing\nif typing.TYPE_CHECKING:\n    from .diff import Diff\n",
            ),
            "import cycle: report.diff -> report.diff_text -> report.diff",
        ),
        # ... and an arrow back up, even for the type checker only
        (
            _pkg(
                env__model="from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..report import records\n",
                report__records="",
            ),
            "env.model (layer 1) imports report.records (layer 2)",
        ),
        # the ``else`` of ``if TYPE_CHECKING:`` runs: a heavy import there is a real one
        (
            _pkg(
                report__table="from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    pass\nelse:\n    import pytest\n"
            ),
            "imports pytest at module level outside plugin/",
        ),
    ],
)
def test_a_broken_rule_is_reported(package: dict[str, tuple[str, bool]], expected: str) -> None:
    assert any(expected in v for v in violations(package)), violations(package)


def test_allowed_imports_are_not_reported() -> None:
    package = _pkg(
        env__seam="def load_torch():\n    import torch\n",
        plugin__hooks="import pytest\nfrom pytest_rocm.env import seam\n",
        cli__run="from pytest_rocm.plugin import hooks\n",
        parity__check="import torch\n",
        report__table="from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import torch\n",
    )
    assert violations(package) == []


#: "modules stay small (~300 lines)": past this, the module's docstring says why
MAX_LINES = 330


def long_modules(package: Mapping[str, tuple[str, bool]]) -> list[str]:
    found = []
    for module, (source, _) in package.items():
        lines = source.count("\n")
        docstring = ast.get_docstring(ast.parse(source)) or ""
        if lines > MAX_LINES and "Why this module is long" not in docstring:
            found.append(f"{module}: {lines} lines and no 'Why this module is long' in its docstring")
    return found


def test_no_module_is_long_without_a_reason() -> None:
    assert long_modules(read_package(PACKAGE)) == []


def test_a_long_module_without_a_reason_is_reported() -> None:
    long_source = '"""A module."""\n' + "x = 1\n" * (MAX_LINES + 1)
    excused = '"""A module.\n\nWhy this module is long: a table.\n"""\n' + "x = 1\n" * (MAX_LINES + 1)
    assert long_modules({"report.big": (long_source, False), "report.table": (excused, False)}) == [
        f"report.big: {MAX_LINES + 2} lines and no 'Why this module is long' in its docstring"
    ]
