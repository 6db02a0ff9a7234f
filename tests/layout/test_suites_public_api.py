"""The bundled suites are the examples users copy: they import pytest-rocm only through its
public API (``from pytest_rocm import NAME``, NAME in ``__all__``), checked on the source with ``ast``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import pytest_rocm

SUITES = Path(__file__).resolve().parents[2] / "suites"
#: documented explicit imports beside the root (hypothesis strategies: docs/parity.md)
EXPLICIT_MODULES = frozenset({"pytest_rocm.parity.strategies"})


def internal_imports(source: str, where: str, public: frozenset[str]) -> list[str]:
    """Each import of pytest-rocm that is not ``from pytest_rocm import <public name>``."""
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
    ],
)
def test_an_internal_import_is_reported(source: str, expected: str) -> None:
    found = internal_imports(source, "x.py", frozenset(pytest_rocm.__all__))
    assert len(found) == 1 and expected in found[0], found


def test_public_imports_are_not_reported() -> None:
    source = (
        "from pytest_rocm import INFO_PROPERTY, scale_cases\n"
        "from pytest_rocm.parity.strategies import shapes\n"
        "import pytest_rocm\n"
        "from . import tiny\n"
    )
    assert internal_imports(source, "x.py", frozenset(pytest_rocm.__all__)) == []
