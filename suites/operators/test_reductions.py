"""Reductions: sum, mean, var, norm, cumsum, amax, prod; plus long inputs (64 Ki elements) where a
kernel that accumulates fp16/bf16 in its own precision loses digits the normwise error exposes."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import shapes
import torch
from opsupport import check, dtypes, eps_tolerances, randn

from pytest_rocm import INFO_PROPERTY

LONG = 1 << 16

REDUCTIONS: dict[str, tuple[Callable[[torch.Tensor], torch.Tensor], torch.Tensor]] = {
    "sum": (lambda x: x.sum(dim=-1), randn(8, 64, seed=1)),
    "mean": (lambda x: x.mean(dim=(0, 2)), randn(4, 8, 16, seed=1)),
    "var": (lambda x: x.var(dim=-1), randn(8, 64, seed=1, scale=3.0) + 5.0),
    "std_unbiased0": (lambda x: x.std(dim=0, correction=0), randn(64, 8, seed=1)),
    "norm": (lambda x: torch.linalg.vector_norm(x, dim=-1), randn(8, 64, seed=1)),
    "amax": (lambda x: x.amax(dim=-1), randn(8, 64, seed=1)),
    # scale 1: the gradient exp(x - lse) uses lse rounded to the dtype, so its error grows with |lse|
    "logsumexp": (lambda x: x.logsumexp(dim=-1), randn(8, 64, seed=1)),
    "cumsum": (lambda x: x.cumsum(dim=-1), randn(8, 64, seed=1)),
    "sum_long": (lambda x: x.sum(), randn(LONG, seed=2)),
    "mean_long": (lambda x: x.mean(), randn(LONG, seed=2) + 1.0),
    "var_long": (lambda x: x.var(), randn(LONG, seed=2) + 1.0),
    "norm_long": (lambda x: torch.linalg.vector_norm(x), randn(LONG, seed=2)),
    "cumsum_long": (lambda x: x.cumsum(dim=0), randn(LONG, seed=2)),
}

# The gradient of logsumexp is exp(x - lse) with lse rounded to the dtype: its relative error is
# about |lse| * eps / 2 (lse ~ 4.6 here), so the elementwise bound is 8 eps, not the default 1.
TOLERANCES = {"logsumexp": eps_tolerances(rtol_eps=8)}


@dtypes
@pytest.mark.parametrize("op", list(REDUCTIONS))
def test_reduction(op: str, dtype: str, parity, rocm_device: torch.device) -> None:
    fn, x = REDUCTIONS[op]
    check(parity, rocm_device, op, fn, x, dtype=dtype, tolerances=TOLERANCES.get(op))


# -- the sweep: 2^16 + 1 and 2^24 elements, row and column reductions, long scans (shapes.REDUCTION) --
SWEEP_OPS: dict[str, Callable[[torch.Tensor, int | None], torch.Tensor]] = {
    "sum": lambda x, d: x.sum() if d is None else x.sum(dim=d),
    "mean": lambda x, d: x.mean() if d is None else x.mean(dim=d),
    "var": lambda x, d: x.var() if d is None else x.var(dim=d),
    "norm": lambda x, d: torch.linalg.vector_norm(x, dim=d),
    "amax": lambda x, d: x.amax() if d is None else x.amax(dim=d),
    "cumsum": lambda x, d: x.cumsum(dim=-1 if d is None else d),
}


@dtypes
@shapes.marker("case", shapes.REDUCTION)
def test_reduction_sweep(
    case: shapes.Row, dtype: str, parity, rocm_device: torch.device, rocm_scale: str, record_property
) -> None:
    r: shapes.Reduction = case.shape
    record_property(INFO_PROPERTY, case.info(rocm_scale))
    x = randn(*r.shape, seed=2)
    if r.op in ("mean", "var"):
        x = x + 1.0  # an offset: a kernel that forgets to centre shows up
    op = SWEEP_OPS[r.op]
    check(
        parity,
        rocm_device,
        f"{r.op} {case.id}",
        lambda t: op(t, r.dim),
        x,
        dtype=dtype,
        grad=r.grad,
        reduction_length=r.length,
    )
