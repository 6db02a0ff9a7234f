"""bitsandbytes (accelerated port: ROCm wheels per gfx, a CPU backend): quantised layers and
8-bit optimizers judged by the error their quantisation promises (bounds derived in
_library_support and docs/libraries.md), not by a tolerance picked to pass."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
from _library_support import (
    ErrorCheck,
    assert_checks,
    blockwise_4bit_checks,
    import_library,
    int8_linear_checks,
    require_torch,
    trajectory_checks,
)

from pytest_rocm import DEFAULT_DTYPES

torch = require_torch()

pytestmark = [pytest.mark.library("bitsandbytes", "accelerated-port"), pytest.mark.timeout(300)]

DTYPES = DEFAULT_DTYPES
UNIT_ROUNDOFF = {"float32": 2.0**-24, "float16": 2.0**-11, "bfloat16": 2.0**-8}
#: max over steps of |p8 - p32| / |p32 - p0| (measured 0.031 for Adam8bit and AdamW8bit on the
#: CPU backend over 40 steps; 2x margin; a 10% larger learning rate measures 0.10)
TRAJECTORY_BOUND = 0.06


@pytest.fixture
def bnb(request: pytest.FixtureRequest, library_info: dict) -> ModuleType:
    module = import_library("bitsandbytes", "bitsandbytes")
    device = request.getfixturevalue("device")
    try:
        from bitsandbytes import cextension

        build = getattr(cextension, "BNB_BACKEND", None)
        library_info["rocm_gpu_arch"] = getattr(cextension, "ROCM_GPU_ARCH", None)
    except ImportError:
        build = None
    library_info["build"] = build
    library_info["backend"] = "cpu" if device.type == "cpu" else (build or device.type).lower()
    return module


def _gen(seed: int) -> Any:
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize("dtype", DTYPES)
def test_linear8bitlt(bnb: ModuleType, device: Any, dtype: str) -> None:
    dt = getattr(torch, dtype)
    fp32 = torch.nn.Linear(256, 64)
    with torch.no_grad():
        fp32.weight.copy_(torch.randn(64, 256, generator=_gen(1)) / 16)
        fp32.bias.copy_(torch.randn(64, generator=_gen(2)))
    layer = bnb.nn.Linear8bitLt(256, 64, has_fp16_weights=False, threshold=0.0)
    layer.weight = bnb.nn.Int8Params(fp32.weight.data.clone(), requires_grad=False, has_fp16_weights=False)
    layer.bias = torch.nn.Parameter(fp32.bias.data.to(dt), requires_grad=False)
    layer = layer.to(device)  # quantises the weight (int8 + per-row scale)
    assert layer.weight.dtype == torch.int8, f"Int8Params did not quantise on {device}: {layer.weight.dtype}"
    x = torch.randn(32, 256, generator=_gen(3)).to(dt)
    with torch.no_grad():
        out = layer(x.to(device))
    assert out.shape == (32, 64)
    checks = int8_linear_checks(x, fp32.weight, fp32.bias.to(dt), out, UNIT_ROUNDOFF[dtype])
    assert_checks(checks, f"bitsandbytes Linear8bitLt {dtype} on {device}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("quant_type", ["nf4", "fp4"])
def test_quantize_4bit_roundtrip(bnb: ModuleType, device: Any, quant_type: str, dtype: str) -> None:
    from bitsandbytes import functional as F

    weight = torch.randn(128, 256, generator=_gen(4)).to(getattr(torch, dtype))
    packed, state = F.quantize_4bit(weight.to(device), blocksize=64, quant_type=quant_type)
    assert packed.dtype == torch.uint8 and packed.numel() == weight.numel() // 2, "two 4-bit codes per byte"
    restored = F.dequantize_4bit(packed, state)
    assert restored.shape == weight.shape and restored.dtype == weight.dtype
    checks = blockwise_4bit_checks(weight, restored, 64, quant_type, UNIT_ROUNDOFF[dtype])
    assert_checks(checks, f"bitsandbytes {quant_type} round trip {dtype} on {device}")


@pytest.mark.parametrize("quant_type", ["nf4", "fp4"])
def test_linear4bit_forward(bnb: ModuleType, device: Any, quant_type: str) -> None:
    from bitsandbytes import functional as F

    fp32 = torch.nn.Linear(256, 64)
    with torch.no_grad():
        fp32.weight.copy_(torch.randn(64, 256, generator=_gen(5)) / 16)
    # compress_statistics=False: the block absmax stays float32, so the round-trip bound applies
    # as derived (QLoRA's double quantisation would add the 8-bit error of the absmax itself)
    layer = bnb.nn.Linear4bit(256, 64, quant_type=quant_type, compute_dtype=torch.float32, compress_statistics=False)
    layer.weight = bnb.nn.Params4bit(
        fp32.weight.data.clone(), requires_grad=False, quant_type=quant_type, compress_statistics=False
    )
    layer.bias = torch.nn.Parameter(fp32.bias.data.clone(), requires_grad=False)
    layer = layer.to(device)
    assert layer.weight.dtype == torch.uint8, f"Params4bit did not quantise on {device}"
    x = torch.randn(16, 256, generator=_gen(6))
    with torch.no_grad():
        out = layer(x.to(device)).double().cpu()
        dequantised = F.dequantize_4bit(layer.weight.data, layer.weight.quant_state).double().cpu()
    # 1. the 4-bit kernel computes the linear of its own dequantised weight (float32 rounding)
    exact = x.double() @ dequantised.T + fp32.bias.double()
    slack = 256 * 2.0**-24 * (x.double().abs() @ dequantised.abs().T) + 2.0**-24 * exact.abs() + 1e-6
    kernel_err = ((out - exact).abs() - slack).max().item()
    # 2. and the dequantised weight is within the round-trip bound of the original
    blocksize = layer.weight.quant_state.blocksize  # the layer's default, not the test's choice
    checks = blockwise_4bit_checks(fp32.weight, dequantised, blocksize, quant_type)
    checks.insert(0, ErrorCheck("forward error minus float32 matmul bound", kernel_err, 0.0))
    assert_checks(checks, f"bitsandbytes Linear4bit {quant_type} forward on {device}")


def regression_problem(device: Any) -> tuple[Any, Any, Any]:
    """Least squares with 64x64 = 4096 weights: exactly bitsandbytes' min_8bit_size, so the 8-bit
    state is used (smaller tensors silently fall back to 32-bit state)."""
    g = _gen(7)
    x = torch.randn(256, 64, generator=g)
    target = x @ (torch.randn(64, 64, generator=g) / 8).T + 0.01 * torch.randn(256, 64, generator=g)
    start = torch.randn(64, 64, generator=g) * 0.1
    return x.to(device), target.to(device), start.to(device)


def optimize(opt_class: Any, device: Any, steps: int = 40, **kwargs: Any) -> tuple[list[Any], list[float], Any]:
    x, target, start = regression_problem(device)
    weight = torch.nn.Parameter(start.clone())
    opt = opt_class([weight], lr=1e-2, **kwargs)
    snapshots, losses = [weight.detach().cpu().clone()], []
    for _ in range(steps):
        opt.zero_grad()
        loss = ((x @ weight.T - target) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        snapshots.append(weight.detach().cpu().clone())
    losses.append(((x @ weight.T - target) ** 2).mean().item())
    return snapshots, losses, opt.state[weight]


OPTIMIZERS = [
    pytest.param("Adam8bit", "Adam", {}, id="Adam8bit"),
    pytest.param("AdamW8bit", "AdamW", {"weight_decay": 1e-2}, id="AdamW8bit"),
]


@pytest.mark.parametrize(("bnb_name", "torch_name", "kwargs"), OPTIMIZERS)
def test_8bit_optimizer(bnb: ModuleType, device: Any, bnb_name: str, torch_name: str, kwargs: dict) -> None:
    reference, _, _ = optimize(getattr(torch.optim, torch_name), device, **kwargs)
    candidate, losses, state = optimize(getattr(bnb.optim, bnb_name), device, **kwargs)
    assert state["state1"].dtype == torch.uint8, f"{bnb_name} kept {state['state1'].dtype} state, not 8-bit"
    checks = trajectory_checks(reference, candidate, losses, TRAJECTORY_BOUND)
    assert_checks(checks, f"bitsandbytes {bnb_name} vs torch.optim.{torch_name} on {device}")


@pytest.mark.rocm_gpu
def test_paged_optimizer(bnb: ModuleType, gpu_device: Any) -> None:
    reference, _, _ = optimize(torch.optim.AdamW, gpu_device)
    candidate, losses, state = optimize(bnb.optim.PagedAdamW8bit, gpu_device)
    assert getattr(state["state1"], "is_paged", False), "PagedAdamW8bit state is not in paged (unified) memory"
    checks = trajectory_checks(reference, candidate, losses, TRAJECTORY_BOUND)
    assert_checks(checks, f"bitsandbytes PagedAdamW8bit vs torch.optim.AdamW on {gpu_device}")
