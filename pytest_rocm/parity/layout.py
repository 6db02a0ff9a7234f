"""The caller's memory layout on every run: strides and storage offset survive the move to the device.

``t.to(device, dtype, copy=True)`` keeps a dense layout (channels_last, a transposed view) but makes
a sliced view (``x[:, :, 2:18, 1:17]``), a strided view (``x[:, ::2]``), a storage offset or a
broadcast (stride-0) view contiguous: a kernel that is wrong only for such a layout would never run
on the device. Here each run gets a fresh storage holding the caller's *storage window* (the
elements from the view's first to its last, gaps included), cast to the run's dtype, and the same
view of it: same sizes, same strides, same storage offset, and the same values in the gaps (a kernel
that reads outside its view reads the caller's neighbours, as it would in the caller's program).
"""

from __future__ import annotations

import torch

__all__ = ["copy_laid_out", "is_plain", "overlapping", "relaid"]


def is_plain(t: torch.Tensor) -> bool:
    """A layout ``.to(copy=True)`` and ``.clone()`` keep as they are: dense, non-overlapping, at
    offset 0 (contiguous, channels_last, a transposed view), empty, or not strided at all."""
    if t.layout != torch.strided or t.numel() == 0:
        return True
    return t.storage_offset() == 0 and (t.is_contiguous() or _dense(t))


def _dense(t: torch.Tensor) -> bool:
    """Non-overlapping and dense: a permutation of a contiguous tensor."""
    expected = 1
    for stride, size in sorted((s, n) for s, n in zip(t.stride(), t.shape, strict=True) if n != 1):
        if stride != expected:
            return False
        expected *= size
    return True


def overlapping(t: torch.Tensor) -> bool:
    """Two elements of ``t`` may share memory (a stride 0, or strides that interleave): no ordering
    of its dimensions by stride has each stride past the extent of the ones below it."""
    extent = 1
    for stride, size in sorted((s, n) for s, n in zip(t.stride(), t.shape, strict=True) if n > 1):
        if stride < extent:
            return True
        extent = stride * size
    return False


def _span(t: torch.Tensor) -> int:
    """Elements from the view's first to its last, inclusive (strides are never negative in torch)."""
    return 1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride(), strict=True))


def copy_laid_out(t: torch.Tensor, dev: torch.device, dtype: torch.dtype) -> torch.Tensor:
    """A fresh copy of ``t`` on ``dev`` in ``dtype``, in ``t``'s strides and storage offset."""
    t = t.detach()
    if is_plain(t) or t.is_conj() or t.is_neg():  # a lazy conjugate/negation view: its bits are not its values
        return t.to(dev, dtype, copy=True)
    offset, span = t.storage_offset(), _span(t)
    window = t.as_strided((span,), (1,), offset)
    base = torch.empty(offset + span, dtype=dtype, device=dev)
    base[offset:].copy_(window)
    return base.as_strided(t.shape, t.stride(), offset)


def relaid(leaf: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """``leaf``'s values in ``like``'s layout (``like``: a :func:`copy_laid_out` copy, same values),
    differentiable: gradients reach ``leaf``. A view whose elements overlap (stride 0) cannot be
    written element by element: with gradients such a view (a broadcast input) runs as a dense
    copy, as before (without gradients :func:`copy_laid_out` keeps it)."""
    if is_plain(like) or overlapping(like):
        return leaf.clone()
    offset = like.storage_offset()
    base = like.detach().as_strided((offset + _span(like),), (1,), 0).clone()  # the gaps' values too
    out = base.as_strided(like.shape, like.stride(), offset)
    return out.copy_(leaf)
