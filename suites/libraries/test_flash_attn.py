"""flash-attn (accelerated port: a CK backend on CDNA, a Triton backend elsewhere): forward and
backward judged as flash-attention judges itself: its error against fp32 math attention may be
at most 2x (forward) / 10x (backward) that of plain math attention in the same precision.
GPU only; which backend ran (ck / triton / cuda) goes into the report."""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import Any

import pytest
from _library_support import assert_checks, attention_checks, attention_math, import_library, require_torch

from pytest_rocm import LOW_PRECISION_DTYPES, torch_backend

torch = require_torch()

pytestmark = [pytest.mark.library("flash_attn", "accelerated-port"), pytest.mark.timeout(300)]

HEADS = [pytest.param((8, 8), id="mha"), pytest.param((8, 2), id="gqa"), pytest.param((8, 1), id="mqa")]


def flash_attn_backend(torch_module: ModuleType) -> str:
    """ck / triton / cuda: which implementation flash_attn_func dispatches to.

    flash_attn.flash_attn_interface decides at import: FLASH_ATTENTION_TRITON_AMD_ENABLE=TRUE,
    or (recent versions) a missing CK extension on ROCm, selects the Triton backend
    (``USE_TRITON_ROCM``, module ``...flash_attn_triton_amd...``); otherwise the compiled
    extension (flash_attn_2_cuda: CK on a ROCm build, CUDA on a CUDA build)."""
    try:
        iface = importlib.import_module("flash_attn.flash_attn_interface")
    except ImportError:
        iface = None
    use_triton = getattr(iface, "USE_TRITON_ROCM", None)
    impl = getattr(iface, "flash_attn_gpu", None) or getattr(iface, "flash_attn_cuda", None)
    impl_name = getattr(impl, "__name__", "") or ""
    if use_triton or "triton" in impl_name:
        return "triton"
    if use_triton is None and os.environ.get("FLASH_ATTENTION_TRITON_AMD_ENABLE", "").upper() == "TRUE":
        return "triton"
    return {"rocm": "ck", "cuda": "cuda"}.get(torch_backend(torch_module), "unknown")


@pytest.fixture
def flash_attn(request: pytest.FixtureRequest, library_info: dict) -> ModuleType:
    module = import_library("flash-attn", "flash_attn")  # not-installed / broken import first
    request.getfixturevalue("gpu_device")
    library_info["backend"] = flash_attn_backend(torch)
    library_info["triton_amd_enable"] = os.environ.get("FLASH_ATTENTION_TRITON_AMD_ENABLE")
    return module


def _qkv(batch: int, seq: int, heads: tuple[int, int], dim: int, dtype: str, device: Any) -> list[Any]:
    g = torch.Generator().manual_seed(seq * dim + heads[1])
    hq, hkv = heads
    shapes = [(batch, seq, hq, dim), (batch, seq, hkv, dim), (batch, seq, hkv, dim)]
    return [torch.randn(s, generator=g).to(device=device, dtype=getattr(torch, dtype)) for s in shapes]


@pytest.mark.parametrize("dtype", LOW_PRECISION_DTYPES)
@pytest.mark.parametrize("headdim", [64, 128])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("heads", HEADS)
def test_flash_attn_func(
    flash_attn: ModuleType, gpu_device: Any, dtype: str, headdim: int, causal: bool, heads: tuple
) -> None:
    q, k, v = _qkv(2, 128, heads, headdim, dtype, gpu_device)
    checks = attention_checks(lambda a, b, c: flash_attn.flash_attn_func(a, b, c, causal=causal), q, k, v, causal)
    assert_checks(checks, f"flash_attn_func {dtype} d={headdim} causal={causal} heads={heads}")


@pytest.mark.parametrize("dtype", LOW_PRECISION_DTYPES)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_flash_attn_varlen_func(flash_attn: ModuleType, gpu_device: Any, dtype: str, causal: bool) -> None:
    lengths = [5, 37, 64, 128]  # ragged: no multiple of a tile size but one
    hq, hkv, dim = 8, 2, 64
    g = torch.Generator().manual_seed(11)
    dt = getattr(torch, dtype)
    total = sum(lengths)
    q, k, v = (torch.randn(total, h, dim, generator=g).to(gpu_device, dt) for h in (hq, hkv, hkv))
    cu = torch.tensor([0, *torch.tensor(lengths).cumsum(0).tolist()], dtype=torch.int32, device=gpu_device)

    bounds = list(zip(cu[:-1].tolist(), cu[1:].tolist(), strict=True))

    def math_per_sequence(a: Any, b: Any, c: Any) -> Any:  # (1, total, h, d), one sequence at a time
        return torch.cat([attention_math(a[:, s:e], b[:, s:e], c[:, s:e], causal) for s, e in bounds], dim=1)

    def varlen(a: Any, b: Any, c: Any) -> Any:
        out = flash_attn.flash_attn_varlen_func(a[0], b[0], c[0], cu, cu, max(lengths), max(lengths), causal=causal)
        return out.unsqueeze(0)

    checks = attention_checks(varlen, q[None], k[None], v[None], causal, math=math_per_sequence)
    assert_checks(checks, f"flash_attn_varlen_func {dtype} causal={causal} lengths={lengths}")
