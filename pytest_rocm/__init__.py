"""pytest-rocm: a pytest plugin and compatibility harness for PyTorch on AMD ROCm GPUs.

Importing this package never imports torch: ``assert_parity`` and friends are loaded on first use.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

__all__ = ["DtypeUnsupported", "ParityError", "ParityResult", "__version__", "assert_parity"]


def __getattr__(name: str) -> Any:
    # Lazy: the parity module imports torch, which must not happen when pytest loads the plugin.
    if name == "assert_parity":
        from pytest_rocm.parity import check as parity

        return parity.assert_parity
    if name in ("ParityResult", "ParityError", "DtypeUnsupported"):
        from pytest_rocm.parity import (
            result as parity_result,  # no torch needed for the result types
        )

        return getattr(parity_result, name)
    raise AttributeError(f"module 'pytest_rocm' has no attribute {name!r}")
