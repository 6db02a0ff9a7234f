"""Random number generation on the device: the same seed gives the same stream (global seed and
an explicit Generator), another seed gives another stream, and the samples have the distribution
they claim (moments within 6 standard errors, ranges respected).

Streams are not compared with the CPU's: devices use their own generators (Philox on CUDA/ROCm),
so only reproducibility on the device and statistics are meaningful. The measured moments are
recorded as rocm_info for the table instead of parity errors.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
import torch
from opsupport import dtypes, unsupported_as_skip

from pytest_rocm import INFO_PROPERTY

SAMPLERS: dict[
    str, Callable[[torch.Tensor | None, torch.device, torch.dtype, torch.Generator | None], torch.Tensor]
] = {
    "randn": lambda _, d, t, g: torch.randn(4096, device=d, dtype=t, generator=g),
    "rand": lambda _, d, t, g: torch.rand(4096, device=d, dtype=t, generator=g),
    "normal_": lambda _, d, t, g: torch.empty(4096, device=d, dtype=t).normal_(2.0, 3.0, generator=g),
    "bernoulli": lambda _, d, t, g: torch.bernoulli(torch.full((4096,), 0.3, device=d, dtype=t), generator=g),
    "randperm": lambda _, d, t, g: torch.randperm(512, device=d, generator=g),
    "dropout": lambda _, d, t, g: torch.nn.functional.dropout(torch.ones(4096, device=d, dtype=t), 0.25),
}


def _draw(name: str, device: torch.device, dtype: torch.dtype, seed: int, explicit: bool) -> torch.Tensor:
    if explicit and name != "dropout":  # dropout has no generator argument: global seed only
        generator = torch.Generator(device=device).manual_seed(seed)
        return SAMPLERS[name](None, device, dtype, generator)
    torch.manual_seed(seed)
    return SAMPLERS[name](None, device, dtype, None)


@dtypes
@pytest.mark.parametrize("sampler", list(SAMPLERS))
def test_random_seed(sampler: str, dtype: str, rocm_device: torch.device) -> None:
    torch_dtype = getattr(torch, dtype)
    with unsupported_as_skip(sampler, dtype, rocm_device):
        for explicit in (False, True):
            first = _draw(sampler, rocm_device, torch_dtype, 1234, explicit)
            again = _draw(sampler, rocm_device, torch_dtype, 1234, explicit)
            other = _draw(sampler, rocm_device, torch_dtype, 4321, explicit)
            how = "Generator" if explicit else "torch.manual_seed"
            assert torch.equal(first, again), f"{sampler} {dtype}: same seed, different stream ({how})"
            assert not torch.equal(first, other), f"{sampler} {dtype}: another seed, same stream ({how})"


def _within(name: str, value: float, expected: float, stderr: float) -> None:
    assert abs(value - expected) <= 6 * stderr, (
        f"{name}: measured {value:.5g}, expected {expected:.5g} +- {6 * stderr:.3g} (6 standard errors)"
    )


@dtypes
@pytest.mark.parametrize("distribution", ["normal", "uniform", "bernoulli", "exponential", "randint", "multinomial"])
def test_random_distribution(distribution: str, dtype: str, rocm_device: torch.device, record_property) -> None:
    n = 1 << 16
    torch_dtype = getattr(torch, dtype)
    torch.manual_seed(2024)
    label = f"{distribution} {dtype}"
    with unsupported_as_skip(distribution, dtype, rocm_device):
        if distribution == "normal":
            x = torch.randn(n, device=rocm_device, dtype=torch_dtype).double()
            _within(f"{label} mean", x.mean().item(), 0.0, 1 / math.sqrt(n))
            _within(f"{label} std", x.std().item(), 1.0, 1 / math.sqrt(2 * n) + 0.01)
        elif distribution == "uniform":
            x = torch.rand(n, device=rocm_device, dtype=torch_dtype).double()
            assert x.min().item() >= 0.0 and x.max().item() < 1.0, (
                f"{label}: samples outside [0, 1): min {x.min().item()}, max {x.max().item()}"
            )
            _within(f"{label} mean", x.mean().item(), 0.5, math.sqrt(1 / 12 / n) + 0.004)
            _within(f"{label} var", x.var().item(), 1 / 12, 0.0005 + 0.004)
        elif distribution == "bernoulli":
            x = torch.bernoulli(torch.full((n,), 0.3, device=rocm_device, dtype=torch_dtype)).double()
            assert set(x.unique().tolist()) <= {0.0, 1.0}, f"{label}: values other than 0/1"
            _within(f"{label} mean", x.mean().item(), 0.3, math.sqrt(0.21 / n))
        elif distribution == "exponential":
            x = torch.empty(n, device=rocm_device, dtype=torch_dtype).exponential_(2.0).double()
            assert x.min().item() >= 0.0, f"{label}: negative sample {x.min().item()}"
            _within(f"{label} mean", x.mean().item(), 0.5, 0.5 / math.sqrt(n) + 0.004)
        elif distribution == "randint":
            x = torch.randint(3, 13, (n,), device=rocm_device).to(torch_dtype).double()
            assert x.min().item() == 3 and x.max().item() == 12, f"{label}: range {x.min().item()}..{x.max().item()}"
            _within(f"{label} mean", x.mean().item(), 7.5, math.sqrt((10**2 - 1) / 12 / n))
        else:
            probs = torch.tensor([0.1, 0.2, 0.3, 0.4], device=rocm_device, dtype=torch_dtype)
            x = torch.multinomial(probs, n, replacement=True).double()
            counts = torch.bincount(x.long().cpu(), minlength=4).double() / n
            for k, p in enumerate((0.1, 0.2, 0.3, 0.4)):
                _within(f"{label} P({k})", counts[k].item(), p, math.sqrt(p * (1 - p) / n))
    record_property(
        INFO_PROPERTY,
        {
            "distribution": distribution,
            "dtype": dtype,
            "mean": round(x.mean().item(), 6),
            "std": round(x.std().item(), 6),
        },
    )
