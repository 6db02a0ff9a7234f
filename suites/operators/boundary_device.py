"""Builders of the device-profile rows (``pytest_rocm.coverage.catalogue_device``): the call and its
inputs from the row's input shapes, so what runs is what the row's memory cost was computed from.

Inputs are a periodic pattern, not random numbers: generating 2^31 seeded normals on the host
costs minutes, a pattern costs a copy. The period is 251 (a prime: an index that wraps by 2^32 or
2^31 reads a different value), the values are k/32 for integers |k| <= 130 (exact in bf16, fp16
and fp32: the comparison measures the op, not the rounding of its inputs), with a small positive
mean so that a sum is not a cancellation to zero. ``device="meta"`` builds meta tensors of the same
shapes: the suite's tests run every row's call on them to check the declared output shapes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from boundary import Case

Shapes = Sequence[tuple[int, ...]]
PERIOD = 251


def pattern(shape: tuple[int, ...], seed: int = 0, device: str = "cpu") -> torch.Tensor:
    """A float32 tensor of ``shape`` whose flat element i is ((i + 31 seed) * 97 mod 251 - 120) / 32."""
    if device == "meta":
        return torch.empty(shape, device="meta")
    base = ((torch.arange(PERIOD) + 31 * seed) * 97 % PERIOD - 120).float() / 32
    n = 1
    for s in shape:
        n *= s
    return base.repeat(n // PERIOD + 1)[:n].reshape(shape)


def indices(count: int, limit: int, device: str = "cpu") -> torch.Tensor:
    """``count`` int64 indices below ``limit``, spread over it, the last row (``limit - 1``) included:
    the rows whose element offsets are the largest."""
    if device == "meta":
        return torch.empty(count, dtype=torch.int64, device="meta")
    spread = torch.arange(count, dtype=torch.int64) * (limit // max(count - 1, 1))
    return spread.clamp_(max=limit - 1).flip(0).contiguous()


def _unary(fn: Callable[[torch.Tensor], Any]) -> Callable[[Shapes, str], Case]:
    return lambda shapes, device: Case(fn, (pattern(shapes[0], 1, device),), grad=False)


def _reduction(op: str) -> Callable[[Shapes, str], Case]:
    calls: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
        "softmax": lambda x: torch.softmax(x, -1),
        "log_softmax": lambda x: torch.log_softmax(x, -1),
        "sum": lambda x: x.sum(-1),
        "var": lambda x: x.var(-1),
        "cumsum": lambda x: x.cumsum(-1),
    }
    return lambda shapes, device: Case(
        calls[op], (pattern(shapes[0], 1, device),), grad=False, options={"reduction_length": shapes[0][-1]}
    )


def _binary(fn: Callable[[torch.Tensor, torch.Tensor], Any]) -> Callable[[Shapes, str], Case]:
    return lambda shapes, device: Case(fn, (pattern(shapes[0], 1, device), pattern(shapes[1], 2, device)), grad=False)


def _layer_norm(shapes: Shapes, device: str) -> Case:
    x, w, b = (pattern(s, i + 1, device) for i, s in enumerate(shapes))
    return Case(lambda x, w, b: F.layer_norm(x, x.shape[-1:], w, b), (x, w, b), grad=False)


def _matmul(op: str) -> Callable[[Shapes, str], Case]:
    def build(shapes: Shapes, device: str) -> Case:
        args = tuple(pattern(s, i + 1, device) / 4 for i, s in enumerate(shapes))  # /4: sums stay small
        k = shapes[0][-1]
        fn: Callable[..., torch.Tensor] = {"mm": torch.mm, "bmm": torch.bmm, "baddbmm": torch.baddbmm}[op]
        return Case(fn, args, grad=False, options={"reduction_length": k})

    return build


def _well_conditioned(shape: tuple[int, ...], device: str) -> torch.Tensor:
    a = pattern(shape, 1, device) / (4 * shape[-1])
    return a + 2 * torch.eye(shape[-1], device=a.device)


def _linalg(op: str) -> Callable[[Shapes, str], Case]:
    def build(shapes: Shapes, device: str) -> Case:
        a = _well_conditioned(shapes[0], device)
        if op == "cholesky":
            a = a @ a.mT
        if op == "solve_triangular":
            a = a.triu()
        if len(shapes) == 1:
            if op == "lu_factor":  # L and U as one matrix; the pivots of a diagonally dominant matrix are 1..n
                return Case(lambda a: torch.linalg.lu_factor(a)[0], (a,), grad=False)
            call = {"inv": torch.linalg.inv, "cholesky": torch.linalg.cholesky}[op]
            return Case(call, (a,), grad=False)
        b = pattern(shapes[1], 2, device)
        if op == "solve":
            return Case(torch.linalg.solve, (a, b), grad=False)
        return Case(lambda a, b: torch.linalg.solve_triangular(a, b, upper=True), (a, b), grad=False)

    return build


def _conv(layout: str) -> Callable[[Shapes, str], Case]:
    def build(shapes: Shapes, device: str) -> Case:
        x, w = pattern(shapes[0], 1, device) / 4, pattern(shapes[1], 2, device) / 4

        def fn(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
            if layout == "channels_last":
                x = x.contiguous(memory_format=torch.channels_last)
            return F.conv2d(x, w, padding=1)

        return Case(fn, (x, w), grad=False, options={"reduction_length": shapes[1][1] * 9})

    return build


def _embedding(shapes: Shapes, device: str) -> Case:
    idx = indices(shapes[0][0], shapes[1][0], device)
    return Case(F.embedding, (idx, pattern(shapes[1], 1, device)), grad=False)


def _index_select(shapes: Shapes, device: str) -> Case:
    idx = indices(shapes[1][0], shapes[0][0], device)
    return Case(lambda x, i: x.index_select(0, i), (pattern(shapes[0], 1, device), idx), grad=False)


def _fft(op: str) -> Callable[[Shapes, str], Case]:
    def build(shapes: Shapes, device: str) -> Case:
        parts = tuple(pattern(s, i + 1, device) for i, s in enumerate(shapes))

        def fn(*p: torch.Tensor) -> torch.Tensor:
            x = torch.complex(p[0], p[1]) if len(p) == 2 else p[0]
            return torch.view_as_real(getattr(torch.fft, op)(x, dim=-1))

        return Case(fn, parts, grad=False, options={"reduction_length": shapes[0][-1]})

    return build


def _sort(shapes: Shapes, device: str) -> Case:
    return Case(lambda x: torch.sort(x, dim=-1).values, (pattern(shapes[0], 1, device),), grad=False)


def _topk(k: int) -> Callable[[Shapes, str], Case]:
    return lambda shapes, device: Case(
        lambda x: torch.topk(x, k, dim=-1).values, (pattern(shapes[0], 1, device),), grad=False
    )


def builder(key: str, dims: dict[str, str]) -> Callable[[Shapes, str], Case]:
    """The builder of one device row (``family/op`` and its labels)."""
    family, op = key.split("/")
    if family == "elementwise":
        unary = {"exp": torch.exp, "gelu": F.gelu, "silu": F.silu}
        return _unary(unary[op]) if op in unary else _binary({"add": torch.add, "mul": torch.mul}[op])
    if family == "reductions":
        return _reduction(op)
    if family == "conv":
        return _conv(dims["layout"])
    if family == "sorting":
        return _topk(int(dims["k"][1:])) if op == "topk" else _sort
    table: dict[str, Callable[[Shapes, str], Case]] = {
        "norm/layer_norm": _layer_norm,
        "indexing/embedding": _embedding,
        "indexing/index_select": _index_select,
        **{f"matmul/{o}": _matmul(o) for o in ("mm", "bmm", "baddbmm")},
        **{f"linalg/{o}": _linalg(o) for o in ("solve", "solve_triangular", "inv", "cholesky", "lu_factor")},
        **{f"fft/{o}": _fft(o) for o in ("fft", "rfft", "ifft")},
    }
    return table[key]
