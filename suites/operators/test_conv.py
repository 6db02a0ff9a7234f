"""Convolutions: 1d, 2d, 3d, transposed, grouped, depthwise (MIOpen on ROCm, cuDNN on CUDA).

Forward and backward (input, weight and bias gradients) per dtype. MIOpen compiles kernels on
first use, so the first run on a fresh ROCm box is slow; the shapes here stay tiny.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import shapes
import torch
import torch.nn.functional as F
from opsupport import check, dtypes, randn

from pytest_rocm import INFO_PROPERTY

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


# -- the sweep: channels_last and contiguous, batch 1 and 8, SDXL's layers in full (shapes.CONV) --
def conv_call(c: shapes.Conv) -> Callable[..., torch.Tensor]:
    """The layout is made inside the call (parity copies inputs contiguous): channels_last input
    and weight, as ``model.to(memory_format=torch.channels_last)`` gives MIOpen / cuDNN."""
    fmt = torch.channels_last if c.channels_last else torch.contiguous_format

    def fn(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        x, w = x.contiguous(memory_format=fmt), w.contiguous(memory_format=fmt)
        return F.conv2d(x, w, b, stride=c.stride, padding=c.kernel // 2)

    return fn


@dtypes
@shapes.marker("case", shapes.CONV)
def test_conv_sweep(
    case: shapes.Row, dtype: str, parity, rocm_device: torch.device, rocm_scale: str, record_property
) -> None:
    c: shapes.Conv = case.shape
    record_property(INFO_PROPERTY, case.info(rocm_scale))
    x = randn(c.batch, c.in_ch, c.size, c.size, seed=1)
    w = randn(c.out_ch, c.in_ch, c.kernel, c.kernel, seed=2, scale=(c.in_ch * c.kernel * c.kernel) ** -0.5)
    # the weight gradient sums over batch x output pixels, the input gradient over out_ch x kernel
    length = max(c.batch * (c.size // c.stride) ** 2, c.out_ch * c.kernel**2, c.in_ch * c.kernel**2)
    check(
        parity,
        rocm_device,
        f"conv2d {case.id}",
        conv_call(c),
        x,
        w,
        randn(c.out_ch, seed=3),
        dtype=dtype,
        reduction_length=length,
    )
