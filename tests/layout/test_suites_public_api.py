"""The bundled suites are the examples users copy: they import pytest-rocm only through its
public API (``from pytest_rocm import NAME``, NAME in ``__all__``) and the one module of suite
support (``from pytest_rocm.suite_support import NAME``, NAME in its ``__all__``), checked on the
source with ``ast``; and the user API holds nothing that only the suites use."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import pytest_rocm
import pytest_rocm.suite_support

SUITES = Path(__file__).resolve().parents[2] / "suites"
#: documented explicit imports beside the root (hypothesis strategies: docs/parity.md)
EXPLICIT_MODULES = frozenset({"pytest_rocm.parity.strategies"})
#: the module the suites may import besides the root, and what it offers
SUPPORT = "pytest_rocm.suite_support"
SUPPORT_NAMES = frozenset(pytest_rocm.suite_support.__all__)


def internal_imports(source: str, where: str, public: frozenset[str]) -> list[str]:
    """Each import of pytest-rocm that is not ``from pytest_rocm import <public name>`` or
    ``from pytest_rocm.suite_support import <one of its names>``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                if top == "pytest_rocm" and alias.name not in {"pytest_rocm", *EXPLICIT_MODULES}:
                    found.append(f"{where}:{node.lineno}: import {alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] != "pytest_rocm" or node.module in EXPLICIT_MODULES:
                continue
            if node.module == SUPPORT:
                found.extend(
                    f"{where}:{node.lineno}: {alias.name} is not in {SUPPORT}.__all__"
                    for alias in node.names
                    if alias.name not in SUPPORT_NAMES
                )
                continue
            if node.module != "pytest_rocm":
                found.append(f"{where}:{node.lineno}: from {node.module} import ... (internal)")
                continue
            found.extend(
                f"{where}:{node.lineno}: {alias.name} is not in pytest_rocm.__all__"
                for alias in node.names
                if alias.name not in public
            )
    return found


def test_the_suites_import_only_the_public_api() -> None:
    public = frozenset(pytest_rocm.__all__)
    files = sorted(SUITES.rglob("*.py"))
    assert len(files) > 20  # the suites are where this test thinks they are
    found = [
        v for p in files for v in internal_imports(p.read_text(encoding="utf-8"), str(p.relative_to(SUITES)), public)
    ]
    assert found == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from pytest_rocm.report.outcomes import INFO_PROPERTY\n", "from pytest_rocm.report.outcomes import"),
        ("def f():\n    from pytest_rocm.env.seam import distribution_version\n", "from pytest_rocm.env.seam"),
        ("import pytest_rocm.plugin.scale\n", "import pytest_rocm.plugin.scale"),
        ("from pytest_rocm import _LAZY\n", "_LAZY is not in pytest_rocm.__all__"),
        ("from pytest_rocm import kernel_names\n", "kernel_names is not in pytest_rocm.__all__"),
        ("from pytest_rocm.suite_support import _LAZY\n", "_LAZY is not in pytest_rocm.suite_support.__all__"),
        ("from pytest_rocm.suite_support import INFO_PROPERTY\n", "INFO_PROPERTY is not in pytest_rocm.suite_support"),
        ("import pytest_rocm.suite_support\n", "import pytest_rocm.suite_support"),
    ],
)
def test_an_internal_import_is_reported(source: str, expected: str) -> None:
    found = internal_imports(source, "x.py", frozenset(pytest_rocm.__all__))
    assert len(found) == 1 and expected in found[0], found


def test_public_imports_are_not_reported() -> None:
    source = (
        "from pytest_rocm import INFO_PROPERTY, scale_cases\n"
        "from pytest_rocm.parity.strategies import shapes\n"
        "from pytest_rocm.suite_support import BOUNDARY_CATALOGUE, kernel_names\n"
        "import pytest_rocm\n"
        "from . import tiny\n"
    )
    assert internal_imports(source, "x.py", frozenset(pytest_rocm.__all__)) == []


def test_the_user_api_and_suite_support_do_not_overlap() -> None:
    # one home for each name: a user's name at the root, a suite's name in suite_support
    assert set(pytest_rocm.__all__).isdisjoint(SUPPORT_NAMES)


def test_every_name_of_suite_support_is_used_by_a_suite() -> None:
    # suite support holds what the suites use, not a second public API
    sources = "\n".join(p.read_text(encoding="utf-8") for p in sorted(SUITES.rglob("*.py")))
    unused = sorted(n for n in SUPPORT_NAMES if not re.search(rf"\b{re.escape(n)}\b", sources))
    assert unused == []


def test_docs_public_api_table_lists_the_user_api_and_not_suite_support() -> None:
    # the user API is what docs/plugin.md's table documents for users; the suites' names are
    # documented apart, as suite support, never as a user's name
    page = (Path(__file__).resolve().parents[2] / "docs" / "plugin.md").read_text(encoding="utf-8")
    api = page.split("## The public API", 1)[1].split("\n## ", 1)[0]
    table = "\n".join(line for line in api.splitlines() if line.startswith("|"))
    missing = sorted(n for n in pytest_rocm.__all__ if n != "__version__" and f"`{n}`" not in table)
    assert missing == [], "public names that docs/plugin.md's public API table does not list"
    assert sorted(n for n in SUPPORT_NAMES if f"`{n}`" in table) == []
    assert all(f"`{n}`" in api for n in SUPPORT_NAMES)  # named there, under suite support
