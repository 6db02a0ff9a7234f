"""Which library ran (torch): the BLAS library and the SDPA backend, recorded next to a figure.

A ROCm upgrade that falls back from hipBLASLt to hipBLAS, or from the flash SDPA kernel to the
math one, keeps every number right and loses speed; the facts here make that visible in the
report. ``blas_facts`` reads what torch says it prefers (``preferred_blas_library``), the
variable that steers it (``TORCH_BLAS_PREFER_HIPBLASLT``) and whether TunableOp is on;
``kernel_names`` lists the kernels (and ATen ops) one call ran, from the profiler, and the pure
``sdpa_backend_from_names`` names the SDPA backend among them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

import torch

#: substrings of an ATen op or kernel name -> the SDPA backend (first match wins: specific first)
SDPA_MARKERS: tuple[tuple[str, str], ...] = (
    ("cudnn_attention", "cudnn"),
    ("flash_attention", "flash"),
    ("flash_fwd", "flash"),
    ("fmha", "efficient"),
    ("efficient_attention", "efficient"),
    ("mem_eff", "efficient"),
    ("_scaled_dot_product_attention_math", "math"),
)


def blas_facts(device: torch.device | str) -> dict[str, Any]:
    """``{"blas": "hipblaslt"|"cublas"|"cublaslt"|"mkl"|..., "TORCH_BLAS_PREFER_HIPBLASLT": ...,
    "tunableop": bool}`` for ``device``, as far as this torch can tell."""
    where = torch.device(device)
    facts: dict[str, Any] = {"torch": str(torch.__version__)}  # a TorchVersion (str subclass) xdist cannot send
    if where.type == "cuda":
        preferred = getattr(torch.backends.cuda, "preferred_blas_library", None)
        if preferred is not None:
            facts["blas"] = str(preferred()).rsplit(".", 1)[-1].lower()  # _BlasBackend.Cublaslt
        facts["TORCH_BLAS_PREFER_HIPBLASLT"] = os.environ.get("TORCH_BLAS_PREFER_HIPBLASLT")
        tunable = getattr(getattr(torch.cuda, "tunable", None), "is_enabled", None)
        facts["tunableop"] = bool(tunable()) if tunable is not None else None
    else:
        facts["blas"] = "mkl" if torch.backends.mkl.is_available() else "cpu"  # type: ignore[no-untyped-call]
        facts["mkldnn"] = bool(torch.backends.mkldnn.is_available())  # type: ignore[no-untyped-call]
        facts["threads"] = torch.get_num_threads()
    return facts


def kernel_names(fn: Callable[[], Any]) -> list[str]:
    """The names of the ops and kernels one call of ``fn`` ran (torch.profiler), in order."""
    activities = [torch.profiler.ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=activities) as prof:
        fn()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
    return [event.name for event in prof.events()]


def sdpa_backend_from_names(names: Iterable[str]) -> str | None:
    """The SDPA backend the names show (``flash``, ``efficient``, ``cudnn``, ``math``); None when
    none of them is an attention kernel. Pure."""
    lowered = [n.lower() for n in names]
    for marker, backend in SDPA_MARKERS:
        if any(marker in n for n in lowered):
            return backend
    return None
