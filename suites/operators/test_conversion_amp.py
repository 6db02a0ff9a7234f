"""Type conversions between fp32, fp16 and bf16, and automatic mixed precision.

Conversions must round exactly like IEEE round-to-nearest-even, so the device's result is compared
bit for bit with the CPU's, and the documented edge cases are checked by value:

* fp16 holds at most 65504: 65519 still rounds down to 65504, 65520 and beyond become +-inf
  (expected, not a bug — this is why fp16 training needs loss scaling); bf16 keeps fp32's
  exponent range, so 70000 stays finite (70144) and 3e38 too.
* 1e-8 underflows to 0 in fp16; 6e-8 becomes its smallest subnormal 5.96e-8.
* NaN stays NaN, inf stays inf, in every direction.

AMP: autocast in fp16 and bf16 on the device type (matmul-like ops run in the low dtype,
cross-entropy in fp32), parity of an autocast MLP step against float64, and GradScaler steps that
apply finite gradients and skip (halving the scale) when a gradient is inf.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from opsupport import EPS, check, describe_device, is_reference, randn, unsupported_as_skip

from pytest_rocm import LOW_PRECISION_DTYPES

SPECIALS = [
    65504.0,
    65519.0,
    65520.0,
    70000.0,
    -70000.0,
    1e-8,
    6e-8,
    -6e-8,
    3e38,
    float("inf"),
    float("-inf"),
    float("nan"),
    0.0,
    -0.0,
    1.0 / 3.0,
]
VALUES = torch.cat([torch.tensor(SPECIALS), randn(256, seed=1, scale=100.0)])

CONVERSIONS = {
    "fp32_to_fp16": ("float32", "float16"),
    "fp32_to_bf16": ("float32", "bfloat16"),
    "fp16_to_fp32": ("float16", "float32"),
    "bf16_to_fp32": ("bfloat16", "float32"),
    "fp16_to_bf16": ("float16", "bfloat16"),
    "bf16_to_fp16": ("bfloat16", "float16"),
}

# value in fp32 -> what fp16 / bf16 must hold (IEEE round to nearest even)
EXPECTED = {
    "float16": {
        65504.0: 65504.0,
        65519.0: 65504.0,
        65520.0: float("inf"),
        70000.0: float("inf"),
        -70000.0: float("-inf"),
        1e-8: 0.0,
        6e-8: 2.0**-24,
        3e38: float("inf"),
    },
    "bfloat16": {65504.0: 65536.0, 70000.0: 70144.0, -70000.0: -70144.0, 3e38: 3.00405527047391e38},
}


@pytest.mark.parametrize("conversion", list(CONVERSIONS))
def test_conversion(conversion: str, parity, rocm_device: torch.device) -> None:
    src, dst = (getattr(torch, name) for name in CONVERSIONS[conversion])
    source = VALUES.to(src)
    with unsupported_as_skip(conversion, str(dst).removeprefix("torch."), rocm_device):
        on_device = source.to(rocm_device).to(dst).cpu()
    # The CPU's conversion is the reference rounding; compare bit patterns (NaN payloads aside).
    torch.testing.assert_close(
        on_device,
        source.to(dst),
        rtol=0,
        atol=0,
        equal_nan=True,
        msg=lambda m: f"{conversion} on {describe_device(rocm_device)}: {m}",
    )
    if src == torch.float32 and dst in (torch.float16, torch.bfloat16):
        for value, expected in EXPECTED[str(dst).removeprefix("torch.")].items():
            got = on_device[SPECIALS.index(value)].item()
            assert got == pytest.approx(expected, rel=1e-6), f"{conversion}: {value} -> {got}, expected {expected}"
    # Measured error of the round trip through `dst` (for the table), on values not exact in any
    # low dtype: each rounding costs at most half an eps of its dtype, so eps(src) + eps(dst) bounds it.
    finite = torch.randn(256, generator=torch.Generator().manual_seed(2)) * 100.0
    bound = EPS[str(src).removeprefix("torch.")] + EPS[str(dst).removeprefix("torch.")]
    check(
        parity,
        rocm_device,
        conversion,
        lambda x: x.to(dst).to(x.dtype),
        finite,
        dtype=str(src).removeprefix("torch."),
        grad=False,
        tolerances={str(src).removeprefix("torch."): {"rtol": bound, "atol": 1e-5, "normwise": bound}},
    )


def test_fp16_overflow_in_arithmetic(rocm_device: torch.device) -> None:
    """fp16 products past 65504 are inf (expected); the same product in bf16 and fp32 is finite."""
    a = torch.full((4,), 300.0, device=rocm_device)
    assert torch.isinf(a.half() * a.half()).all(), "fp16 300*300 should overflow to inf"
    assert torch.isfinite(a.bfloat16() * a.bfloat16()).all(), "bf16 300*300 should be finite"
    assert (a * a).eq(90000.0).all(), "fp32 300*300 should be exactly 90000"


AMP_DTYPES = LOW_PRECISION_DTYPES


def mlp(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, ...]:
    hidden = F.gelu(F.linear(x, w1))
    logits = F.linear(hidden, w2)
    return logits, F.cross_entropy(logits, target)


@pytest.mark.parametrize("amp_dtype", AMP_DTYPES)
def test_autocast(amp_dtype: str, parity, rocm_device: torch.device) -> None:
    low = getattr(torch, amp_dtype)
    args = (
        randn(8, 16, seed=1),
        randn(32, 16, seed=2, scale=0.3),
        randn(10, 32, seed=3, scale=0.3),
        torch.arange(8) % 10,
    )
    with (
        unsupported_as_skip(f"autocast({amp_dtype})", amp_dtype, rocm_device),
        torch.autocast(rocm_device.type, dtype=low),
    ):
        logits, loss = mlp(*(a.to(rocm_device) for a in args))
    assert logits.dtype == low, f"autocast({amp_dtype}): linear ran in {logits.dtype}"
    assert loss.dtype == torch.float32, f"autocast({amp_dtype}): cross_entropy ran in {loss.dtype}"

    def autocast_mlp(*inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        with torch.autocast(inputs[0].device.type, dtype=low, enabled=not is_reference(inputs[0])):
            return mlp(*inputs)

    # fp32 inputs and parameters, low-precision compute: hold it to the low dtype's tolerance.
    tolerance = {"rtol": 1e-2, "atol": 1e-2} if amp_dtype == "float16" else {"rtol": 5e-2, "atol": 5e-2}
    check(
        parity,
        rocm_device,
        f"autocast[{amp_dtype}]",
        autocast_mlp,
        *args,
        dtype="float32",
        tolerances={"float32": tolerance},
    )


@pytest.mark.parametrize("step", ["finite", "inf"])
def test_grad_scaler(step: str, rocm_device: torch.device) -> None:
    """A finite step applies the unscaled gradients; an inf gradient skips the step, halves the scale."""
    torch.manual_seed(0)
    model = torch.nn.Linear(16, 4).to(rocm_device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler(rocm_device.type, init_scale=1024.0, growth_interval=1000)
    x = randn(8, 16, seed=1).to(rocm_device)
    if step == "inf":
        x[0, 0] = float("inf")
    with torch.autocast(rocm_device.type, dtype=torch.float16):
        loss = model(x).float().pow(2).mean()
    before = [p.detach().clone() for p in model.parameters()]
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    unscaled = [p.grad.detach().clone() for p in model.parameters()]
    scaler.step(optimizer)
    scaler.update()
    after = list(model.parameters())
    if step == "inf":
        assert scaler.get_scale() == 512.0, f"inf gradient: scale {scaler.get_scale()}, expected 512 (halved)"
        for old, new in zip(before, after, strict=True):
            assert torch.equal(old, new), "inf gradient: the optimizer step was applied instead of skipped"
        return
    assert scaler.get_scale() == 1024.0, f"finite step changed the scale to {scaler.get_scale()}"
    # The unscaled gradients equal those of the same autocast step without loss scaling.
    reference = torch.nn.Linear(16, 4).to(rocm_device)
    reference.load_state_dict({k: v for k, v in zip(("weight", "bias"), before, strict=True)})
    with torch.autocast(rocm_device.type, dtype=torch.float16):
        reference(x).float().pow(2).mean().backward()
    for got, want in zip(unscaled, (reference.weight.grad, reference.bias.grad), strict=True):
        torch.testing.assert_close(got, want, rtol=2e-3, atol=1e-4)
    for old, new, grad in zip(before, after, unscaled, strict=True):
        torch.testing.assert_close(new.detach(), old - 0.1 * grad, rtol=1e-5, atol=1e-6)
