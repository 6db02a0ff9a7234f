"""Inputs of the boundary rows: a covering-array row (axis -> value label) to a call for parity.

Each builder reads the labels of its op (``pytest_rocm``'s boundary catalogue names them) and
returns the call, its inputs and how to judge it. Layouts are made *inside* the call, because
parity hands every run contiguous copies: ``transposed`` is ``x.mT.contiguous().mT`` (same values,
transposed strides), ``offset`` / ``unaligned`` copy the values into a larger buffer 64 / 1 elements
in, ``channels_last`` is ``x.contiguous(memory_format=...)``. Value patterns are made here, in
float32 and exact in bf16, scaled per dtype where they depend on it (``near_max``, ``subnormal``).

Where the CPU itself cannot match the float64 reference (a sum that overflows fp16, a product of
subnormals), the scale is chosen so that results stay finite and normal: the row then tests the
kernel, not the dtype's range.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F

from pytest_rocm.suite_support import ELEMENTWISE_DEFAULTS

#: exponent of the largest finite value / of the smallest normal, per dtype
EMAX = {"float32": 127, "float16": 15, "bfloat16": 127}
EMIN = {"float32": -126, "float16": -14, "bfloat16": -126}


@dataclass
class Case:
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    grad: bool = True
    options: dict[str, Any] = field(default_factory=dict)


def num(label: str) -> int:
    """``m65`` -> 65, ``stride2`` -> 2."""
    match = re.search(r"(\d+)$", label)
    if match is None:
        raise ValueError(f"no size in label {label!r}")
    return int(match.group(1))


def per_dim(label: str, dims: int) -> tuple[int, ...]:
    """``k3`` -> (3, 3), ``k1x3`` -> (1, 3) (height x width; a 3-d op repeats the last: (1, 3, 3)),
    ``stride1x2`` -> (1, 2): a non-square kernel, stride, dilation or padding per spatial dim."""
    match = re.search(r"(\d+)x(\d+)$", label)
    if match is None:
        return (num(label),) * dims
    pair = (int(match.group(1)), int(match.group(2)))
    return pair[-dims:] if dims <= 2 else (pair[0],) + (pair[1],) * (dims - 1)


def randn(*shape: int, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=generator).to(torch.bfloat16).float()


def distinct(*shape: int, seed: int = 0) -> torch.Tensor:
    """Distinct values exact in bf16 (no ties for max/sort), for any size: small integers times a
    power of two per block of 256."""
    count = math.prod(shape)
    generator = torch.Generator().manual_seed(seed)
    order = torch.randperm(count, generator=generator)
    block, within = order // 256, order % 256
    return ((within.float() - 128) / 8 * 2.0 ** (block.float() % 64)).reshape(shape)


def pattern_scale(pattern: str, dtype: str, growth_bits: int = 0, squares: bool = False) -> float:
    """How far ``pattern`` scales randn up: 2^(emax - 4 - growth) for ``near_max``, else 1."""
    if pattern != "near_max":
        return 1.0
    top = EMAX[dtype] // 2 if squares else EMAX[dtype]
    return 2.0 ** max(top - 4 - growth_bits, 0)


def scaled_atol(pattern: str, dtype: str, growth_bits: int = 0) -> dict[str, Any]:
    """``tolerances=`` for an op homogeneous of degree 1 in its input (op(c x) = c op(x)): the
    absolute part of the bound scales with the input as the error does. The default atol (1e-5) is
    for values of order 1; at near-max inputs (2^121 in fp32) it is 2^121 times too tight, so an
    fp32 error of a few eps of a large term on an element that cancels failed (bicubic near_max:
    7.4e30 > 2.2e30 on 250 of 4374 elements, 3.5x, where the same row at randn scale has 10x room)."""
    scale = pattern_scale(pattern, dtype, growth_bits)
    if scale == 1.0:
        return {}
    return {"tolerances": {dtype: {"atol": ELEMENTWISE_DEFAULTS[dtype][1] * scale}}}


def values(
    shape: tuple[int, ...], pattern: str, dtype: str, seed: int = 0, growth_bits: int = 0, squares: bool = False
) -> torch.Tensor:
    """A float32 input of ``pattern``; ``growth_bits``: log2 of how much the op may grow a value (a
    sum over 2^n terms), kept below the dtype's max so the reference and the dtype agree;
    ``squares``: the op squares its input (a variance), so ``near_max`` stays below the root of the max."""
    made = _pattern(shape, pattern, dtype, seed, growth_bits, squares)
    # exact in the row's dtype (a subnormal or a huge value rounds differently in each): the float64
    # reference then sees the values the dtype's run sees, and the row measures the op, not the cast
    return made.to(getattr(torch, dtype)).float() if made.is_floating_point() else made


def _pattern(
    shape: tuple[int, ...], pattern: str, dtype: str, seed: int, growth_bits: int, squares: bool
) -> torch.Tensor:
    x = randn(*shape, seed=seed)
    if pattern in ("randn", "distinct"):
        return distinct(*shape, seed=seed) if pattern == "distinct" else x
    if pattern == "zeros":
        return torch.zeros(shape)
    if pattern in ("const_rows", "ties"):  # constant along the last dimension
        return x[..., :1].expand(shape).contiguous() if shape else x
    if pattern == "const_channels":  # constant per channel (dim 1) over batch and space
        index = [slice(None) if i == 1 else slice(0, 1) for i in range(len(shape))]
        return x[tuple(index)].expand(shape).contiguous()
    if pattern == "near_max":
        return x * pattern_scale(pattern, dtype, growth_bits, squares)
    if pattern == "subnormal":  # below the smallest normal by 4 bits
        return x * 2.0 ** (EMIN[dtype] - 4)
    if pattern == "nan":
        x = x.clone()
        x.view(-1)[x.numel() // 2] = float("nan")
        return x
    if pattern in ("masked_rows", "neg_inf"):
        x = x.clone()
        if pattern == "masked_rows" and x.dim() >= 2:
            x[0] = float("-inf")  # one whole row (all of the reduced dimension)
        else:
            x.view(-1)[0] = float("-inf")
        return x
    raise ValueError(f"unknown value pattern {pattern!r}")


def partner_scale(pattern: str, dtype: str) -> float:
    """What the other operand of a product is scaled by so that a ``subnormal`` input gives normal
    results (an FTZ kernel then loses them; the CPU does not)."""
    return 2.0 ** min(EMAX[dtype] - 6, -EMIN[dtype] - 2) if pattern == "subnormal" else 1.0


def bits(n: int) -> int:
    return max(math.ceil(math.log2(max(n, 1))), 0) + 2


def laid_out(x: torch.Tensor, layout: str) -> torch.Tensor:
    """The same values in another memory layout (differentiable: gradients reach ``x``)."""
    if layout == "contiguous" or x.dim() == 0:
        return x
    if layout == "transposed":
        return x.transpose(-1, -2).contiguous().transpose(-1, -2) if x.dim() >= 2 else x
    if layout in ("offset", "unaligned"):
        pad = 64 if layout == "offset" else 1
        flat = F.pad(x.reshape(-1), (pad, 0))
        return flat[pad:].view(x.shape)
    if layout == "channels_last":
        fmt = {4: torch.channels_last, 5: torch.channels_last_3d}.get(x.dim())
        return x.contiguous(memory_format=fmt) if fmt is not None else x
    if layout in ("expanded", "broadcast", "v_transposed"):
        return x  # built by the op's own builder
    raise ValueError(f"unknown layout {layout!r}")


def is_reference(x: torch.Tensor) -> bool:
    return x.dtype == torch.float64


def autocast(variant: str, like: torch.Tensor, call: Callable[[], torch.Tensor]) -> torch.Tensor:
    """``autocast``: the inputs arrive in the row's dtype, are widened to float32 and autocast casts
    them back (the reference, in float64, runs without: CPU autocast has no float64 target)."""
    if variant != "autocast" or is_reference(like):
        return call()
    with torch.autocast(device_type=like.device.type, dtype=like.dtype):
        return call()
