"""Builders of the boundary rows, continued: norms, reductions, attention, indexing, elementwise."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from boundary import Case, bits, laid_out, num, partner_scale, randn, values
from opsupport import eps_tolerances

#: amplification of a zero-variance input by a norm: (x - mean) is rounding noise, divided by
#: sqrt(eps = 1e-5); a bound of that noise, not of the dtype's usual error
ZERO_VARIANCE = ("const_rows", "const_channels")


def _zero_variance_atol(r: Row, x: torch.Tensor, summed: int) -> dict[str, float]:
    """``summed``: how many such noisy values a weight gradient adds up."""
    if r["values"] not in ZERO_VARIANCE:
        return {}
    eps = float(torch.finfo(getattr(torch, r["dtype"])).eps)
    return {"atol": 8 * eps * float(x.abs().max()) / 1e-5**0.5 * max(summed, 1) + 1e-5}


def _duplicate_tolerances(kind: str, count: int, high: int) -> dict[str, object]:
    """Index gradients sum the rows an index repeats; the CPU adds them in fp16/bf16 (a GPU's
    atomics in float32), so its error grows with the repeats: bound it by them (measured: 9
    repeats, fp16: 3.2e-3 relative; 240, bf16: 0.4)."""
    if kind == "all_same":
        repeats = count
    elif kind == "duplicates":
        repeats = -(-count // max(high // 4, 1))
    else:  # distinct, but more positions than rows: each row ceil(count / high) times
        repeats = -(-count // high)
    if repeats <= 1:
        return {}
    tolerances = eps_tolerances(rtol_eps=repeats, normwise_eps=repeats)
    tolerances["float32"] = {"rtol": repeats * float(torch.finfo(torch.float32).eps)}
    return {"tolerances": tolerances, "reduction_length": repeats}


Row = dict[str, str]


# -- normalization -----------------------------------------------------------------------------
def layer_norm(r: Row) -> Case:
    rows, features = num(r["rows"]), num(r["features"])
    x = values((rows, features), r["values"], r["dtype"], seed=1, growth_bits=bits(features) + 4, squares=True)
    affine = r["affine"] == "affine"
    args: tuple[torch.Tensor, ...] = (x, randn(features, seed=2), randn(features, seed=3)) if affine else (x,)

    def fn(x: torch.Tensor, *wb: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(laid_out(x, r["layout"]), (features,), *wb)

    return Case(fn, args, options={"reduction_length": features, **_zero_variance_atol(r, x, x.numel())})


def batch_norm(r: Row) -> Case:
    """Train mode also returns the running statistics the step leaves behind."""
    batch, channels, size = num(r["batch"]), num(r["channels"]), num(r["spatial"])
    shape = (batch, channels, size, size)
    x = values(shape, r["values"], r["dtype"], seed=1, growth_bits=bits(batch * size * size) + 4, squares=True)
    affine = r["affine"] == "affine"
    train = r["mode"] == "train"
    stats = (randn(channels, seed=4) * 0.1, randn(channels, seed=5).abs() + 0.5)
    args: tuple[torch.Tensor, ...] = (x, *stats) + (
        (randn(channels, seed=2), randn(channels, seed=3)) if affine else ()
    )

    def fn(x: torch.Tensor, mean: torch.Tensor, var: torch.Tensor, *wb: torch.Tensor) -> tuple[torch.Tensor, ...]:
        mean, var = mean.detach().clone(), var.detach().clone()
        out = F.batch_norm(laid_out(x, r["layout"]), mean, var, *wb, training=train, momentum=0.1)
        return (out, mean, var) if train else (out,)

    return Case(fn, args, options={"reduction_length": batch * size * size, **_zero_variance_atol(r, x, x.numel())})


def group_norm(r: Row) -> Case:
    batch, channels, size = num(r["batch"]), num(r["channels"]), num(r["spatial"])
    groups = {"g1": 1, "g2": 2, "per_channel": channels}[r["groups"]]
    x = values(
        (batch, channels, size, size),
        r["values"],
        r["dtype"],
        seed=1,
        growth_bits=bits(channels * size * size) + 4,
        squares=True,
    )

    def fn(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return F.group_norm(laid_out(x, r["layout"]), groups, w, b)

    options = {"reduction_length": channels // groups * size * size, **_zero_variance_atol(r, x, x.numel())}
    return Case(fn, (x, randn(channels, seed=2), randn(channels, seed=3)), options=options)


# -- reductions --------------------------------------------------------------------------------
def reduction(op: str):  # type: ignore[no-untyped-def]
    def build(r: Row) -> Case:
        rows, length = num(r["rows"]), num(r["length"])
        first = r["dim"] == "first"
        shape = (length, rows) if first else (rows, length)
        dim = 0 if first else 1
        pattern = r["values"]
        growth = bits(length) + (bits(length) if op == "var" else 0)
        x = values(shape, pattern, r["dtype"], seed=1, growth_bits=growth, squares=op == "var")
        if pattern == "masked_rows" and first:
            x = x.t().contiguous().t().clone()
            x[:, 0] = float("-inf")  # a whole reduced line
        variant = r["variant"]

        def fn(x: torch.Tensor) -> torch.Tensor:
            x = laid_out(x, r["layout"])
            if op in ("softmax", "log_softmax"):
                call = torch.softmax if op == "softmax" else torch.log_softmax
                if variant == "dtype_float32" and x.dtype != torch.float64:  # computes in float32
                    return call(x, dim, dtype=torch.float32).to(x.dtype)
                return call(x, dim)
            if op == "sum":
                if variant == "out":
                    return torch.sum(x, dim, out=torch.empty(shape[1 - dim], dtype=x.dtype, device=x.device))
                return torch.sum(x, dim, keepdim=variant == "keepdim")
            if op == "var":
                return torch.var(x, dim, keepdim=variant == "keepdim")
            if variant == "out":
                return torch.cumsum(x, dim, out=torch.empty_like(x))
            return torch.cumsum(x, dim)

        # near_max logits make softmax one-hot: its gradient is then cancellation, below any dtype
        grad = variant != "out" and not (pattern == "near_max" and op in ("softmax", "log_softmax"))
        return Case(fn, (x,), grad=grad, options={"reduction_length": length})

    return build


# -- attention ---------------------------------------------------------------------------------
def sdpa(r: Row) -> Case:
    batch, heads, sq, sk, d = (num(r[k]) for k in ("batch", "heads", "seq_q", "seq_k", "head_dim"))
    dt = r["dtype"]
    q = values((batch, heads, sq, d), r["values"], dt, seed=1, growth_bits=bits(d) * 2 + 8)
    k = randn(batch, heads, sk, d, seed=2) * (q.abs().amax().clamp(min=1) ** 0 if r["values"] != "near_max" else 1)
    v = randn(batch, heads, sk, d, seed=3)
    causal = r["is_causal"] == "causal"
    mask_kind = r["mask"]
    generator = torch.Generator().manual_seed(4)
    keep = torch.rand(sq, sk, generator=generator) > 0.3
    keep[:, 0] = True
    if mask_kind == "masked_row":
        keep[0] = False  # a query that may attend to nothing: its output is NaN, on every backend
    extra: tuple[torch.Tensor, ...] = ()
    if mask_kind in ("float_mask", "masked_row"):
        extra = (torch.zeros(sq, sk).masked_fill(~keep, float("-inf")),)

    def fn(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *bias: torch.Tensor) -> torch.Tensor:
        layout = r["layout"]
        if layout == "transposed":  # (B, S, H, D) storage, as a projection's output viewed per head
            q, k, v = (t.transpose(1, 2).contiguous().transpose(1, 2) for t in (q, k, v))
        elif layout == "v_transposed":
            v = v.transpose(-1, -2).contiguous().transpose(-1, -2)
        mask = bias[0] if bias else (keep.to(q.device) if mask_kind == "bool_mask" else None)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)

    # near_max: one-hot attention, whose gradient is cancellation (forward only)
    return Case(fn, (q, k, v, *extra), grad=r["values"] != "near_max", options={"reduction_length": max(sk, d)})


# -- indexing ----------------------------------------------------------------------------------
def _indices(kind: str, high: int, count: int, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    if kind == "all_same":
        return torch.full((count,), high // 2, dtype=torch.long)
    if kind == "distinct" and count <= high:
        return torch.randperm(high, generator=generator)[:count]
    if kind == "distinct":  # more positions than rows: every row at least once, in a shuffled order
        return torch.randperm(count, generator=generator) % high
    return torch.randint(0, max(high // 4, 1), (count,), generator=generator)  # duplicates, clustered


def embedding(r: Row) -> Case:
    vocab, count = num(r["vocab"]), num(r["count"])
    idx = _indices(r["indices"], vocab, count, seed=5).to(getattr(torch, r["index_dtype"]))
    weight = randn(vocab, 16, seed=1)
    padding = 0 if r["padding_idx"] == "padding0" else None

    def fn(w: torch.Tensor) -> torch.Tensor:
        return F.embedding(idx.to(w.device), laid_out(w, r["layout"]), padding_idx=padding)

    return Case(fn, (weight,), options={"reduction_length": count, **_duplicate_tolerances(r["indices"], count, vocab)})


def _index_operand(r: Row) -> tuple[int, int, int]:
    size = num(r["size"])
    first = r["dim"] == "first"
    return (size, 3, 0) if first else (3, size, 1)


def gather(r: Row) -> Case:
    n0, n1, dim = _index_operand(r)
    size = (n0, n1)[dim]
    idx = _indices(r["indices"], size, size, seed=5)
    index = (idx.view(-1, 1).expand(size, 3) if dim == 0 else idx.view(1, -1).expand(3, size)).contiguous()

    def fn(x: torch.Tensor) -> torch.Tensor:
        if r["layout"] == "expanded":
            x = x[:1].expand(n0, n1) if dim == 1 else x[:, :1].expand(n0, n1)
        return torch.gather(laid_out(x, r["layout"]), dim, index.to(x.device))

    options = {"reduction_length": size, **_duplicate_tolerances(r["indices"], size, size)}
    return Case(fn, (randn(n0, n1, seed=1),), options=options)


def scatter_add(r: Row) -> Case:
    n0, n1, dim = _index_operand(r)
    size = (n0, n1)[dim]
    idx = _indices(r["indices"], size, size, seed=5)
    index = (idx.view(-1, 1).expand(size, 3) if dim == 0 else idx.view(1, -1).expand(3, size)).contiguous()

    def fn(x: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
        x, src = laid_out(x, r["layout"]), laid_out(src, r["layout"])
        if r["variant"] == "inplace":
            return x.clone().scatter_add_(dim, index.to(x.device), src)
        return torch.scatter_add(x, dim, index.to(x.device), src)

    options = {"reduction_length": size, **_duplicate_tolerances(r["indices"], size, size)}
    return Case(fn, (randn(n0, n1, seed=1), randn(n0, n1, seed=2)), options=options)


def index_select(r: Row) -> Case:
    n0, n1, dim = _index_operand(r)
    size = (n0, n1)[dim]
    idx = _indices(r["indices"], size, size, seed=5).to(getattr(torch, r["index_dtype"]))

    def fn(x: torch.Tensor) -> torch.Tensor:
        return torch.index_select(laid_out(x, r["layout"]), dim, idx.to(x.device))

    options = {"reduction_length": size, **_duplicate_tolerances(r["indices"], size, size)}
    return Case(fn, (randn(n0, n1, seed=1),), options=options)


# -- elementwise -------------------------------------------------------------------------------
def elementwise(op: str):  # type: ignore[no-untyped-def]
    binary = op in ("add", "mul")

    def build(r: Row) -> Case:
        n = num(r["numel"])
        cols = 64 if n >= 4096 else n
        shape = (max(n // cols, 1), cols) if n >= 4096 else (1, n)
        if n >= 4096 and n % cols:
            shape = (n, 1)
        dt, pattern = r["dtype"], r["values"]
        if op == "exp" and pattern == "near_max":
            x = values(shape, "randn", dt, seed=1) * (2.0 if dt == "float16" else 8.0)  # exp(x) stays finite
        else:
            x = values(shape, pattern, dt, seed=1, growth_bits=2)
        args: tuple[torch.Tensor, ...] = (x,)
        if binary:
            other = randn(shape[-1], seed=2) if r["layout"] == "broadcast" else randn(*shape, seed=2)
            args = (x, other * partner_scale(pattern, dt) if op == "mul" else other)
        variant = r["variant"]

        def fn(x: torch.Tensor, *rest: torch.Tensor) -> torch.Tensor:
            x = laid_out(x, r["layout"])
            if op in ("add", "mul"):
                (y,) = rest
                call = torch.add if op == "add" else torch.mul
                if variant == "inplace":
                    return getattr(x.clone(), f"{op}_")(y)
                if variant == "out":
                    return call(
                        x, y, out=torch.empty(torch.broadcast_shapes(x.shape, y.shape), dtype=x.dtype, device=x.device)
                    )
                return call(x, y)
            if variant == "inplace":
                return F.silu(x.clone(), inplace=True) if op == "silu" else torch.exp_(x.clone())
            if variant == "out":
                return torch.exp(x, out=torch.empty_like(x))
            if variant == "tanh":
                return F.gelu(x, approximate="tanh")
            return {"gelu": F.gelu, "silu": F.silu, "exp": torch.exp}[op](x)

        # tanh-gelu's gradient cubes its input: inf at near_max in every dtype but float64
        return Case(fn, args, grad=variant != "out" and not (op == "gelu" and pattern == "near_max"))

    return build
