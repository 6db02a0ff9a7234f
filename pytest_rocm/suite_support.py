"""Support for the bundled suites (``suites/``): not a user API, and it may change in any release.

The suites are the examples users copy, so they import pytest-rocm only through the package root
(``from pytest_rocm import ...``, the user API) and this one module, which gathers what only the
suites need: the boundary suite's catalogue, the attention and perf suites' SDPA helpers, the
llama.cpp row's install line. A test holds the suites to that (tests/layout/test_suites_public_api.py).

- operators/test_boundary.py: ``BOUNDARY_CATALOGUE`` (the boundary dimensions per op,
  docs/coverage.md) and ``boundary_row_id(row)`` (a covering-array row's test id, ``m1-k65``);
- operators/test_boundary_device.py: ``BOUNDARY_DEVICE_ROWS`` (the device profile's rows with their
  shapes and memory cost) and ``gib(n)`` (a byte count as the cost reads it);
- operators/boundary.py, boundary_ops.py: ``ELEMENTWISE_DEFAULTS`` and
  ``default_normwise(dtype, k)`` (the parity tolerances a row's bound is built from, so a bound the
  suite widens starts where assert_parity's default does) and ``CONV3D_SIDE_CAP`` (the conv3d
  input side the catalogue's geometry rule assumes, so the builder and the excluded rows agree);
- operators/test_attention.py: ``sdpa_not_offered_hint(arch, variables)`` (why flash/efficient
  SDPA is not offered on this machine, or ``None``);
- operators/test_perf.py: ``kernel_names(fn)`` (torch: the kernels a call ran, from the profiler)
  and ``sdpa_backend_from_names(names)`` (the SDPA backend those names show);
- libraries/test_llama_cpp.py: ``llama_cpp_install_line(backend, gfx)`` (the pip line that builds
  llama-cpp-python for a ``rocm``/``cuda``/``cpu`` machine, docs/inference.md);
- corpus/: ``reproducer_sample(db, name, variant, dtype, sample, torch_version, passed)`` (a block
  whose parity calls come from that OpInfo/ModuleInfo sample: a failure's reproducer rebuilds it).

Each name is loaded from its module on first use (PEP 562), as the root does, so importing this
module imports neither torch nor pytest: a suite that needs only the catalogue, or a machine
without torch collecting the llama.cpp row, does not pay for the profiler.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_rocm._lazy import lazy_attributes

if TYPE_CHECKING:  # for the type checker; at run time __getattr__ loads them on first use
    from pytest_rocm.coverage.catalogue import BOUNDARY_CATALOGUE, boundary_row_id
    from pytest_rocm.coverage.catalogue_device import DEVICE_ROWS as BOUNDARY_DEVICE_ROWS
    from pytest_rocm.coverage.catalogue_device import gib
    from pytest_rocm.coverage.geometry import CONV3D_SIDE_CAP
    from pytest_rocm.doctor.facts import sdpa_not_offered_hint
    from pytest_rocm.parity.origin import reproducer_sample
    from pytest_rocm.parity.tolerances import ELEMENTWISE_DEFAULTS, default_normwise
    from pytest_rocm.perf.backend import kernel_names, sdpa_backend_from_names
    from pytest_rocm.setup.llama import install_line as llama_cpp_install_line

#: name -> the module that defines it, ``module:attribute`` where the names differ (imported on first use)
_LAZY: dict[str, str] = {
    "BOUNDARY_CATALOGUE": "pytest_rocm.coverage.catalogue",
    "boundary_row_id": "pytest_rocm.coverage.catalogue",
    "BOUNDARY_DEVICE_ROWS": "pytest_rocm.coverage.catalogue_device:DEVICE_ROWS",
    "gib": "pytest_rocm.coverage.catalogue_device",
    "sdpa_not_offered_hint": "pytest_rocm.doctor.facts",
    "kernel_names": "pytest_rocm.perf.backend",
    "sdpa_backend_from_names": "pytest_rocm.perf.backend",
    "llama_cpp_install_line": "pytest_rocm.setup.llama:install_line",
    "reproducer_sample": "pytest_rocm.parity.origin",
    "ELEMENTWISE_DEFAULTS": "pytest_rocm.parity.tolerances",
    "default_normwise": "pytest_rocm.parity.tolerances",
    "CONV3D_SIDE_CAP": "pytest_rocm.coverage.geometry",
}

__all__ = [  # written out for the linters; a test holds it to _LAZY
    "BOUNDARY_CATALOGUE",
    "BOUNDARY_DEVICE_ROWS",
    "CONV3D_SIDE_CAP",
    "ELEMENTWISE_DEFAULTS",
    "boundary_row_id",
    "default_normwise",
    "gib",
    "kernel_names",
    "llama_cpp_install_line",
    "reproducer_sample",
    "sdpa_backend_from_names",
    "sdpa_not_offered_hint",
]


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, __all__)
