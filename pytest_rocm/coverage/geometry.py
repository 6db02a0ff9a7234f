"""Which convolution rows are geometrically possible: an excluded combination is computed from the
labels' numbers, not listed by hand, so a value added to an axis cannot bring back a row that
PyTorch itself refuses ("Kernel size can't be greater than actual input size").

A (non-transposed) convolution needs, in every spatial dim, its dilated kernel
``dilation * (kernel - 1) + 1`` to fit in the padded input ``side + 2 * padding``; ``reflect`` and
``circular`` pad by 1 before the call (the boundary builder's ``F.pad``). A 3-d input's side is capped
(``CONV3D_SIDE_CAP``: the builder's memory bound), so ``s224`` is a 16-voxel side there.
"""

from __future__ import annotations

import itertools
import re

from pytest_rocm.coverage.arrays import Exclude

__all__ = ["CONV3D_SIDE_CAP", "conv_window_excludes", "label_per_dim", "label_size", "window_fits"]

#: the side of a conv3d boundary input: min(the spatial label, this) (16^3 voxels x 4 channels)
CONV3D_SIDE_CAP = 16
#: padding labels that pad by one element with ``F.pad`` before an unpadded call
PADDED_BY_ONE = frozenset({"reflect", "circular"})


def label_size(label: str) -> int:
    """``m65`` -> 65, ``stride2`` -> 2."""
    match = re.search(r"(\d+)$", label)
    if match is None:
        raise ValueError(f"no size in label {label!r}")
    return int(match.group(1))


def label_per_dim(label: str, dims: int) -> tuple[int, ...]:
    """``k3`` -> (3,) * dims; ``k1x3`` -> (1, 3) (height x width; a 3-d op repeats the last: (1, 3, 3))."""
    match = re.search(r"(\d+)x(\d+)$", label)
    if match is None:
        return (label_size(label),) * dims
    pair = (int(match.group(1)), int(match.group(2)))
    return pair[-dims:] if dims <= 2 else (pair[0],) + (pair[1],) * (dims - 1)


def window_fits(dims: int, kernel: str, dilation: str, padding: str, spatial: str) -> bool:
    """Does the dilated kernel fit in the padded input in every spatial dim? Pure."""
    side = label_size(spatial) if dims < 3 else min(label_size(spatial), CONV3D_SIDE_CAP)
    pads = (1,) * dims if padding in PADDED_BY_ONE else label_per_dim(padding, dims)
    ks, ds = label_per_dim(kernel, dims), label_per_dim(dilation, dims)
    return all(d * (k - 1) + 1 <= side + 2 * p for k, d, p in zip(ks, ds, pads, strict=True))


def conv_window_excludes(
    dims: int,
    kernels: tuple[str, ...],
    dilations: tuple[str, ...],
    paddings: tuple[str, ...],
    spatials: tuple[str, ...],
) -> tuple[Exclude, ...]:
    """One exclude per (kernel, dilation, padding, spatial) whose window does not fit. Pure."""
    return tuple(
        Exclude(
            {"kernel": {k}, "dilation": {d}, "padding": {p}, "spatial": {s}},
            "the dilated kernel is larger than the padded input (PyTorch refuses it)",
        )
        for k, d, p, s in itertools.product(kernels, dilations, paddings, spatials)
        if not window_fits(dims, k, d, p, s)
    )
