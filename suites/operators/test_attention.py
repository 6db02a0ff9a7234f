"""scaled_dot_product_attention through each backend, chosen explicitly with sdpa_kernel.

Which backends a device offers depends on the build, the architecture (on ROCm, flash and
memory-efficient come from AOTriton, historically only for gfx90a/gfx942) and the dtype. Asking for
a backend and getting an answer proves little: torch may still run another one. So each test also
records which backend *ran*, read from the aten op the profiler saw:

    aten::_scaled_dot_product_attention_math          -> math
    aten::_scaled_dot_product_flash_attention[_for_cpu] -> flash
    aten::_scaled_dot_product_efficient_attention     -> efficient
    aten::_scaled_dot_product_cudnn_attention         -> cudnn

A backend that is not available for this device and dtype is a skip naming backend, dtype and
device (with torch's own warning when it gave one), never a failure.
"""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn.functional as F
from opsupport import backend_of, check, describe_device, dtypes, is_reference, randn
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.profiler import ProfilerActivity, profile

BACKENDS: dict[str, SDPBackend] = {
    "math": SDPBackend.MATH,
    "flash": SDPBackend.FLASH_ATTENTION,
    "efficient": SDPBackend.EFFICIENT_ATTENTION,
    "cudnn": SDPBackend.CUDNN_ATTENTION,
}

# Longest names first: "flash_attention_for_cpu" must not be read as plain flash's op by accident.
_KERNEL_OPS: tuple[tuple[str, str], ...] = (
    ("_scaled_dot_product_flash_attention_for_cpu", "flash"),
    ("_scaled_dot_product_flash_attention", "flash"),
    ("_scaled_dot_product_efficient_attention", "efficient"),
    ("_scaled_dot_product_cudnn_attention", "cudnn"),
    ("_scaled_dot_product_fused_attention_overrideable", "overrideable"),
    ("_scaled_dot_product_attention_math", "math"),
)

# (batch, heads, sequence, head_dim): head_dim 32 is inside every fused backend's limits.
Q, K, V = randn(2, 3, 16, 32, seed=1), randn(2, 3, 16, 32, seed=2), randn(2, 3, 16, 32, seed=3)


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def backend_that_ran(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> str | None:
    """Run attention once under the profiler and name the backend whose aten op executed."""
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        attention(q, k, v)
    names = {event.key.removeprefix("aten::") for event in prof.key_averages()}
    for op, backend in _KERNEL_OPS:
        if op in names:
            return backend
    return None


def _inputs(dtype: str, device: torch.device) -> tuple[torch.Tensor, ...]:
    return tuple(t.to(device=device, dtype=getattr(torch, dtype)) for t in (Q, K, V))


# What torch raises when no kernel of the requested backends accepts the inputs (it warns why).
_NOT_OFFERED = ("No available kernel", "No viable backend")


def availability(backend: str, dtype: str, device: torch.device) -> str | None:
    """None when `backend` runs this attention on this device and dtype, else why not.

    Only torch's own "no kernel for these inputs" counts as not offered: a backend that was picked
    and then failed (``HIP error: invalid device function`` on a gfx its kernels were not built
    for) raises, so the test fails: that is the incompatibility the table must show.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with sdpa_kernel(BACKENDS[backend]):
                attention(*_inputs(dtype, device))
        except RuntimeError as error:
            if not any(marker in str(error) for marker in _NOT_OFFERED):
                raise
            why = [
                str(w.message).splitlines()[0]
                for w in caught
                if "kernel not used" in str(w.message) or "because" in str(w.message)
            ]
            return "; ".join(why) or str(error).splitlines()[0]
    return None


def offered(dtype: str, device: torch.device) -> list[str]:
    """The backends that run here; one that fails outright is not offered (its own row fails)."""
    names = []
    for name in BACKENDS:
        try:
            if availability(name, dtype, device) is None:
                names.append(name)
        except RuntimeError:
            pass
    return names


@dtypes
@pytest.mark.parametrize("backend", list(BACKENDS))
def test_sdpa(backend: str, dtype: str, parity, rocm_device: torch.device, record_property) -> None:
    why_not = availability(backend, dtype, rocm_device)
    if why_not is not None:
        pytest.skip(f"SDPA backend {backend} is not available for {dtype} on {describe_device(rocm_device)}: {why_not}")
    with sdpa_kernel(BACKENDS[backend]):
        ran = backend_that_ran(*_inputs(dtype, rocm_device))
    record_property("rocm_info", {"backend": backend_of(rocm_device), "sdpa_requested": backend, "sdpa_ran": ran})
    assert ran == backend, f"sdpa_kernel({backend}) ran the {ran} backend instead ({dtype})"

    def restricted(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        if is_reference(q):  # the float64 CPU reference may use whatever the CPU offers
            return attention(q, k, v)
        with sdpa_kernel(BACKENDS[backend]):
            return attention(q, k, v)

    check(parity, rocm_device, f"sdpa[{backend}]", restricted, Q, K, V, dtype=dtype)


@dtypes
def test_sdpa_default(dtype: str, parity, rocm_device: torch.device, record_property) -> None:
    """No sdpa_kernel: record what the device offers and which backend torch picks by itself."""
    ran = backend_that_ran(*_inputs(dtype, rocm_device))
    record_property(
        "rocm_info",
        {"backend": backend_of(rocm_device), "sdpa_offered": offered(dtype, rocm_device), "sdpa_default": ran},
    )
    assert ran is not None, f"no known SDPA backend op seen in the profile ({dtype})"
    check(parity, rocm_device, "sdpa[default]", attention, Q, K, V, dtype=dtype)
