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

import os
import warnings
from collections.abc import Callable

import pytest
import shapes
import torch
import torch.nn.functional as F
from cpu_limits import mark_known_limit
from opsupport import backend_of, check, describe_device, dtypes, eps_tolerances, is_reference, randn
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.profiler import ProfilerActivity, profile

from pytest_rocm import INFO_PROPERTY
from pytest_rocm.suite_support import sdpa_not_offered_hint

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


def _ran(prof: profile) -> str | None:
    names = {event.key.removeprefix("aten::") for event in prof.key_averages()}
    for op, backend in _KERNEL_OPS:
        if op in names:
            return backend
    return None


def backend_that_ran(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> str | None:
    """Run attention once under the profiler and name the backend whose aten op executed."""
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        attention(q, k, v)
    return _ran(prof)


def _arch_of(device: torch.device) -> str:
    """The device's gcnArchName on ROCm ("" elsewhere)."""
    if device.type != "cuda" or not torch.version.hip:
        return ""
    return str(torch.cuda.get_device_properties(device).gcnArchName)


def _inputs(dtype: str, device: torch.device) -> tuple[torch.Tensor, ...]:
    return tuple(t.to(device=device, dtype=getattr(torch, dtype)) for t in (Q, K, V))


# What torch raises when no kernel of the requested backends accepts the inputs (it warns why).
_NOT_OFFERED = ("No available kernel", "No viable backend")


def run_backend(backend: str, fn: Callable[..., torch.Tensor], *args: torch.Tensor) -> tuple[str | None, str | None]:
    """Run ``fn`` once with only ``backend`` allowed, under the profiler: ``(backend that ran, None)``,
    or ``(None, why not)`` when the backend is not offered for these inputs.

    Only torch's own "no kernel for these inputs" counts as not offered: a backend that was picked
    and then failed (``HIP error: invalid device function`` on a gfx its kernels were not built
    for) raises, so the test fails: that is the incompatibility the table must show.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with sdpa_kernel(BACKENDS[backend]), profile(activities=[ProfilerActivity.CPU]) as prof:
                fn(*args)
        except RuntimeError as error:
            if not any(marker in str(error) for marker in _NOT_OFFERED):
                raise
            why = [
                str(w.message).splitlines()[0]
                for w in caught
                if "kernel not used" in str(w.message) or "because" in str(w.message)
            ]
            return None, "; ".join(why) or str(error).splitlines()[0]
    return _ran(prof), None


def availability(backend: str, dtype: str, device: torch.device) -> str | None:
    """None when `backend` runs this attention on this device and dtype, else why not (see run_backend)."""
    return run_backend(backend, attention, *_inputs(dtype, device))[1]


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
        # RDNA3/3.5/4: flash/efficient are off unless TORCH_ROCM_AOTRITON_ENABLE_EXPERIMENTAL=1 (doctor.json)
        hint = sdpa_not_offered_hint(_arch_of(rocm_device), os.environ) if backend in ("flash", "efficient") else None
        reason = f"SDPA backend {backend} is not available for {dtype} on {describe_device(rocm_device)}: {why_not}"
        pytest.skip(reason + (f" ({hint})" if hint else ""))
    with sdpa_kernel(BACKENDS[backend]):
        ran = backend_that_ran(*_inputs(dtype, rocm_device))
    record_property(INFO_PROPERTY, {"backend": backend_of(rocm_device), "sdpa_requested": backend, "sdpa_ran": ran})
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
        INFO_PROPERTY,
        {"backend": backend_of(rocm_device), "sdpa_offered": offered(dtype, rocm_device), "sdpa_default": ran},
    )
    assert ran is not None, f"no known SDPA backend op seen in the profile ({dtype})"
    check(parity, rocm_device, "sdpa[default]", attention, Q, K, V, dtype=dtype)


# -- the sweep: head dims, masks, GQA, layouts, sequence lengths (shapes.ATTENTION) ---------------
# Forward with the default table. Backward with 16 eps normwise in fp16/bf16: the gradient
# dS = P * (dP - rowsum(dO * O)) cancels, kernels round P (and fused ones dS) to the dtype before the
# gradient GEMMs over the sequence, and GQA sums the k/v gradients over the query group. The math
# backend (torch 2.13, CPU) needs at most 3 eps at the ci shapes and 11 eps at the full ones (8192
# tokens, GQA 7, the fused-qkv slices); the CPU's flash kernel 13 eps at ci (gqa7, fp16), but 30 to
# 128 eps at full size: its k/v gradients lose precision with sequence length and group size, which
# the full rows report (docs/operators.md). Wrong kernels (masks, head mapping, garbage) are off by
# O(1) of the gradient's rms: hundreds of eps.
SWEEP_GRAD_TOLERANCES = eps_tolerances(normwise_eps=16)


def sweep_inputs(a: shapes.Attention) -> tuple[torch.Tensor, ...]:
    """CPU inputs of one sweep row, in the layout ``sweep_call`` turns into views: q, k, v (or one
    fused qkv), then the mask as an integer/bool tensor (built into a float mask in the run's dtype
    by sweep_call, so parity neither casts it nor asks for its gradient: models never train masks)."""
    b, hq, hk, sq, sk, d = a.batch, a.heads, a.kv_heads, a.seq_q, a.seq_k, a.head_dim
    if a.layout == "sliced":
        out: list[torch.Tensor] = [randn(b, sq, (hq + 2 * hk) * d, seed=1)]
    elif a.layout == "transposed":
        out = [randn(b, sq, hq, d, seed=1), randn(b, sk, hk, d, seed=2), randn(b, sk, hk, d, seed=3)]
    elif a.layout == "v_transposed":
        out = [randn(b, hq, sq, d, seed=1), randn(b, hk, sk, d, seed=2), randn(b, sk, hk, d, seed=3)]
    else:
        out = [randn(b, hq, sq, d, seed=1), randn(b, hk, sk, d, seed=2), randn(b, hk, sk, d, seed=3)]
    if a.mask != "none":
        i = torch.arange(sq).view(sq, 1) + (sk - sq)  # query positions, aligned to the last key
        j = torch.arange(sk).view(1, sk)
        allowed = torch.ones(b, 1, sq, sk, dtype=torch.bool)
        allowed[-1, :, :, sk - sk // 4 :] = False  # the last sequence is padded
        if a.causal:
            allowed &= j <= i
        if a.mask == "bool":
            out.append(allowed)
        else:  # a relative-position bias in steps of 0.5 (exact in every dtype), -128: padding
            code = (-(i - j).abs() % 9).to(torch.int8).expand(b, 1, sq, sk).clone()
            out.append(code.masked_fill_(~allowed, -128))
    return tuple(out)


def sweep_call(a: shapes.Attention) -> Callable[..., torch.Tensor]:
    """``fn(*sweep_inputs(a))``: builds the views, the mask and the GQA form, then calls SDPA."""
    hq, hk, d = a.heads, a.kv_heads, a.head_dim

    def fn(*inputs: torch.Tensor) -> torch.Tensor:
        if a.layout == "sliced":
            qkv, *rest = inputs
            b, s = qkv.shape[:2]
            q, k, v = qkv.split([hq * d, hk * d, hk * d], dim=-1)
            q, k, v = (t.view(b, s, -1, d).transpose(1, 2) for t in (q, k, v))
        else:
            q, k, v, *rest = inputs
            if a.layout == "transposed":
                q, k, v = (t.transpose(1, 2) for t in (q, k, v))
            elif a.layout == "v_transposed":
                v = v.transpose(1, 2)
        if a.gqa == "repeat":
            k, v = (t.repeat_interleave(hq // hk, dim=1) for t in (k, v))
        options: dict[str, object] = {"enable_gqa": True} if a.gqa == "enable_gqa" else {}
        if rest:
            (mask,) = rest
            if mask.dtype != torch.bool:
                code = mask
                mask = (code.to(q.dtype) * 0.5).masked_fill(code == -128, float("-inf"))
            options["attn_mask"] = mask
        elif a.causal:
            options["is_causal"] = True
        return F.scaled_dot_product_attention(q, k, v, **options)

    return fn


@dtypes
@pytest.mark.parametrize("backend", list(BACKENDS))
@shapes.marker("case", shapes.ATTENTION)
def test_sdpa_sweep(
    case: shapes.Row,
    backend: str,
    dtype: str,
    parity,
    rocm_device: torch.device,
    rocm_scale: str,
    record_property,
    request,
) -> None:
    """One condition (head_dim, mask, GQA, layout, sequence length) through one backend: the
    backend that ran is read from the profile, and must be the one selected."""
    fn, inputs = sweep_call(case.shape), sweep_inputs(case.shape)
    on_device = [
        t.to(rocm_device, getattr(torch, dtype)) if t.is_floating_point() else t.to(rocm_device) for t in inputs
    ]
    ran, why_not = run_backend(backend, fn, *on_device)
    del on_device
    if why_not is not None:
        pytest.skip(
            f"SDPA backend {backend} is not available for {case.id} in {dtype} on {describe_device(rocm_device)}: {why_not}"
        )
    limit = mark_known_limit(request, rocm_device, rocm_scale, "sdpa_sweep", case.id, dtype, backend)
    record_property(
        INFO_PROPERTY,
        {
            "backend": backend_of(rocm_device),
            "sdpa_requested": backend,
            "sdpa_ran": ran,
            **case.info(rocm_scale),
            **({"cpu_known_limit": limit} if limit else {}),
        },
    )
    assert ran == backend, f"sdpa_kernel({backend}) ran the {ran} backend instead ({case.id}, {dtype})"

    def restricted(*args: torch.Tensor) -> torch.Tensor:
        if is_reference(args[0]):  # the float64 CPU reference may use whatever the CPU offers
            return fn(*args)
        with sdpa_kernel(BACKENDS[backend]):
            return fn(*args)

    name = f"sdpa[{backend}] {case.id}"
    check(parity, rocm_device, name, restricted, *inputs, dtype=dtype, grad=False)
    check(parity, rocm_device, name, restricted, *inputs, dtype=dtype, tolerances=SWEEP_GRAD_TOLERANCES)
