"""One builder per op of the boundary catalogue: a row's labels -> :class:`boundary.Case`."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from boundary import Case, autocast, bits, distinct, laid_out, num, partner_scale, per_dim, scaled_atol, values

from pytest_rocm import EPS
from pytest_rocm.suite_support import CONV3D_SIDE_CAP, default_normwise

Row = dict[str, str]


def _widen(x: torch.Tensor, variant: str) -> torch.Tensor:
    return x.float() if variant == "autocast" and x.dtype != torch.float64 else x


# -- matmul ------------------------------------------------------------------------------------
def mm(r: Row) -> Case:
    m, k, n, dt, variant = num(r["m"]), num(r["k"]), num(r["n"]), r["dtype"], r["variant"]
    grow = bits(max(k, m, n)) + 2
    a = values((m, k), r["values"], dt, seed=1, growth_bits=grow)
    b = randn_like_scaled((k, n), 2, partner_scale(r["values"], dt))

    def fn(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a, b = laid_out(a, r["layout_a"]), laid_out(b, r["layout_b"])
        if variant == "out":
            out = torch.empty(m, n, dtype=a.dtype, device=a.device)
            return torch.mm(a, b, out=out)
        return autocast(variant, a, lambda: torch.mm(_widen(a, variant), _widen(b, variant)))

    return Case(fn, (a, b), grad=variant != "out", options={"reduction_length": max(k, m, n)})


def bmm(r: Row) -> Case:
    batch, m, k, n, dt, variant = num(r["batch"]), num(r["m"]), num(r["k"]), num(r["n"]), r["dtype"], r["variant"]
    a = values((batch, m, k), r["values"], dt, seed=1, growth_bits=bits(max(k, m, n, batch)) + 2)
    b = randn_like_scaled((1 if r["layout"] == "expanded" else batch, k, n), 2, partner_scale(r["values"], dt))

    def fn(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a = laid_out(a, r["layout"])
        b = b.expand(batch, k, n) if r["layout"] == "expanded" else laid_out(b, r["layout"])
        if variant == "out":
            return torch.bmm(a, b, out=torch.empty(batch, m, n, dtype=a.dtype, device=a.device))
        return autocast(variant, a, lambda: torch.bmm(_widen(a, variant), _widen(b, variant)))

    return Case(fn, (a, b), grad=variant != "out", options={"reduction_length": max(k, m, n, batch)})


def linear(r: Row) -> Case:
    t, i, o, dt, variant = num(r["tokens"]), num(r["in_features"]), num(r["out_features"]), r["dtype"], r["variant"]
    x = values((t, i), r["values"], dt, seed=1, growth_bits=bits(max(t, i, o)) + 2)
    w = randn_like_scaled((o, i), 2, partner_scale(r["values"], dt) * i**-0.5)
    args: tuple[torch.Tensor, ...] = (x, w, randn_like_scaled((o,), 3, 1.0)) if r["bias"] == "bias" else (x, w)

    def fn(x: torch.Tensor, w: torch.Tensor, *bias: torch.Tensor) -> torch.Tensor:
        x = laid_out(x, r["layout"])
        return autocast(variant, x, lambda: F.linear(_widen(x, variant), _widen(w, variant), *bias))

    return Case(fn, args, options={"reduction_length": max(t, i, o)})


def randn_like_scaled(shape: tuple[int, ...], seed: int, scale: float) -> torch.Tensor:
    return values(shape, "randn", "float32", seed=seed) * scale


# -- convolutions ------------------------------------------------------------------------------
_CONV_DIMS = {"conv1d": 1, "conv2d": 2, "conv3d": 3, "conv_transpose2d": 2}


def conv(op: str) -> Callable[[Row], Case]:
    spatial_dims = _CONV_DIMS[op]
    transposed = op.startswith("conv_t")

    def build(r: Row) -> Case:
        batch = num(r["batch"])
        kernel, stride = per_dim(r["kernel"], spatial_dims), per_dim(r["stride"], spatial_dims)
        dil = per_dim(r["dilation"], spatial_dims)
        size = num(r["spatial"]) if spatial_dims < 3 else min(num(r["spatial"]), CONV3D_SIDE_CAP)
        channels = 4
        groups = {"g1": 1, "g2": 2, "depthwise": channels}[r["groups"]]
        out_ch = channels if r["groups"] == "depthwise" else 6
        shape = (batch, channels, *([size] * spatial_dims))
        fan = channels // groups * math.prod(kernel)
        x = values(shape, r["values"], r["dtype"], seed=1, growth_bits=bits(fan * batch * size**spatial_dims))
        w_shape = (channels, out_ch // groups) if transposed else (out_ch, channels // groups)
        w = randn_like_scaled((*w_shape, *kernel), 2, fan**-0.5)
        b = randn_like_scaled((out_ch,), 3, 1.0)
        pad_mode = r["padding"]
        pad = (1,) * spatial_dims if pad_mode in ("reflect", "circular") else per_dim(pad_mode, spatial_dims)
        call = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[spatial_dims]

        def fn(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            # channels_last of a 1d convolution is its NLC storage: the transposed view of (N, C, L)
            layout = "transposed" if spatial_dims == 1 and r["layout"] == "channels_last" else r["layout"]
            x = laid_out(x, layout)
            w = laid_out(w, layout if r["layout"] == "channels_last" else "contiguous")
            if transposed:
                return F.conv_transpose2d(x, w, b, stride=stride, padding=pad, dilation=dil, groups=groups)
            if pad_mode in ("reflect", "circular"):
                x = F.pad(x, (1, 1) * spatial_dims, mode=pad_mode)
                return call(x, w, b, stride=stride, dilation=dil, groups=groups)
            return call(x, w, b, stride=stride, padding=pad, dilation=dil, groups=groups)

        length = max(fan, batch * size**spatial_dims)
        return Case(
            fn,
            (x, w, b),
            options={"reduction_length": length, **padded_rounding(pad_mode, r["dtype"], spatial_dims, length)},
        )

    return build


def padded_rounding(pad_mode: str, dtype: str, spatial_dims: int, length: int) -> dict[str, Any]:
    """``tolerances=`` for a convolution padded by ``F.pad`` in its dtype (reflect, circular): the
    gradient of the padded tensor is rounded to the dtype, then the pad's backward adds up to
    2^dims of those rounded values into an edge element and rounds again, on every backend. The
    bound's normwise part gets that second rounding, half an eps per term (conv3d bf16 reflect:
    0.0206 > 0.0194 on an edge element, where the conv backward alone is within its bound)."""
    if pad_mode not in ("reflect", "circular") or dtype == "float32":
        return {}
    extra = 2**spatial_dims * EPS[dtype] / 2
    return {"tolerances": {dtype: {"normwise": default_normwise(dtype, length) + extra}}}


# -- pooling and interpolation -----------------------------------------------------------------
def _window(r: Row) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """Kernel, stride and padding per spatial dim (a padding is at most half its kernel)."""
    kernel = per_dim(r["kernel"], 2)
    stride = kernel if r["stride"] == "stride_kernel" else per_dim(r["stride"], 2)
    pad = tuple(min(p, k // 2) for p, k in zip(per_dim(r["padding"], 2), kernel, strict=True))
    return kernel, stride, pad


def max_pool2d(r: Row) -> Case:
    size = num(r["spatial"])
    kernel, stride, pad = _window(r)
    dil = per_dim(r["dilation"], 2)
    shape = (2, 3, size, size) if size < 65536 else (1, 1, 2 * max(kernel), size)
    pattern = r["values"]
    x = distinct(*shape, seed=1) if pattern == "distinct" else values(shape, pattern, r["dtype"], seed=1)

    def fn(x: torch.Tensor) -> torch.Tensor:
        x = laid_out(x, r["layout"])
        return F.max_pool2d(x, kernel, stride, pad, dil, ceil_mode=r["ceil_mode"] == "ceil")

    # ties: which of equal maxima takes the gradient is the kernel's choice, not a bug
    return Case(fn, (x,), grad=pattern != "ties")


def avg_pool2d(r: Row) -> Case:
    size = num(r["spatial"])
    kernel, stride, pad = _window(r)
    shape = (2, 3, size, size) if size < 65536 else (1, 1, 2 * max(kernel), size)
    x = values(shape, r["values"], r["dtype"], seed=1, growth_bits=bits(math.prod(kernel)))

    def fn(x: torch.Tensor) -> torch.Tensor:
        x = laid_out(x, r["layout"])
        return F.avg_pool2d(
            x,
            kernel,
            stride,
            pad,
            ceil_mode=r["ceil_mode"] == "ceil",
            count_include_pad=r["count_include_pad"] == "include_pad",
        )

    return Case(fn, (x,), options={"reduction_length": math.prod(kernel)})


def adaptive_avg_pool2d(r: Row) -> Case:
    size, out = num(r["spatial"]), num(r["output"])
    shape = (2, 3, size, size) if size < 65536 else (1, 2, 2, size)
    x = values(shape, r["values"], r["dtype"], seed=1, growth_bits=bits(size * size))

    def fn(x: torch.Tensor) -> torch.Tensor:
        return F.adaptive_avg_pool2d(laid_out(x, r["layout"]), out)

    return Case(fn, (x,), options={"reduction_length": max(size // out, 1) ** 2})


def interpolate(r: Row) -> Case:
    size, mode = num(r["spatial"]), r["mode"]
    shape = (2, 3, size, size) if size < 4096 else (1, 1, 2, size)
    x = values(shape, r["values"], r["dtype"], seed=1, growth_bits=2)
    resize = r["resize"]
    kw: dict[str, object]
    if resize == "up_odd":
        kw = {"size": (shape[2] * 2 + 1, shape[3] * 2 + 1)}
    elif resize == "down":
        kw = {"size": (max(shape[2] // 2, 1), max(shape[3] // 3, 1))}
    else:
        kw = {"scale_factor": 2.0 if resize == "scale2" else 1.7}
    if r["align_corners"] != "default":
        kw["align_corners"] = r["align_corners"] == "align"

    def fn(x: torch.Tensor) -> torch.Tensor:
        return F.interpolate(laid_out(x, r["layout"]), mode=mode, **kw)  # type: ignore[arg-type]

    return Case(fn, (x,), options=scaled_atol(r["values"], r["dtype"], growth_bits=2))
