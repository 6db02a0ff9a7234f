"""Names that mean one thing, and programs that are modules (docs/design.md), checked on the source.

- A word the package once used for two or three things names one module (or doc page) now:
  ``selection`` is the tests a run selected (the device under test is a *device choice*),
  ``scale`` the ``--rocm-scale`` profile (clusters are docs/clusters.md), ``coverage`` the
  boundary coverage (covering arrays, what the boundary rows covered), ``textfile`` reading a file
  the user named; no module is called ``child`` (each says which child: background detection, the
  contained run, capture's command).
- No module of the package is imported under another name (``session as state`` read as a second
  concept beside the plugin's session state).
- No program, stylesheet or script sits in a Python string: they escape ruff, mypy and the reader.
  A program is a module started as ``python -c "from ... import main; main()"`` (one line), a
  stylesheet or script a file in ``data/``.

Each checker also runs on a made-up source that breaks its rule, so it is shown to catch it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "pytest_rocm"

#: word -> the modules, packages and doc pages that may carry it as their name (relative to ROOT)
ONE_MEANING: dict[str, set[str]] = {
    "selection": {"pytest_rocm/report/selection.py"},
    "scale": {"pytest_rocm/plugin/scale.py"},
    "coverage": {
        "pytest_rocm/coverage",
        "docs/coverage.md",
    },
    "textfile": {"pytest_rocm/env/textfile.py"},
    "child": set(),
}


def named(word: str, root: Path = ROOT) -> set[str]:
    """The modules, packages and doc pages called ``word`` under ``root``."""
    found = {p for p in (root / "pytest_rocm").rglob(f"{word}.py")}
    found |= {p for p in (root / "pytest_rocm").rglob(word) if (p / "__init__.py").is_file()}
    found |= {p for p in (root / "docs").glob(f"{word}.md")}
    return {p.relative_to(root).as_posix() for p in found}


@pytest.mark.parametrize("word", sorted(ONE_MEANING))
def test_a_word_names_one_thing(word: str) -> None:
    assert named(word) <= ONE_MEANING[word], f"{word!r} names a second thing: rename it (tests/layout/test_names.py)"


def test_a_second_thing_of_the_same_name_is_seen(tmp_path: Path) -> None:
    for path in ("pytest_rocm/plugin/selection.py", "pytest_rocm/vet/child.py", "docs/scale.md"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("")
    (tmp_path / "pytest_rocm" / "vet" / "__init__.py").write_text("")
    assert named("selection", tmp_path) == {"pytest_rocm/plugin/selection.py"}
    assert named("child", tmp_path) == {"pytest_rocm/vet/child.py"}
    assert named("scale", tmp_path) == {"docs/scale.md"}


def _modules(root: Path) -> set[str]:
    """Dotted names of every module and package under ``root`` (``pytest_rocm.plugin.session``)."""
    names = set()
    for path in root.rglob("*.py"):
        parts = path.relative_to(root.parent).with_suffix("").parts
        names.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def module_aliases(source: str, modules: set[str]) -> list[str]:
    """``import a.b as c`` / ``from a import b as c`` where ``a.b`` is one of ``modules`` and ``c``
    is not its own name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [f"{a.name} as {a.asname}" for a in node.names if a.asname and a.name in modules]
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                if a.asname and a.asname != a.name and f"{node.module}.{a.name}" in modules:
                    found.append(f"{node.module}.{a.name} as {a.asname}")
    return found


def test_no_module_of_the_package_goes_by_another_name() -> None:
    modules = _modules(PACKAGE)
    offenders = {
        path.relative_to(ROOT).as_posix(): aliases
        for path in sorted(PACKAGE.rglob("*.py"))
        if (aliases := module_aliases(path.read_text(encoding="utf-8"), modules))
    }
    assert offenders == {}


def test_a_module_alias_is_seen() -> None:
    modules = {"pytest_rocm.plugin.session", "pytest_rocm.parity.tolerances"}
    source = (
        "from pytest_rocm.plugin import session as state\n"
        "import pytest_rocm.parity.tolerances as tols\n"
        "from pytest_rocm.plugin.session import get_state as state_of\n"  # a function: not a module
        "from pytest_rocm.parity import tolerances\n"
    )
    assert module_aliases(source, modules) == [
        "pytest_rocm.plugin.session as state",
        "pytest_rocm.parity.tolerances as tols",
    ]


_CSS_RULE = re.compile(r"^[^{}\n]*\{[^{}\n]*[a-z-]+\s*:[^{}\n]*\}", re.MULTILINE)
_JS_FUNCTION = re.compile(r"\bfunction\s*[\w$]*\s*\([^)]*\)\s*\{")


def _strings(source: str) -> Iterator[tuple[int, str]]:
    """Every string literal but docstrings (an f-string with its fields as ``X``), by line."""
    tree = ast.parse(source)
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    parts = {id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for v in node.values}
    for node in ast.walk(tree):
        if id(node) in parts:  # a piece of an f-string: read with it
            continue
        if isinstance(node, ast.JoinedStr):
            yield node.lineno, "".join(v.value if isinstance(v, ast.Constant) else "X" for v in node.values)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node.lineno, node.value


def code_in_strings(source: str) -> list[str]:
    """``line: kind`` of each string of three or more lines that is a Python program (it parses and
    imports something), a stylesheet (two rules or more) or a script (a JavaScript function)."""
    found = []
    for line, text in _strings(source):
        if text.count("\n") < 2:
            continue
        try:
            tree = ast.parse(text)
            program = len(tree.body) > 1 and any(isinstance(n, ast.Import | ast.ImportFrom) for n in ast.walk(tree))
        except SyntaxError:
            program = False
        if program:
            found.append(f"{line}: python")
        elif len(_CSS_RULE.findall(text)) >= 2:
            found.append(f"{line}: css")
        elif _JS_FUNCTION.search(text):
            found.append(f"{line}: js")
    return found


def test_no_program_stylesheet_or_script_sits_in_a_string() -> None:
    offenders = {
        path.relative_to(ROOT).as_posix(): found
        for path in sorted(PACKAGE.rglob("*.py"))
        if (found := code_in_strings(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}, "make it a module (python -c 'from ... import main; main()') or a data/ file"


def test_code_in_a_string_is_seen() -> None:
    source = '''
"""A docstring may show code:

    import os
    os.getcwd()
"""
PROGRAM = """
import ctypes, os
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)
os.execvp("true", ["true"])
"""
STYLE = """
body{margin:0}
td.n{text-align:right}
"""
SCRIPT = f"""
function atlasSearch(box, list) {{
  return {1};
}}
"""
START = "import sys; from pkg.mod import main; sys.exit(main())"  # one line: the way to start a module
PROSE = """three lines
of words: {not css}
nothing to run"""
'''
    assert code_in_strings(source) == ["7: python", "12: css", "16: js"]
