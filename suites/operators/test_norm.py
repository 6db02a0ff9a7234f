"""Normalisation layers: batch (training statistics), layer, group and RMS norm, with affine
parameters so their gradients are checked too."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import shapes
import torch
import torch.nn.functional as F
from cpu_limits import mark_known_limit
from opsupport import check, dtypes, randn

from pytest_rocm import INFO_PROPERTY

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


# -- the sweep: LayerNorm / RMSNorm at 3584-8192 features, GroupNorm with >= 4096 per group --------
@dtypes
@shapes.marker("case", shapes.NORM)
def test_norm_sweep(
    case: shapes.Row, dtype: str, parity, rocm_device: torch.device, rocm_scale: str, record_property, request
) -> None:
    n: shapes.Norm = case.shape
    limit = mark_known_limit(request, rocm_device, rocm_scale, "norm_sweep", case.id, dtype)
    record_property(INFO_PROPERTY, {**case.info(rocm_scale), **({"cpu_known_limit": limit} if limit else {})})
    c = n.features
    weight, bias = randn(c, seed=2), randn(c, seed=3)
    if n.kind == "group_norm":
        x = randn(n.rows, c, n.spatial, n.spatial, seed=1, scale=2.0) + 3.0
        fn: Callable[..., torch.Tensor] = lambda x, w, b: F.group_norm(x, n.groups, w, b)  # noqa: E731
        args: tuple[torch.Tensor, ...] = (x, weight, bias)
    elif n.kind == "layer_norm":
        x = randn(n.rows, c, seed=1, scale=2.0) + 3.0
        fn, args = (lambda x, w, b: F.layer_norm(x, (c,), w, b)), (x, weight, bias)
    else:
        x = randn(n.rows, c, seed=1, scale=2.0) + 3.0
        fn, args = (lambda x, w: F.rms_norm(x, (c,), w, eps=1e-6)), (x, weight)
    # statistics reduce over the group; the weight gradient over the rows (batch x pixels for groups)
    length = max(n.per_group, n.rows * (n.spatial * n.spatial if n.spatial else 1))
    check(parity, rocm_device, f"{n.kind} {case.id}", fn, *args, dtype=dtype, reduction_length=length)
