"""pytest-rocm: a pytest plugin and compatibility harness for PyTorch on AMD ROCm GPUs.

The public API is what ``__all__`` lists; everything else is internal (the JSON schemas are the
stable interface of the commands: docs/design.md). Importing this package imports neither torch
nor pytest: each name is loaded from its module on first use (PEP 562), so ``import pytest_rocm``
stays cheap when pytest loads the plugin.

- parity: ``assert_parity`` (torch), ``ParityOptions`` (how it judges, as one object),
  ``ParityResult``, ``ParityError``, ``DtypeUnsupported``;
- the environment: ``Environment``, ``Device`` (to type the ``rocm_env`` fixture), and for a
  conftest or another plugin ``get_environment(config)``, ``get_device(config)``,
  ``device_string(config)``, ``get_scale(config)`` (the session's ``ci``/``full`` profile, usable in
  ``pytest_generate_tests``);
- for a test or a suite: ``INFO_PROPERTY`` (``record_property(INFO_PROPERTY, {...})`` puts facts
  in the report's ``info``), ``PARITY_PROPERTY`` (parity records of a test that compares by
  itself), ``skip_not_installed`` / ``not_installed_reason`` (a skip the report counts as
  ``not-installed``), ``distribution_version`` (an installed distribution's version, never
  importing it);
- tolerances: ``DEFAULT_DTYPES``, ``LOW_PRECISION_DTYPES``, ``EPS`` (machine epsilon per dtype),
  ``default_tolerance(dtype, reduction_length)``;
- the backend: ``torch_backend(torch)`` (what the build is for), ``device_backend(device, torch)``;
- scale: ``scale_cases("case", {id: (ci_value, full_value)})`` (the ``rocm_scaled`` marker from a
  table; ``pytest_rocm.plugin.scale.cases``);
- workloads: ``capture()`` (torch), a context manager that records the distinct aten op calls of
  its block for ``--rocm-workload`` (docs/workload.md).

``pytest_rocm.parity.strategies`` (hypothesis) stays an explicit import. What only the bundled
suites use (the boundary catalogue, SDPA helpers, llama.cpp's install line) is in
``pytest_rocm.suite_support``: support for the suites, not a user API.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NoReturn

from pytest_rocm._lazy import lazy_attributes
from pytest_rocm._resources import VERSION as __version__  # stdlib only, cheap

if TYPE_CHECKING:  # for the type checker; at run time __getattr__ loads them on first use
    from pytest_rocm.env.model import Device, Environment, device_backend, torch_backend
    from pytest_rocm.env.seam import distribution_version
    from pytest_rocm.parity.check import assert_parity
    from pytest_rocm.parity.options import ParityOptions
    from pytest_rocm.parity.result import DtypeUnsupported, ParityError, ParityResult
    from pytest_rocm.parity.tolerances import DEFAULT_DTYPES, EPS, LOW_PRECISION_DTYPES, default_tolerance
    from pytest_rocm.plugin.scale import cases as scale_cases
    from pytest_rocm.plugin.scale import get_scale
    from pytest_rocm.plugin.session import device_string, get_device, get_environment
    from pytest_rocm.report.outcomes import INFO_PROPERTY, PARITY_PROPERTY, not_installed_reason
    from pytest_rocm.workload.capture import capture


#: public name -> the module that defines it, ``module:attribute`` where the names differ
#: (imported on first use)
_LAZY: dict[str, str] = {
    "assert_parity": "pytest_rocm.parity.check",
    "ParityOptions": "pytest_rocm.parity.options",
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
    "PARITY_PROPERTY": "pytest_rocm.report.outcomes",
    "not_installed_reason": "pytest_rocm.report.outcomes",
    "distribution_version": "pytest_rocm.env.seam",
    "DEFAULT_DTYPES": "pytest_rocm.parity.tolerances",
    "LOW_PRECISION_DTYPES": "pytest_rocm.parity.tolerances",
    "EPS": "pytest_rocm.parity.tolerances",
    "default_tolerance": "pytest_rocm.parity.tolerances",
    "torch_backend": "pytest_rocm.env.model",
    "device_backend": "pytest_rocm.env.model",
    "scale_cases": "pytest_rocm.plugin.scale:cases",
    "capture": "pytest_rocm.workload.capture",
}

__all__ = [  # written out for the linters; a test holds it to _LAZY
    "DEFAULT_DTYPES",
    "EPS",
    "INFO_PROPERTY",
    "LOW_PRECISION_DTYPES",
    "PARITY_PROPERTY",
    "Device",
    "DtypeUnsupported",
    "Environment",
    "ParityError",
    "ParityOptions",
    "ParityResult",
    "__version__",
    "assert_parity",
    "capture",
    "default_tolerance",
    "device_backend",
    "device_string",
    "distribution_version",
    "get_device",
    "get_environment",
    "get_scale",
    "not_installed_reason",
    "scale_cases",
    "skip_not_installed",
    "torch_backend",
]


def skip_not_installed(dist: str, detail: str = "") -> NoReturn:
    """Skip the running test as ``not-installed`` (``not installed: flash_attn (needs >=2.6)``)."""
    import pytest

    from pytest_rocm.report.outcomes import not_installed_reason

    pytest.skip(not_installed_reason(dist, detail))


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, __all__)
