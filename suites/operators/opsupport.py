"""Shared helpers of the operator suite: dtypes, seeded inputs, and "unsupported dtype" skips.

Every operator test is parametrized over one dtype per test item (so each dtype is its own row of
the compatibility table, e.g. ``operators/matmul[mm-bfloat16]``) and calls the ``parity`` fixture
with ``dtypes=(dtype,)``. An op that a dtype does not support on a backend raises inside torch;
:func:`check` turns exactly those errors into a skip that names the op, the dtype and the backend,
so the table shows "not supported here" instead of a suite failure.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch

from pytest_rocm import DEFAULT_DTYPES, EPS, LOW_PRECISION_DTYPES, device_backend

DTYPES: tuple[str, ...] = DEFAULT_DTYPES

#: ``@dtypes`` on a test: one item per dtype, the dtype id last (``[mm-bfloat16]``).
dtypes = pytest.mark.parametrize("dtype", DTYPES)

# What torch says when a kernel has no implementation for a dtype (CPU, CUDA and ROCm wordings).
_UNSUPPORTED = re.compile(
    r"not implemented for '\w+'"
    r"|Unsupported dtype"
    r"|not supported for (Half|BFloat16|half|bfloat16)"
    r"|(Half|BFloat16) is not supported"
    r"|only supports? (float|double|fp32|Float)"
    r"|expected scalar type \w+ but found (Half|BFloat16)"
    r"|cuFFT only supports dimensions whose sizes are powers of two"
    r"|hipFFT only supports"
    r"|Low precision dtypes not supported",
)


def backend_of(device: torch.device) -> str:
    """``rocm`` / ``cuda`` for an accelerator (one torch.cuda API drives both), else the device type."""
    return device_backend(device, torch)


def describe_device(device: torch.device) -> str:
    """``backend rocm (cuda:0, gfx1100)`` or ``backend cpu (cpu)``: what a skip reason names."""
    where = str(device)
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        arch = getattr(props, "gcnArchName", "") or props.name
        where += f", {arch.split(':')[0]}"
    return f"backend {backend_of(device)} ({where})"


def _unsupported_message(error: BaseException) -> str | None:
    """The first line of a dtype-unsupported error anywhere in the exception chain, else None."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, (RuntimeError, NotImplementedError, TypeError)):
            text = str(current)
            if _UNSUPPORTED.search(text):
                return text.strip().splitlines()[0][:200]
        current = current.__cause__ or current.__context__
    return None


@contextlib.contextmanager
def unsupported_as_skip(op: str, dtype: str, device: torch.device) -> Iterator[None]:
    """Skip (naming op, dtype, backend) when torch says the dtype is unsupported; re-raise the rest.

    AssertionError (a parity mismatch) is never swallowed: only torch's own "no kernel for this
    dtype" errors count as unsupported.
    """
    try:
        yield
    except AssertionError:
        raise
    except Exception as error:
        message = _unsupported_message(error)
        if message is None:
            raise
        pytest.skip(f"{op} does not support {dtype} on {describe_device(device)}: {message}")


def check(
    parity: Callable[..., Any],
    device: torch.device,
    op: str,
    fn: Callable[..., Any],
    *args: Any,
    dtype: str,
    grad: bool = True,
    **options: Any,
) -> Any:
    """``parity(fn, *args, dtypes=(dtype,), grad=grad, name=op)`` with unsupported dtypes skipped."""
    with unsupported_as_skip(op, dtype, device):
        return parity(fn, *args, dtypes=(dtype,), grad=grad, name=op, **options)


def eps_tolerances(rtol_eps: float | None = None, normwise_eps: float | None = None) -> dict[str, dict[str, float]]:
    """Per-dtype overrides in multiples of each low dtype's eps: ``tolerances=`` for parity.

    fp32 keeps the defaults (they are already tight); only fp16/bf16 are set.
    """
    out: dict[str, dict[str, float]] = {}
    for dtype in LOW_PRECISION_DTYPES:
        spec: dict[str, float] = {}
        if rtol_eps is not None:
            spec["rtol"] = rtol_eps * EPS[dtype]
        if normwise_eps is not None:
            spec["normwise"] = normwise_eps * EPS[dtype]
        out[dtype] = spec
    return out


def randn(*shape: int, seed: int = 0, scale: float = 1.0) -> torch.Tensor:
    """Seeded float32 CPU input whose values are exact in bf16 (and so in fp16 and fp32).

    parity casts inputs per dtype and compares with a float64 run on the uncast values: values
    exact in every dtype make that comparison measure the op's own arithmetic, not the rounding of
    its inputs (which, for softmax over inputs near 12, is already ~1% in fp16).
    """
    generator = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=generator) * scale).to(torch.bfloat16).float()


def distinct(*shape: int, seed: int = 0) -> torch.Tensor:
    """Distinct small integers (exact in fp16 and bf16) so sort/max/pool have no ties to break
    differently per dtype: a tie would move an index or a gradient and fail for no real reason."""
    count = 1
    for size in shape:
        count *= size
    if count > 256:
        raise ValueError(f"distinct() keeps values exact in bf16 only up to 256 elements, got {count}")
    generator = torch.Generator().manual_seed(seed)
    return (torch.randperm(count, generator=generator).float() - count / 2).reshape(shape) / 8


def index(high: int, *shape: int, seed: int = 0) -> torch.Tensor:
    """Seeded int64 indices in [0, high) (parity leaves integer tensors alone)."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, high, shape, generator=generator)


def is_reference(tensor: torch.Tensor) -> bool:
    """True for parity's float64 reference run, where device-specific switches must stay off."""
    return tensor.dtype == torch.float64
