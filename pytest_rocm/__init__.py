"""pytest-rocm: a pytest plugin and compatibility harness for PyTorch on AMD ROCm GPUs.

The public API is what ``__all__`` lists; everything else is internal (the JSON schemas are the
stable interface of the commands: docs/design.md). Importing this package imports neither torch
nor pytest: each name is loaded from its module on first use (PEP 562), so ``import pytest_rocm``
stays cheap when pytest loads the plugin.

- parity: ``assert_parity`` (torch), ``ParityResult``, ``ParityError``, ``DtypeUnsupported``;
- the environment: ``Environment``, ``Device`` (to type the ``rocm_env`` fixture), and for a
  conftest or another plugin ``get_environment(config)``, ``get_device(config)``,
  ``device_string(config)``, ``get_scale(config)`` (the session's ``ci``/``full`` profile, usable in
  ``pytest_generate_tests``);
- for a test or a suite: ``INFO_PROPERTY`` (``record_property(INFO_PROPERTY, {...})`` puts facts
  in the report's ``info``), ``skip_not_installed`` / ``not_installed_reason`` (a skip the report
  counts as ``not-installed``).

``pytest_rocm.parity.strategies`` (hypothesis) stays an explicit import.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:  # for the type checker; at run time __getattr__ loads them on first use
    from pytest_rocm.env.model import Device, Environment
    from pytest_rocm.parity.check import assert_parity
    from pytest_rocm.parity.result import DtypeUnsupported, ParityError, ParityResult
    from pytest_rocm.plugin.scale import get_scale
    from pytest_rocm.plugin.session import device_string, get_device, get_environment
    from pytest_rocm.report.outcomes import INFO_PROPERTY, not_installed_reason

__version__ = "0.1.0"

#: public name -> the module that defines it (imported on first use)
_LAZY: dict[str, str] = {
    "assert_parity": "pytest_rocm.parity.check",
    "ParityResult": "pytest_rocm.parity.result",
    "ParityError": "pytest_rocm.parity.result",
    "DtypeUnsupported": "pytest_rocm.parity.result",
    "Environment": "pytest_rocm.env.model",
    "Device": "pytest_rocm.env.model",
    "get_environment": "pytest_rocm.plugin.session",
    "get_device": "pytest_rocm.plugin.session",
    "device_string": "pytest_rocm.plugin.session",
    "get_scale": "pytest_rocm.plugin.scale",
    "INFO_PROPERTY": "pytest_rocm.report.outcomes",
    "not_installed_reason": "pytest_rocm.report.outcomes",
}

__all__ = [  # written out for the linters; a test holds it to _LAZY
    "INFO_PROPERTY",
    "Device",
    "DtypeUnsupported",
    "Environment",
    "ParityError",
    "ParityResult",
    "__version__",
    "assert_parity",
    "device_string",
    "get_device",
    "get_environment",
    "get_scale",
    "not_installed_reason",
    "skip_not_installed",
]


def skip_not_installed(dist: str, detail: str = "") -> NoReturn:
    """Skip the running test as ``not-installed`` (``not installed: flash_attn (needs >=2.6)``)."""
    import pytest

    from pytest_rocm.report.outcomes import not_installed_reason

    pytest.skip(not_installed_reason(dist, detail))


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_rocm' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once loaded, a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
