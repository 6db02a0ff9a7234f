"""The convolution rows the catalogue generates are ones PyTorch accepts: the window rule agrees with
torch itself (meta tensors), and every combination it refuses is excluded from the op's space."""

from __future__ import annotations

import itertools

import pytest

from pytest_rocm.coverage.geometry import CONV3D_SIDE_CAP, label_per_dim, label_size, window_fits
from pytest_rocm.suite_support import BOUNDARY_CATALOGUE

_DIMS = {"conv/conv1d": 1, "conv/conv2d": 2, "conv/conv3d": 3}


def _combos(key: str) -> list[tuple[str, str, str, str]]:
    values = BOUNDARY_CATALOGUE[key].all_values()
    return list(itertools.product(values["kernel"], values["dilation"], values["padding"], values["spatial"]))


def _torch_accepts(dims: int, kernel: str, dilation: str, padding: str, spatial: str) -> bool:
    """What the boundary builder does, on meta tensors: pad by one for reflect/circular, then convolve."""
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    side = label_size(spatial) if dims < 3 else min(label_size(spatial), CONV3D_SIDE_CAP)
    x = torch.empty(1, 4, *([side] * dims), device="meta")
    w = torch.empty(6, 4, *label_per_dim(kernel, dims), device="meta")
    call = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[dims]
    dil = label_per_dim(dilation, dims)
    try:
        if padding in ("reflect", "circular"):
            call(F.pad(x, (1, 1) * dims, mode=padding), w, dilation=dil)
        else:
            call(x, w, padding=label_per_dim(padding, dims), dilation=dil)
    except RuntimeError:
        return False
    return True


@pytest.mark.parametrize("key", list(_DIMS))
def test_the_window_rule_is_pytorchs(key: str) -> None:
    dims = _DIMS[key]
    combos = _combos(key)
    disagree = [c for c in combos if window_fits(dims, *c) != _torch_accepts(dims, *c)]
    assert not disagree, disagree[:5]
    assert any(not window_fits(dims, *c) for c in combos)  # the rule has something to exclude


@pytest.mark.parametrize("key", list(_DIMS))
def test_no_conv_row_has_a_window_larger_than_its_padded_input(key: str) -> None:
    """Old code: conv1d ``k11-dil2-circular-s13`` (21 taps over 15 elements) was a ``full`` row."""
    dims, space = _DIMS[key], BOUNDARY_CATALOGUE[key]
    unfit = [c for c in _combos(key) if not window_fits(dims, *c)]
    names = ("kernel", "dilation", "padding", "spatial")
    allowed = [c for c in unfit if not any(e.forbids(dict(zip(names, c, strict=True))) for e in space.excludes)]
    assert not allowed, allowed[:5]
