"""Pooling (max, average, adaptive; 1d-3d) and interpolate (nearest, linear family, bicubic, area).

Max pooling uses distinct exact values: a tie would send the gradient to another element in fp16.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from opsupport import check, distinct, dtypes, randn

POOLS: dict[str, tuple[Callable[[torch.Tensor], torch.Tensor], torch.Tensor]] = {
    "max_pool1d": (lambda x: F.max_pool1d(x, 3, stride=2), distinct(2, 4, 16, seed=1)),
    "max_pool2d": (lambda x: F.max_pool2d(x, 2), distinct(1, 3, 8, 8, seed=1)),
    "max_pool3d": (lambda x: F.max_pool3d(x, 2), distinct(1, 2, 4, 4, 4, seed=1)),
    "avg_pool2d": (lambda x: F.avg_pool2d(x, 3, stride=2, padding=1), randn(2, 3, 9, 9, seed=1)),
    "adaptive_avg_pool2d": (lambda x: F.adaptive_avg_pool2d(x, (3, 5)), randn(2, 3, 10, 11, seed=1)),
    "adaptive_max_pool2d": (lambda x: F.adaptive_max_pool2d(x, (3, 3)), distinct(1, 2, 9, 9, seed=1)),
}

INTERPOLATIONS: dict[str, tuple[Callable[[torch.Tensor], torch.Tensor], torch.Tensor]] = {
    "nearest": (lambda x: F.interpolate(x, scale_factor=2, mode="nearest"), randn(2, 3, 5, 5, seed=1)),
    "linear": (lambda x: F.interpolate(x, size=13, mode="linear"), randn(2, 3, 7, seed=1)),
    "bilinear": (lambda x: F.interpolate(x, size=(9, 11), mode="bilinear"), randn(2, 3, 5, 6, seed=1)),
    "bilinear_align_corners": (
        lambda x: F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True),
        randn(2, 3, 5, 6, seed=1),
    ),
    "bicubic": (lambda x: F.interpolate(x, scale_factor=2, mode="bicubic"), randn(2, 3, 5, 5, seed=1)),
    "trilinear": (lambda x: F.interpolate(x, scale_factor=2, mode="trilinear"), randn(1, 2, 3, 4, 4, seed=1)),
    "area": (lambda x: F.interpolate(x, size=(4, 3), mode="area"), randn(2, 3, 8, 9, seed=1)),
}


@dtypes
@pytest.mark.parametrize("op", list(POOLS))
def test_pooling(op: str, dtype: str, parity, rocm_device: torch.device) -> None:
    fn, x = POOLS[op]
    check(parity, rocm_device, op, fn, x, dtype=dtype)


@dtypes
@pytest.mark.parametrize("mode", list(INTERPOLATIONS))
def test_interpolate(mode: str, dtype: str, parity, rocm_device: torch.device) -> None:
    fn, x = INTERPOLATIONS[mode]
    check(parity, rocm_device, f"interpolate[{mode}]", fn, x, dtype=dtype)
