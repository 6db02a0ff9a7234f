"""The files that ship with the package: the knowledge data, the pages' stylesheets and scripts,
the bundled suites, the matrix.

One loader, so every module reads ``data/*.json`` the same way and each file is parsed once.
Stdlib only: every layer may import this module.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

PACKAGE_DIR = Path(__file__).resolve().parent

#: the tool's version (``pytest_rocm.__version__`` is this one; pyproject.toml's must match): every
#: report records it, and the layers below the root read it here
VERSION = "0.1.0"


@cache
def load_json(name: str) -> Any:
    """``data/<name>`` parsed (``gfx.json``, ``doctor.json``, ``known_errors.json``); cached."""
    text = resources.files("pytest_rocm").joinpath("data").joinpath(name).read_text(encoding="utf-8")
    return json.loads(text)


@cache
def load_text(name: str) -> str:
    """``data/<name>`` as text: the stylesheets and scripts the HTML pages carry (``table.css``,
    ``atlas.js``). Files, not Python strings, so they are read (and linted) as what they are."""
    return resources.files("pytest_rocm").joinpath("data").joinpath(name).read_text(encoding="utf-8")


def bundled_suites() -> Path:
    """suites/ beside the package in a checkout, else the copy shipped in the wheel."""
    checkout = PACKAGE_DIR.parent / "suites"
    return checkout if checkout.is_dir() else PACKAGE_DIR / "_suites"


def default_combos_path() -> Path:
    """The current directory's matrix/combos.toml (the user's project), else the one of the
    pytest-rocm checkout this module runs from (an editable install), else the copy the wheel
    ships (``pytest_rocm/_matrix/combos.toml``)."""
    here = Path("matrix/combos.toml")
    for candidate in (here, PACKAGE_DIR.parent / "matrix" / "combos.toml", PACKAGE_DIR / "_matrix" / "combos.toml"):
        if candidate.exists():
            return candidate
    return here
