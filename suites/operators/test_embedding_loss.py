"""Embeddings (with repeated indices, so gradient accumulation is checked) and cross-entropy."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from opsupport import check, dtypes, index, randn

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
