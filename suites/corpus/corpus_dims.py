"""The conditions a corpus sample exercises (layout, rank, size class, keyword names), read off
its tensors, and the ci profile's picks of samples by them: ``pick_diverse`` (the deep tier: the
first samples of new conditions) and ``pick_new_condition`` (the thin tier's one sample per row).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Sequence
from typing import Any

import torch
import torch.utils._pytree as pytree


def layout_of(t: torch.Tensor) -> str:
    """contiguous / channels_last / transposed / expanded / noncontiguous / storage_offset, or the
    layout of a tensor without strides (``sparse_csr``, ``sparse_coo``...)."""
    if t.layout != torch.strided:  # sparse tensors have no strides to read
        return str(t.layout).removeprefix("torch.")
    if t.storage_offset() != 0:
        return "storage_offset"
    if t.is_contiguous():
        return "contiguous"
    if t.dim() == 4 and t.is_contiguous(memory_format=torch.channels_last):
        return "channels_last"
    if t.dim() == 5 and t.is_contiguous(memory_format=torch.channels_last_3d):
        return "channels_last_3d"
    if any(s == 0 and n > 1 for s, n in zip(t.stride(), t.shape, strict=True)):
        return "expanded"
    if _dense(t):
        return "transposed"
    return "noncontiguous"


def _dense(t: torch.Tensor) -> bool:
    """Non-overlapping and dense: a permutation of a contiguous tensor."""
    pairs = sorted((s, n) for s, n in zip(t.stride(), t.shape, strict=True) if n != 1)
    expected = 1
    for stride, size in pairs:
        if stride != expected:
            return False
        expected *= size
    return True


def tensors(obj: Any) -> list[torch.Tensor]:
    return [leaf for leaf in pytree.tree_leaves(obj) if isinstance(leaf, torch.Tensor)]


def sample_dims(first: Any, rest: Any, dtype: str, variant: str, sample: str) -> dict[str, str]:
    """dtype, variant, sample, and (read off the first tensor) layout, rank, and size class."""
    dims = {"dtype": dtype, "variant": variant, "sample": sample}
    ts = tensors(first) or tensors(rest)
    if ts:
        t = ts[0]
        dims["layout"] = layout_of(t)
        dims["rank"] = str(t.dim())
        dims["numel"] = "empty" if t.numel() == 0 else ("scalar" if t.dim() == 0 else "small")
    kwargs = rest[-1] if isinstance(rest, tuple) and rest and isinstance(rest[-1], dict) else {}
    if kwargs:
        dims["kwargs"] = ",".join(sorted(kwargs))
    return dims


def signature(dims: dict[str, str]) -> tuple[str, ...]:
    """What makes two samples different conditions for the ci pick: rank, layout, size, kwargs."""
    return tuple(dims.get(k, "") for k in ("rank", "layout", "numel", "kwargs"))


def pick_diverse(samples: Iterator[tuple[int, dict[str, str]]], limit: int | None) -> list[int]:
    """Indices of samples in order, keeping one per new :func:`signature`, at most ``limit``
    (None: every sample)."""
    if limit is None:
        return [i for i, _ in samples]
    seen: set[tuple[str, ...]] = set()
    kept: list[int] = []
    for i, dims in samples:
        sig = signature(dims)
        if sig in seen:
            continue
        seen.add(sig)
        kept.append(i)
        if len(kept) >= limit:
            break
    return kept


#: the layouts a thin ci row prefers: GPU libraries pick another kernel (or a copy) for them
UNUSUAL_LAYOUTS = ("transposed", "noncontiguous", "expanded", "storage_offset", "channels_last", "channels_last_3d")


def pick_new_condition(dims: Sequence[dict[str, str]], key: str, taken: Sequence[int] = ()) -> int | None:
    """The one sample a thin ci row runs: a *new condition*, not always sample 0. Among the samples
    that hold tensor values (an empty one compares nothing: a wrong kernel cannot fail it; a
    factory's sizes have no tensor to move to the device), other than those ``taken`` by the
    entry's other rows while there are others, the first

    1. whose first tensor has an unusual layout (:data:`UNUSUAL_LAYOUTS`), else
    2. whose (rank, layout, size class, keyword names) differ from the first sample's and the
       taken ones', else
    3. the one ``crc32(key)`` picks: the samples all share one condition, and rotating by the
       entry's name spreads the corpus's rows over every index instead of always the first.

    None when there is no sample at all."""
    if not dims:
        return None
    # a sample with tensor values first; one without a tensor (a factory's sizes) before an empty one
    full = (
        [i for i, d in enumerate(dims) if d.get("numel") in ("small", "scalar")]
        or [i for i, d in enumerate(dims) if d.get("numel") != "empty"]
        or list(range(len(dims)))
    )
    left = [i for i in full if i not in taken] or full
    for i in left:
        if dims[i].get("layout") in UNUSUAL_LAYOUTS:
            return i
    seen = {signature(dims[i]) for i in (full[0], *taken) if i < len(dims)}
    for i in left:
        if signature(dims[i]) not in seen:
            return i
    return left[zlib.crc32(key.encode()) % len(left)]
