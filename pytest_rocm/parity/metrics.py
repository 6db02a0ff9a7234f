"""Comparing one output tensor of a run against its float64 reference.

All metrics are computed on the CPU in float64, in as few passes over the data as we can manage:
everything that depends only on the reference (|ref|, its norm, finiteness) is computed once per
output and shared by every dtype (:class:`Reference`).
"""

from __future__ import annotations

import math
from typing import Any

import torch

from pytest_rocm.parity.result import Comparison
from pytest_rocm.parity.tolerances import MODEL_FACTORS, Tolerance


class Reference:
    """A float64 (or integer) reference output with what every comparison against it reuses."""

    def __init__(self, tensor: torch.Tensor) -> None:
        self.tensor = tensor.detach().cpu()
        self.is_float = self.tensor.is_floating_point()
        self.numel = self.tensor.numel()
        if not self.is_float:
            return
        ref = self.tensor.to(torch.float64)
        self.tensor = ref
        self.abs = ref.abs()
        # one reduction instead of isfinite().all(): the sum is finite when every element is (a
        # finite sum that overflows falls back to the elementwise test)
        self.all_finite = math.isfinite(float(ref.sum())) or bool(torch.isfinite(ref).all())
        self.finite = None if self.all_finite else torch.isfinite(ref)
        fin_abs = self.abs if self.finite is None else torch.where(self.finite, self.abs, 0.0)
        self.max_abs = float(fin_abs.max()) if self.numel else 0.0
        self.norm = float(torch.linalg.vector_norm(fin_abs)) if self.numel else 0.0
        self.rms = self.norm / math.sqrt(self.numel) if self.numel else 0.0


def _unravel(flat: int, shape: torch.Size) -> tuple[int, ...]:
    index = []
    for size in reversed(shape):
        index.append(flat % size if size else 0)
        flat = flat // size if size else 0
    return tuple(reversed(index))


def _worst(got: torch.Tensor, ref: torch.Tensor, flat: int) -> tuple[tuple[int, ...], float, float]:
    return (_unravel(flat, ref.shape), float(got.reshape(-1)[flat]), float(ref.reshape(-1)[flat]))


def compare_exact(got: torch.Tensor, ref: Reference, base: Comparison) -> Comparison:
    """Integer and bool outputs (indices, masks): equal or not; errors reported as numbers."""
    g = got.detach().cpu()
    diff = (g.to(torch.float64) - ref.tensor.to(torch.float64)).abs_()
    bad = g != ref.tensor
    base.n_bad = int(bad.sum())
    base.numel = ref.numel
    base.rtol = base.atol = base.normwise_tol = 0.0
    base.max_abs = float(diff.max()) if ref.numel else 0.0
    ref_norm = float(torch.linalg.vector_norm(ref.tensor.to(torch.float64))) if ref.numel else 0.0
    base.normwise = _ratio(float(torch.linalg.vector_norm(diff)) if ref.numel else 0.0, ref_norm)
    nz = ref.tensor != 0
    # to float64 before abs: a bool reference (a mask) has no abs
    base.max_rel = float((diff[nz] / ref.tensor[nz].to(torch.float64).abs()).max()) if bool(nz.any()) else 0.0
    if base.n_bad:
        flat = int(bad.reshape(-1).to(torch.uint8).argmax())
        base.worst = _worst(g.to(torch.float64), ref.tensor.to(torch.float64), flat)
        base.ok, base.kind = False, "mismatch"
    else:
        base.ok, base.kind = True, None
    return base


def _ratio(num: float, den: float) -> float:
    if den > 0:
        return num / den
    return 0.0 if num == 0 else math.inf


def _errors(
    got: torch.Tensor, ref: Reference, base: Comparison, allow_vacuous: bool
) -> tuple[torch.Tensor, torch.Tensor, int] | Comparison:
    """|got - ref| per element with max_abs and normwise set on ``base``: (got on the CPU, the
    differences, the flat index of the largest); or the finished Comparison when there is nothing
    more to judge (an empty output, a non-finite difference)."""
    base.numel = ref.numel
    g = got.detach().cpu()  # subtracting promotes to float64: no separate float64 copy
    d = torch.sub(g, ref.tensor).abs()  # not in place: two zero gradients subtract to an immutable ZeroTensor
    if ref.finite is not None:
        # where the reference is inf/nan, the same inf/nan is a match and anything else is not
        same = (g == ref.tensor) | (torch.isnan(g) & torch.isnan(ref.tensor))
        d = torch.where(ref.finite, d, torch.where(same, 0.0, math.inf))
    if ref.numel == 0:
        base.max_abs = base.max_rel = base.normwise = 0.0
        return _vacuous(base, allow_vacuous, "empty output")
    max_abs, flat = d.reshape(-1).max(0)
    base.max_abs = float(max_abs)
    if not math.isfinite(base.max_abs):
        return _non_finite(g, ref, d, base)
    base.normwise = _ratio(float(torch.linalg.vector_norm(d)), ref.norm)
    return g, d, int(flat)


def compare_float(
    got: torch.Tensor,
    ref: Reference,
    tol: Tolerance,
    base: Comparison,
    *,
    floor: float = 0.0,
    allow_vacuous: bool = False,
) -> Comparison:
    """Elementwise ``|got-ref| <= max(atol + rtol*|ref| + normwise*rms(ref), floor)``.

    ``floor`` is the cpu-relative mode's allowance (k * the CPU run's max error + atol), 0 otherwise.
    """
    base.rtol, base.atol, base.normwise_tol = tol.rtol, tol.atol, tol.normwise
    measured = _errors(got, ref, base, allow_vacuous)
    if isinstance(measured, Comparison):
        return measured
    g, d, flat = measured
    slack = tol.atol + tol.normwise * ref.rms
    excess = torch.add(d, ref.abs, alpha=-tol.rtol)  # d - rtol*|ref|, compared with the slack
    if float(excess.max()) > slack or floor > 0:  # the common passing case skips counting
        bad = excess > slack
        if floor > 0:
            bad &= d > floor
        base.n_bad = int(bad.sum())
    if base.n_bad:
        # the worst element is the one furthest beyond its bound, relative to that bound
        ratio = torch.where(bad, (excess - slack) / (ref.abs * tol.rtol + slack), -1.0)
        flat = int(ratio.reshape(-1).argmax())
    base.worst = _worst(g, ref.tensor, int(flat))
    # that element's own bound: what a failed cell names beside its error (parity.reading)
    bound = slack + tol.rtol * float(ref.abs.reshape(-1)[int(flat)])
    base.extra["worst_bound"] = max(bound, floor) if floor > 0 else bound
    # max relative error over elements whose reference is not 0 (d/0 -> inf or nan, zeroed);
    # in place: d is not needed any more
    base.max_rel = float(d.div_(ref.abs).nan_to_num_(nan=0.0, posinf=0.0).max())
    if base.n_bad:
        base.ok, base.kind = False, "mismatch"
        return base
    if ref.max_abs <= tol.atol:
        return _vacuous(base, allow_vacuous, f"max |reference| = {ref.max_abs:.3g} <= atol = {tol.atol:.3g}")
    base.ok, base.kind = True, None
    return base


def _vacuous(base: Comparison, allowed: bool, why: str) -> Comparison:
    base.ok, base.kind = allowed, "vacuous"
    base.detail = f"vacuous: {why}; the check proves nothing (allow_vacuous=True accepts it)"
    return base


def _non_finite(g: torch.Tensor, ref: Reference, d: torch.Tensor, base: Comparison) -> Comparison:
    bad = ~torch.isfinite(d)
    base.n_bad = int(bad.sum())
    flat = int(bad.reshape(-1).to(torch.uint8).argmax())
    base.worst = _worst(g, ref.tensor, flat)
    fin_d = torch.where(bad, 0.0, d)
    base.max_abs = math.inf
    base.max_rel = math.inf
    base.normwise = math.inf
    base.ok, base.kind = False, "non-finite"
    got_fin = torch.isfinite(g)
    ref_fin_here = bool(ref.finite.reshape(-1)[flat]) if ref.finite is not None else True
    if ref_fin_here and not bool(got_fin.reshape(-1)[flat]):
        base.detail = f"{base.n_bad} non-finite values where the reference is finite"
    else:
        base.detail = f"{base.n_bad} elements where reference and output disagree on inf/nan"
        base.kind = "non-finite" if not bool(got_fin.all()) else "mismatch"
    base.extra["max_abs_finite"] = float(fin_d.max())
    return base


def wrap_periodic(got: torch.Tensor, ref: Reference, period: float) -> torch.Tensor:
    """``got`` moved by whole periods to the representative nearest the reference (an angle of
    6.28 against 0.0, with period 2*pi, is an error of 0.003): for outputs that wrap around."""
    g = got.detach().cpu().to(torch.float64)
    diff = torch.remainder(g - ref.tensor + period / 2, period) - period / 2
    return torch.where(torch.isfinite(g), ref.tensor + diff, g)


class Yardstick:
    """The model criterion's yardstick for one output: its normwise and max error against the reference."""

    def __init__(self, value: torch.Tensor, ref: Reference) -> None:
        d = torch.sub(value.detach().cpu().to(torch.float64), ref.tensor).abs_()
        d = torch.where(torch.isfinite(d), d, 0.0)
        self.max_abs = float(d.max()) if d.numel() else 0.0
        self.normwise = _ratio(float(torch.linalg.vector_norm(d)), ref.norm) if d.numel() else 0.0


def compare_model(
    got: torch.Tensor,
    ref: Reference,
    yard: Yardstick,
    tol: Tolerance,
    base: Comparison,
    *,
    factors: tuple[float, float],
    accumulation: float,
    allow_vacuous: bool = False,
) -> Comparison:
    """``mode="model"``: ``normwise <= k_n * yardstick normwise + acc`` and no element beyond
    ``k_e * yardstick max error + atol + acc * rms(ref)`` (acc = sqrt(K) * eps(accumulator))."""
    k_norm, k_max = factors
    bound_norm = k_norm * yard.normwise + accumulation
    bound_elem = k_max * yard.max_abs + tol.atol + accumulation * ref.rms
    base.rtol, base.atol, base.normwise_tol = 0.0, tol.atol, bound_norm
    base.cpu_max_abs, base.cpu_factor = yard.max_abs, k_max
    base.cpu_normwise, base.cpu_normwise_factor = yard.normwise, k_norm
    base.extra["max_abs_bound"] = bound_elem
    measured = _errors(got, ref, base, allow_vacuous)
    if isinstance(measured, Comparison):
        return measured
    g, d, flat = measured
    normwise = base.normwise
    assert normwise is not None  # set by _errors
    bad = d > bound_elem
    base.n_bad = int(bad.sum())
    base.worst = _worst(g, ref.tensor, int(flat))
    base.max_rel = float(d.div_(ref.abs).nan_to_num_(nan=0.0, posinf=0.0).max())
    if base.n_bad or normwise > bound_norm:
        base.ok, base.kind = False, "mismatch"
        if normwise > bound_norm:
            base.detail = (
                f"normwise error {normwise:.3g} > {k_norm:g}x the yardstick's {yard.normwise:.3g} + {accumulation:.2g}"
            )
        return base
    if ref.max_abs <= tol.atol:
        return _vacuous(base, allow_vacuous, f"max |reference| = {ref.max_abs:.3g} <= atol = {tol.atol:.3g}")
    base.ok, base.kind = True, None
    return base


class Judge:
    """One dtype's comparison of an output against its reference, by the call's mode."""

    def __init__(
        self, mode: str, tol: Tolerance, allow_vacuous: bool, cpu_factor: float | None, accumulation: float
    ) -> None:
        self.mode, self.tol, self.allow_vacuous = mode, tol, allow_vacuous
        self.cpu_factor, self.accumulation = cpu_factor, accumulation

    def __call__(self, got: torch.Tensor, ref: Reference, base: Comparison, yard: Any) -> Comparison:
        if got.is_floating_point() != ref.is_float or got.shape != ref.tensor.shape:
            base.ok, base.kind = False, "structure"
            base.detail = (
                f"output {base.name}: got {tuple(got.shape)} {got.dtype}, "
                f"reference {tuple(ref.tensor.shape)} {ref.tensor.dtype}"
            )
            return base
        if not ref.is_float:  # integers: exact, against the same-dtype CPU run's where there is one
            return compare_exact(got, yard if isinstance(yard, Reference) else ref, base)
        if not isinstance(yard, Yardstick):
            return compare_float(got, ref, self.tol, base, allow_vacuous=self.allow_vacuous)
        if self.mode == "model":
            factors = MODEL_FACTORS if self.cpu_factor is None else (self.cpu_factor, self.cpu_factor)
            return compare_model(
                got,
                ref,
                yard,
                self.tol,
                base,
                factors=factors,
                accumulation=self.accumulation,
                allow_vacuous=self.allow_vacuous,
            )
        factor = 2.0 if self.cpu_factor is None else float(self.cpu_factor)
        base.cpu_factor, base.cpu_max_abs = factor, yard.max_abs
        floor = factor * yard.max_abs + self.tol.atol
        return compare_float(got, ref, self.tol, base, floor=floor, allow_vacuous=self.allow_vacuous)


def yardsticks(
    ref_leaves: list[tuple[str, Reference | None]], cpu_leaves: list[tuple[str, torch.Tensor | None]]
) -> dict[str, Any]:
    """The same-dtype CPU run's (or yardstick's) error per float output; its integer outputs become the
    reference. The two runs' paths must be the same (``runs.check_same_paths``)."""
    out: dict[str, Any] = {}
    for (path, ref), (_, cpu) in zip(ref_leaves, cpu_leaves, strict=False):
        if ref is None or cpu is None:
            continue
        out[path] = Yardstick(cpu, ref) if ref.is_float else Reference(cpu)
    return out
