"""Normalisation layers: batch (training statistics), layer, group and RMS norm, with affine
parameters so their gradients are checked too."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from opsupport import check, dtypes, randn

# Inputs carry an offset and scale so a kernel that forgets to subtract the mean shows up.
NORMS: dict[str, tuple[Callable[..., torch.Tensor], tuple[torch.Tensor, ...]]] = {
    "batch_norm": (
        lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
        (randn(8, 6, 5, 5, seed=1, scale=2.0) + 3.0, randn(6, seed=2), randn(6, seed=3)),
    ),
    "layer_norm": (
        lambda x, w, b: F.layer_norm(x, (32,), w, b),
        (randn(4, 7, 32, seed=1, scale=2.0) + 3.0, randn(32, seed=2), randn(32, seed=3)),
    ),
    "group_norm": (
        lambda x, w, b: F.group_norm(x, 4, w, b),
        (randn(4, 8, 6, 6, seed=1, scale=2.0) + 3.0, randn(8, seed=2), randn(8, seed=3)),
    ),
    "rms_norm": (
        lambda x, w: F.rms_norm(x, (32,), w, eps=1e-6),
        (randn(4, 7, 32, seed=1, scale=2.0) + 3.0, randn(32, seed=2)),
    ),
}


@dtypes
@pytest.mark.parametrize("op", list(NORMS))
def test_norm(op: str, dtype: str, parity, rocm_device: torch.device) -> None:
    fn, args = NORMS[op]
    check(parity, rocm_device, op, fn, *args, dtype=dtype)
