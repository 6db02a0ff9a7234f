"""Builders of the boundary rows of the families from PyTorch's databases: FFT, linear algebra,
optimizer steps and gradient clipping (``pytest_rocm.coverage.catalogue_more``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from boundary import Case, laid_out, num, randn, values

Row = dict[str, str]


# -- FFT ---------------------------------------------------------------------------------------
def fft(op: str) -> Callable[[Row], Case]:
    def build(r: Row) -> Case:
        n, batch, norm = num(r["length"]), num(r["batch"]), r["norm"]
        complex_in = op in ("fft", "ifft", "irfft", "irfft_nonhermitian", "hfft")
        bins = n // 2 + 1 if op in ("irfft", "irfft_nonhermitian", "hfft") else n
        shape = (bins, batch) if r["dim"] == "strided" else (batch, bins)
        dim = 0 if r["dim"] == "strided" else -1
        re, im = randn(*shape, seed=1), randn(*shape, seed=2)
        if r["values"] == "constant":
            re, im = torch.ones(shape), torch.zeros(shape)
        if op in ("irfft", "hfft"):  # a Hermitian spectrum: bins 0 (and n/2 for even n) are real
            im.select(dim, 0).zero_()
            if n % 2 == 0:
                im.select(dim, bins - 1).zero_()
        args = (re, im) if complex_in else (re,)

        def fn(*parts: torch.Tensor) -> torch.Tensor:
            x = torch.complex(parts[0], parts[1]) if complex_in else parts[0]
            if r["dim"] == "strided":
                x = x.t().contiguous().t()  # (bins, batch) stored batch-major: the transform's stride is batch
            call = {"irfft_nonhermitian": torch.fft.irfft}.get(op) or getattr(torch.fft, op)
            out = call(x, n=n if op in ("irfft", "irfft_nonhermitian", "hfft") else None, dim=dim, norm=norm)
            return torch.view_as_real(out.resolve_conj()) if out.is_complex() else out

        return Case(fn, args, grad=n <= 4099, options={"reduction_length": n})

    return build


# -- linear algebra ----------------------------------------------------------------------------
def _well_conditioned(batch: int, n: int, seed: int) -> torch.Tensor:
    a = randn(batch, n, n, seed=seed) / n**0.5
    return a + 2 * torch.eye(n)  # diagonally dominant enough: the row tests the kernel, not the conditioning


def _separated_singular_values(batch: int, n: int, seed: int) -> torch.Tensor:
    """``U diag(s) V^T`` with s evenly spaced in [1, 2]: the gradient of singular values,
    ``U diag(c) V^T``, moves by ``|c_i - c_j| / |s_i - s_j|`` times a perturbation of a, so a random
    draw whose two singular values nearly meet is an ill-conditioned element, not a kernel's error
    (513 random matrices held one: 2 gradient elements 1.4x past the bound in fp32)."""
    u, _ = torch.linalg.qr(randn(batch, n, n, seed=seed))
    v, _ = torch.linalg.qr(randn(batch, n, n, seed=seed + 100))
    s = torch.linspace(1.0, 2.0, n)
    return (u * s) @ v.mT


def solve_triangular(r: Row) -> Case:
    batch, n, k = num(r["batch"]), num(r["size"]), num(r["rhs"])
    upper, left, unit = r["upper"] == "upper", r["side"] == "left", r["unit"] == "unit"
    a = _well_conditioned(batch, n, 1)
    a = a.triu() if upper else a.tril()
    b = randn(batch, n, k, seed=2) if left else randn(batch, k, n, seed=2)

    def fn(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a = a.mT.contiguous().mT if r["layout"] == "transposed" else a
        return torch.linalg.solve_triangular(a, b, upper=upper, left=left, unitriangular=unit)

    return Case(fn, (a, b), options=_linalg_tolerance(n, a))


def _linalg_tolerance(n: int, a: torch.Tensor) -> dict[str, Any]:
    """A factorization's backward error is ``n * eps * |a|``: elements of a reconstruction or a
    solution far below ``|a|`` carry that absolute error, not a relative one."""
    eps = float(torch.finfo(torch.float32).eps)
    scale = float(a.abs().max())
    return {
        "reduction_length": n,
        "tolerances": {"float32": {"rtol": 16 * n * eps, "atol": 4 * n * eps * scale, "normwise": 16 * n * eps}},
    }


def linalg(op: str) -> Callable[[Row], Case]:
    def build(r: Row) -> Case:
        batch, n = num(r["batch"]), num(r["size"])
        a = _separated_singular_values(batch, n, 1) if op == "svdvals" else _well_conditioned(batch, n, 1)
        if op in ("cholesky", "eigh"):
            a = a @ a.mT + n * torch.eye(n)  # symmetric positive definite
        extra = (randn(batch, n, 3, seed=2),) if op == "solve" else ()

        def fn(a: torch.Tensor, *b: torch.Tensor) -> Any:
            a = a.mT.contiguous().mT if r["layout"] == "transposed" else a
            if op == "solve":
                return torch.linalg.solve(a, b[0])
            if op == "qr":  # Q and R are unique up to signs: compare their product and |R|'s diagonal
                q, rr = torch.linalg.qr(a)
                return q @ rr, rr.diagonal(dim1=-2, dim2=-1).abs()
            if op == "eigh":  # eigenvectors are unique up to sign: the eigenvalues and the reconstruction
                w, v = torch.linalg.eigh(a)
                return w, (v * w.unsqueeze(-2)) @ v.mT
            if op == "lu_factor":  # the pivots may differ on ties; P L U reconstructs a
                p, low, up = torch.linalg.lu(a)
                return p @ low @ up
            return getattr(torch.linalg, op)(a)

        return Case(fn, (a, *extra), grad=op not in ("lu_factor",), options=_linalg_tolerance(n, a))

    return build


# -- optimizer steps and gradient clipping -------------------------------------------------------
def _sizes(label: str) -> tuple[int, ...]:
    """``p113_mixed``: 113 tensors (more than one multi-tensor launch takes at any depth), sizes
    mixed; ``p113_chunked``: one of them 70,000 elements (more than one 65,536-element chunk)."""
    count = num(label.split("_")[0])
    return (1, 3, 17, 65, 70000 if label.endswith("_chunked") else 1025, *([5] * (count - 5)))


def _params(label: str) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    sizes = _sizes(label)
    return [randn(s, seed=i) for i, s in enumerate(sizes)], [randn(s, seed=100 + i) for i, s in enumerate(sizes)]


def _no_cancellation(param: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
    """The gradient with the parameter's sign, so that weight decay's ``grad + wd * param`` never
    cancels: an adaptive step ``lr * g / (sqrt(v) + eps)`` of a g rounded to ~0 has any value in
    [-lr, lr], in every backend (an ill-conditioned element, not a kernel's error: a 70,000-element
    draw held 3 such elements, off by up to 10 lr in fp32). A wrong decay still moves every element."""
    return torch.where(param >= 0, grad.abs(), -grad.abs())


def optimizer(name: str) -> Callable[[Row], Case]:
    def build(r: Row) -> Case:
        params, grads = _params(r["params"])
        if r["options"] == "weight_decay":
            grads = [_no_cancellation(p, g) for p, g in zip(params, grads, strict=True)]
        count, impl = len(params), r["impl"]

        def fn(*ts: torch.Tensor) -> list[torch.Tensor]:
            ps = [t.detach().clone().requires_grad_(True) for t in ts[:count]]
            for p, g in zip(ps, ts[count:], strict=True):
                p.grad = g.clone()
            reference = ts[0].dtype == torch.float64
            kwargs: dict[str, Any] = {"foreach": False} if reference else {impl: True}
            if r["options"] == "weight_decay":
                kwargs["weight_decay"] = 0.1
            elif r["options"] == "maximize":
                kwargs["maximize"] = True
            if r["dtype"] == "float16" and name != "Adafactor" and "eps" in _signature(name):  # the reference: same eps
                kwargs["eps"] = 1e-4  # 1e-8 is below float16's smallest subnormal: the denominator underflows
            opt = getattr(torch.optim, name)(ps, lr=1e-2, **kwargs)
            for _ in range(2):  # the second step reads the state the first one left
                opt.step()
            return [p.detach() for p in ps]

        return Case(fn, (*params, *grads), grad=False, options={"mode": "model", "reduction_length": 2})

    return build


def _signature(name: str) -> set[str]:
    import inspect

    return set(inspect.signature(getattr(torch.optim, name).__init__).parameters)


def clip_grad_norm(r: Row) -> Case:
    params, grads = _params(r["params"])
    norm_type = {"l2": 2.0, "inf": float("inf"), "l1": 1.0}[r["norm_type"]]
    total = float(torch.linalg.vector_norm(torch.cat([g.reshape(-1) for g in grads]), norm_type))
    max_norm = total / 4 if r["scale"] == "clipped" else total * 4

    def fn(*gs: torch.Tensor) -> list[torch.Tensor]:
        ps = [p.to(gs[0]).requires_grad_(True) for p in params]
        for p, g in zip(ps, gs, strict=True):
            p.grad = g.clone()
        norm = torch.nn.utils.clip_grad_norm_(ps, max_norm, norm_type, foreach=r["foreach"] == "foreach")
        return [norm.reshape(1), *(p.grad for p in ps)]  # type: ignore[misc]

    return Case(fn, tuple(grads), grad=False, options={"reduction_length": sum(g.numel() for g in grads)})


# -- sorting -----------------------------------------------------------------------------------
def sorting(op: str) -> Callable[[Row], Case]:
    def build(r: Row) -> Case:
        rows, length = num(r["rows"]), num(r["length"])
        first = r["dim"] == "first"
        dim = 0 if first else 1
        x = values((length, rows) if first else (rows, length), r["values"], r["dtype"], seed=1)

        def fn(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
            x = laid_out(x, r["layout"])
            if op == "sort":
                stable = r["stable"] == "stable"
                out, idx = torch.sort(x, dim=dim, descending=r["order"] == "descending", stable=stable)
            else:
                k = max(length // 2, 1) if r["k"] == "k_half" else num(r["k"])
                out, idx = torch.topk(x, k, dim=dim, largest=r["largest"] == "largest")
            # the input at the returned indices: any order of ties passes, a wrong index does not;
            # a stable sort's indices are defined, so they are compared too
            extra = (idx,) if op == "sort" and r["stable"] == "stable" else ()
            return (out, x.gather(dim, idx), *extra)

        return Case(fn, (x,), grad=False)

    return build


BUILDERS: dict[str, Callable[[Row], Case]] = {
    **{f"fft/{op}": fft(op) for op in ("fft", "ifft", "rfft", "irfft", "irfft_nonhermitian", "hfft")},
    "linalg/solve_triangular": solve_triangular,
    **{f"linalg/{op}": linalg(op) for op in ("solve", "cholesky", "qr", "eigh", "svdvals", "lu_factor", "inv")},
    "clipping/clip_grad_norm_": clip_grad_norm,
    "sorting/sort": sorting("sort"),
    "sorting/topk": sorting("topk"),
}


def optimizer_builders(ops: list[str]) -> dict[str, Callable[[Row], Case]]:
    """The catalogue's optimizer ops (``adamw``) -> their builders, each taking the torch.optim
    class of that name (the catalogue writes names in lower case)."""
    classes = {name.lower(): name for name in dir(torch.optim) if isinstance(getattr(torch.optim, name), type)}
    return {f"optimizer/{op}": optimizer(classes[op]) for op in ops}
