"""Numerical parity: the device's results against a CPU float64 reference (docs/parity.md).

``check`` (``assert_parity``) and ``metrics`` import torch; ``result`` (ParityResult, ParityError,
the record the report stores) and ``tolerances`` (dtype tables, default tolerances, the
``tolerance`` marker's values) are torch-free, so the plugin and the report can use them without
torch. ``strategies`` (hypothesis) is an explicit import that the plugin never makes.
"""

from __future__ import annotations

from typing import Any

#: ``from pytest_rocm.parity import assert_parity`` (documented): loaded on first use, since it
#: imports torch and this package must not
_LAZY = {"assert_parity": "check", "ParityResult": "result", "ParityError": "result", "DtypeUnsupported": "result"}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'pytest_rocm.parity' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"pytest_rocm.parity.{_LAZY[name]}"), name)
