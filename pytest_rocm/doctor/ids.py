"""The doctor's check ids: one constant per check, the only place a check id is spelled.

A check id is an interface: the JSON of ``rocm-compat doctor --json``, the one-line form in the
pytest header and ``rocm-compat env``, the ``check`` of a known error (``data/known_errors.json``)
and the docs all name checks by it. The checks write ``ids.TORCH_BUILD``, never the string, so a
typo is a name error and a renamed check is renamed everywhere at once.
"""

from __future__ import annotations

from typing import Final

WSL: Final = "wsl"
ACCELERATOR: Final = "accelerator"
DRIVER: Final = "driver"
KFD_ACCESS: Final = "kfd-access"
TORCH: Final = "torch"
TORCH_BUILD: Final = "torch-build"
TORCH_DEVICES: Final = "torch-devices"
GFX_IN_BUILD: Final = "gfx-in-build"
HSA_OVERRIDE: Final = "hsa-override"
REPORTED_GFX: Final = "reported-gfx"
IGPU: Final = "igpu"
MIXED_GFX: Final = "mixed-gfx"
TORCH_ROCM_PAIR: Final = "torch-rocm-pair"
INSTALL_PATH: Final = "install-path"
ROCBLAS_TARGETS: Final = "rocblas-targets"
TRITON: Final = "triton"
ROCM_LIBRARIES: Final = "rocm-libraries"
MIOPEN_CACHE: Final = "miopen-cache"
MEMORY: Final = "memory"
MULTI_GPU: Final = "multi-gpu"
OLLAMA_RUNTIME: Final = "ollama-runtime"
OLLAMA_GFX: Final = "ollama-gfx"
OLLAMA_GPU: Final = "ollama-gpu"
VARIABLES: Final = "variables"
PROBES: Final = "probes"

#: every check id, in the order ``doctor.checks.CHECKS`` runs the checks
CHECK_IDS: Final[tuple[str, ...]] = (
    WSL,
    ACCELERATOR,
    DRIVER,
    KFD_ACCESS,
    TORCH,
    TORCH_BUILD,
    TORCH_DEVICES,
    GFX_IN_BUILD,
    HSA_OVERRIDE,
    REPORTED_GFX,
    IGPU,
    MIXED_GFX,
    TORCH_ROCM_PAIR,
    INSTALL_PATH,
    ROCBLAS_TARGETS,
    TRITON,
    ROCM_LIBRARIES,
    MIOPEN_CACHE,
    MEMORY,
    MULTI_GPU,
    OLLAMA_RUNTIME,
    OLLAMA_GFX,
    OLLAMA_GPU,
    VARIABLES,
    PROBES,
)
