"""sort / topk / argmax and indexing: gather, scatter, scatter_add, index_add, index_select,
masked_fill, masked_select, where.

Inputs for the ordering ops are distinct values exact in every dtype: with ties, a correct kernel
may return other indices (and route gradients elsewhere) in fp16 than in float64.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from opsupport import check, distinct, dtypes, index, randn

ROWS = distinct(4, 32, seed=1)
PERMUTATION = torch.stack([torch.randperm(16, generator=torch.Generator().manual_seed(i)) for i in range(4)])
MASK = randn(4, 16, seed=9) > 0.3

# name -> (fn, inputs, differentiable)
OPS: dict[str, tuple[Callable[..., object], tuple[torch.Tensor, ...], bool]] = {
    "sort": (lambda x: torch.sort(x, dim=-1, descending=True), (ROWS,), True),
    "topk": (lambda x: torch.topk(x, 5, dim=-1), (ROWS,), True),
    "argmax": (lambda x: (x.argmax(dim=-1), x.argmin(dim=0)), (ROWS,), False),
    "gather": (lambda x, i: torch.gather(x, 1, i), (randn(4, 16, seed=2), index(16, 4, 24, seed=3)), True),
    # scatter without reduction needs unique destinations, or the winner is unspecified
    "scatter": (
        lambda x, i, s: torch.scatter(x, 1, i, s),
        (randn(4, 16, seed=2), PERMUTATION[:, :10], randn(4, 10, seed=4)),
        True,
    ),
    "scatter_add": (
        lambda x, i, s: torch.scatter_add(x, 1, i, s),
        (randn(4, 16, seed=2), index(16, 4, 40, seed=3), randn(4, 40, seed=4)),
        True,
    ),
    "index_add": (
        lambda x, i, s: torch.index_add(x, 0, i, s, alpha=0.5),
        (randn(16, 8, seed=2), index(16, 40, seed=3), randn(40, 8, seed=4)),
        True,
    ),
    "index_select": (lambda x, i: torch.index_select(x, 0, i), (randn(16, 8, seed=2), index(16, 30, seed=3)), True),
    "masked_fill": (lambda x, m: x.masked_fill(m, -3.5), (randn(4, 16, seed=2), MASK), True),
    "masked_select": (lambda x, m: torch.masked_select(x, m), (randn(4, 16, seed=2), MASK), True),
    "where": (lambda x, y, m: torch.where(m, x, y), (randn(4, 16, seed=2), randn(4, 16, seed=5), MASK), True),
}


@dtypes
@pytest.mark.parametrize("op", list(OPS))
def test_sort_index(op: str, dtype: str, parity, rocm_device: torch.device) -> None:
    fn, args, differentiable = OPS[op]
    check(parity, rocm_device, op, fn, *args, dtype=dtype, grad=differentiable)
