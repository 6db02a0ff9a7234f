"""Integer inputs that must agree with each other, rebuilt from the captured shapes.

Most index inputs are valid when every value is below the smallest size of the call's floating
tensors (``inputs.index_bound``). A few ops take indices with a structure: ``EmbeddingBag``'s
``offsets`` start at 0 and never decrease, and its backward's ``offset2bag``, ``bag_size`` and
``max_indices`` are functions of the offsets. Random values there make the CPU reference refuse
the row (``offsets[0] has to be 0``) or, worse, make device and CPU read out of range in
different ways. :func:`fix` rewrites those arguments in place, the same values on both sides, from
the captured shapes alone: ``len(offsets)`` bags over ``len(indices)`` indices.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from pytest_rocm.workload.inputs import Built


def _named(func: Any, built: Built) -> dict[str, Any]:
    """The built arguments by schema name."""
    named = dict(built.kwargs)
    for position, argument in enumerate(func._schema.arguments):
        if position < len(built.args):
            named[argument.name] = built.args[position]
    return named


def _set(value: Any, data: torch.Tensor) -> None:
    if isinstance(value, torch.Tensor) and value.numel() == data.numel():
        with torch.no_grad():
            value.copy_(data.reshape(value.shape).to(value.dtype))


def _embedding_bag(func: Any, built: Built, ref: Built, generator: torch.Generator) -> None:
    dev_args, ref_args = _named(func, built), _named(func, ref)
    indices, offsets = dev_args.get("indices"), dev_args.get("offsets")
    if not isinstance(indices, torch.Tensor) or not isinstance(offsets, torch.Tensor) or offsets.dim() != 1:
        return
    n, bags = indices.numel(), offsets.numel()
    bag_size = dev_args.get("bag_size")
    # the backward has no include_last_offset argument: one bag fewer than offsets says it
    include_last = bool(dev_args.get("include_last_offset", False)) or (
        isinstance(bag_size, torch.Tensor) and bag_size.numel() == bags - 1
    )
    starts = torch.sort(torch.randint(0, n + 1, (bags,), generator=generator)).values
    if bags:
        starts[0] = 0
        if include_last:
            starts[-1] = n
    real_bags = bags - 1 if include_last else bags
    ends = torch.cat([starts[1:], torch.tensor([n])])[:real_bags] if real_bags > 0 else starts[:0]
    bag_of = torch.zeros(n, dtype=torch.int64)
    for bag in range(real_bags):
        bag_of[int(starts[bag]) : int(ends[bag])] = bag
    sizes = ends - starts[:real_bags]
    first = indices.detach().cpu().reshape(-1)[starts[:real_bags].clamp(max=max(n - 1, 0))] if n else sizes
    derived = {"offsets": starts, "offset2bag": bag_of, "bag_size": sizes}
    for name, data in derived.items():
        _set(dev_args.get(name), data)
        _set(ref_args.get(name), data)
    for name in ("max_indices", "maximum_indices"):  # any index of its bag is a valid arg-max
        target = dev_args.get(name)
        if isinstance(target, torch.Tensor) and target.dim() >= 1 and target.shape[0] == real_bags:
            data = torch.where(sizes > 0, first, torch.zeros_like(first)).reshape(-1, *([1] * (target.dim() - 1)))
            _set(target, data.expand(target.shape).contiguous())
            _set(ref_args.get(name), data.expand(target.shape).contiguous())


#: op packet name -> the function that makes its structured index inputs agree
FIXES: dict[str, Callable[[Any, Built, Built, torch.Generator], None]] = {
    name: _embedding_bag
    for name in (
        "embedding_bag",
        "_embedding_bag",
        "_embedding_bag_forward_only",
        "_embedding_bag_backward",
        "_embedding_bag_dense_backward",
        "_embedding_bag_per_sample_weights_backward",
    )
}


#: op packet name -> how many of its outputs are results; the others are the kernel's bookkeeping
#: for its backward (``offset2bag`` is left empty by the float32 fast path, filled by float64's)
RESULTS: dict[str, int] = {"embedding_bag": 1, "_embedding_bag": 1, "_embedding_bag_forward_only": 1}


def fix(func: Any, built: Built, ref: Built, seed: int) -> None:
    """Make the structured index inputs of ``func`` valid and equal on both sides (in place)."""
    fixer = FIXES.get(getattr(getattr(func, "overloadpacket", None), "__name__", ""))
    if fixer is not None:
        fixer(func, built, ref, torch.Generator().manual_seed(seed + 11))


__all__ = ["FIXES", "RESULTS", "fix"]
