"""Convolutions: 1d, 2d, 3d, transposed, grouped, depthwise (MIOpen on ROCm, cuDNN on CUDA).

Forward and backward (input, weight and bias gradients) per dtype. MIOpen compiles kernels on
first use, so the first run on a fresh ROCm box is slow; the shapes here stay tiny.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from opsupport import check, dtypes, randn

CONVS: dict[str, tuple[Callable[..., torch.Tensor], tuple[torch.Tensor, ...]]] = {
    "conv1d": (
        lambda x, w, b: F.conv1d(x, w, b, padding=1),
        (randn(2, 4, 16, seed=1), randn(6, 4, 3, seed=2), randn(6, seed=3)),
    ),
    "conv2d": (
        lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1),
        (randn(2, 4, 10, 10, seed=1), randn(6, 4, 3, 3, seed=2), randn(6, seed=3)),
    ),
    "conv3d": (
        lambda x, w, b: F.conv3d(x, w, b, padding=1),
        (randn(1, 2, 5, 5, 5, seed=1), randn(4, 2, 3, 3, 3, seed=2), randn(4, seed=3)),
    ),
    "conv_transpose2d": (
        lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1),
        (randn(2, 4, 6, 6, seed=1), randn(4, 3, 3, 3, seed=2), randn(3, seed=3)),
    ),
    "grouped": (
        lambda x, w, b: F.conv2d(x, w, b, padding=1, groups=2),
        (randn(2, 4, 8, 8, seed=1), randn(6, 2, 3, 3, seed=2), randn(6, seed=3)),
    ),
    "depthwise": (
        lambda x, w, b: F.conv2d(x, w, b, padding=1, groups=4),
        (randn(2, 4, 8, 8, seed=1), randn(4, 1, 3, 3, seed=2), randn(4, seed=3)),
    ),
}


@dtypes
@pytest.mark.parametrize("op", list(CONVS))
def test_conv(op: str, dtype: str, parity, rocm_device: torch.device) -> None:
    fn, args = CONVS[op]
    check(parity, rocm_device, op, fn, *args, dtype=dtype)
