"""Embeddings (with repeated indices, so gradient accumulation is checked) and cross-entropy."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import shapes
import torch
import torch.nn.functional as F
from opsupport import EPS, check, dtypes, index, randn

from pytest_rocm import INFO_PROPERTY, LOW_PRECISION_DTYPES

TOKENS = index(50, 4, 12, seed=1)  # 48 lookups into 50 rows: repeats are certain
OFFSETS = torch.tensor([0, 5, 17, 30])
TARGETS = index(10, 16, seed=2)
IGNORED = TARGETS.clone().index_fill_(0, torch.tensor([1, 5, 9]), -100)

EMBEDDINGS: dict[str, tuple[Callable[..., torch.Tensor], tuple[torch.Tensor, ...]]] = {
    "embedding": (lambda w, i: F.embedding(i, w), (randn(50, 16, seed=3), TOKENS)),
    "padding_idx": (lambda w, i: F.embedding(i, w, padding_idx=0), (randn(50, 16, seed=3), TOKENS)),
    "embedding_bag": (
        lambda w, i, o: F.embedding_bag(i, w, o, mode="mean"),
        (randn(50, 16, seed=3), TOKENS.flatten(), OFFSETS),
    ),
}

LOSSES: dict[str, tuple[Callable[..., torch.Tensor], tuple[torch.Tensor, ...]]] = {
    "mean": (lambda x, t: F.cross_entropy(x, t), (randn(16, 10, seed=4, scale=3.0), TARGETS)),
    "sum": (lambda x, t: F.cross_entropy(x, t, reduction="sum"), (randn(16, 10, seed=4, scale=3.0), TARGETS)),
    "label_smoothing": (
        lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1),
        (randn(16, 10, seed=4, scale=3.0), TARGETS),
    ),
    "ignore_index": (lambda x, t: F.cross_entropy(x, t), (randn(16, 10, seed=4, scale=3.0), IGNORED)),
    "soft_targets": (
        lambda x, p: F.cross_entropy(x, p.softmax(-1)),
        (randn(16, 10, seed=4, scale=3.0), randn(16, 10, seed=5)),
    ),
    "nll_loss": (
        lambda x, t: F.nll_loss(F.log_softmax(x, -1), t),
        (randn(16, 10, seed=4, scale=3.0), TARGETS),
    ),
}


@dtypes
@pytest.mark.parametrize("op", list(EMBEDDINGS))
def test_embedding(op: str, dtype: str, parity, rocm_device: torch.device) -> None:
    fn, args = EMBEDDINGS[op]
    check(parity, rocm_device, op, fn, *args, dtype=dtype)


@dtypes
@pytest.mark.parametrize("op", list(LOSSES))
def test_cross_entropy(op: str, dtype: str, parity, rocm_device: torch.device) -> None:
    fn, args = LOSSES[op]
    check(parity, rocm_device, f"cross_entropy[{op}]", fn, *args, dtype=dtype)


# The weight gradient's touched rows are sums of upstream gradients (~N(0, 1), rounded to the dtype):
# where two terms cancel the result keeps their rounding error, ~1 eps absolutely. Almost all rows
# are untouched zeros, so the normwise slack (relative to the gradient's rms) is no help: an
# absolute 4 eps instead (a wrong row or a lost accumulation is off by ~1).
SPARSE_GRADIENT = {dtype: {"atol": 4 * EPS[dtype]} for dtype in LOW_PRECISION_DTYPES}


# -- the sweep: vocabularies past 2^16 with int64 indices (shapes.EMBEDDING) ------------------------
@dtypes
@shapes.marker("case", shapes.EMBEDDING)
def test_embedding_sweep(
    case: shapes.Row, dtype: str, parity, rocm_device: torch.device, rocm_scale: str, record_property
) -> None:
    e: shapes.Embedding = case.shape
    record_property(INFO_PROPERTY, case.info(rocm_scale))
    # every row of the top of the vocabulary (past 2^16) looked up, most of them twice: repeated
    # indices make the backward accumulate; the rest are spread over the whole vocabulary
    high = torch.arange(e.vocab - e.tokens // 4, e.vocab).repeat(2)
    tokens = torch.cat([high, index(e.vocab, e.tokens - high.numel(), seed=4)])
    assert tokens.dtype == torch.int64 and int(tokens.max()) == e.vocab - 1
    weight = randn(e.vocab, e.dim, seed=3)
    check(
        parity,
        rocm_device,
        f"embedding {case.id}",
        lambda w, i: F.embedding(i, w),
        weight,
        tokens,
        dtype=dtype,
        tolerances=SPARSE_GRADIENT,
    )
