"""The doctor's one set of checks: pure functions of an Environment and a few extra facts.

Each check answers one question a new AMD user spends a day on, with the evidence it saw and the
fix as a command or a sentence. Every output is derived from these results: ``rocm-compat
doctor`` prints all of them with their fixes, the pytest header and ``rocm-compat env`` print the
one-line form (:attr:`Check.line`) of each problem. Knowledge (published PyTorch/ROCm pairs, APU
targets, override values) comes from data files (``data/doctor.json``, ``data/gfx.json``), never
from code.

The checks live by topic in ``doctor.machine`` (the kernel and the variables: no torch needed) and
``doctor.build`` (torch's build and devices), ``doctor.stack`` (variables, libraries, multi-GPU),
``doctor.ollama_checks`` (Ollama's own ROCm, its gfx and its server log);
the vocabulary (``CheckStatus``, ``Check``,
``Extras``) in ``doctor.model``. Import all of it from here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from pytest_rocm.doctor.build import (
    check_gfx_in_build,
    check_miopen,
    check_mixed_gfx,
    check_pair,
    check_reported_gfx,
    check_torch_build,
    check_torch_devices,
    check_torch_installed,
)
from pytest_rocm.doctor.facts import ROCM_INDEX, knowledge
from pytest_rocm.doctor.machine import (
    check_accelerator,
    check_driver,
    check_igpu,
    check_kfd_access,
    check_memory,
    check_override,
    check_probes,
    check_wsl,
)
from pytest_rocm.doctor.model import MARKS, PROBLEMS, STATUSES, Check, CheckStatus, Extras
from pytest_rocm.doctor.ollama_checks import check_ollama_gfx, check_ollama_gpu, check_ollama_runtime
from pytest_rocm.doctor.stack import (
    check_install_path,
    check_multi_gpu,
    check_rocblas_targets,
    check_rocm_libraries,
    check_triton,
    check_variables,
)
from pytest_rocm.env.model import Environment

__all__ = [
    "CHECKS",
    "MARKS",
    "PROBLEMS",
    "ROCM_INDEX",
    "STATUSES",
    "SYSTEM_CHECKS",
    "Check",
    "CheckFunction",
    "CheckStatus",
    "Extras",
    "diagnose",
    "diagnose_system",
    "knowledge",
    "problem_lines",
    "problems",
]

CheckFunction = Callable[[Environment, Extras], Check]

#: every check, in the order a fault causes the next: the machine, torch, its devices, the rest
CHECKS: tuple[CheckFunction, ...] = (
    check_wsl,
    check_accelerator,
    check_driver,
    check_kfd_access,
    check_torch_installed,
    check_torch_build,
    check_torch_devices,
    check_gfx_in_build,
    check_override,
    check_reported_gfx,
    check_igpu,
    check_mixed_gfx,
    check_pair,
    check_install_path,
    check_rocblas_targets,
    check_triton,
    check_rocm_libraries,
    check_miopen,
    check_memory,
    check_multi_gpu,
    check_ollama_runtime,
    check_ollama_gfx,
    check_ollama_gpu,
    check_variables,
    check_probes,
)

#: the checks that need no torch: what the pytest header can afford before any test asked for torch
SYSTEM_CHECKS: tuple[CheckFunction, ...] = (
    check_wsl,
    check_driver,
    check_kfd_access,
    check_override,
    check_igpu,
    check_memory,
    check_multi_gpu,
    check_variables,
    check_probes,
)


def diagnose(env: Environment, extras: Extras | None = None) -> list[Check]:
    """Run every check. Without ``extras`` (not probed) the checks that need them judge from the
    Environment alone or are skipped: that is how a recorded environment is diagnosed."""
    extras = extras or Extras()
    return [check(env, extras) for check in CHECKS]


def diagnose_system(env: Environment, extras: Extras | None = None) -> list[Check]:
    extras = extras or Extras()
    return [check(env, extras) for check in SYSTEM_CHECKS]


def problems(checks: Iterable[Check]) -> list[Check]:
    return [c for c in checks if c.is_problem]


def problem_lines(checks: Iterable[Check]) -> list[str]:
    """The one-line form of each failing or warning check, in check order: what the pytest header
    and ``rocm-compat env`` print."""
    return [c.line for c in problems(checks)]
