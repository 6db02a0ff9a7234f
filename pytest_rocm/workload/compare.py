"""Comparing one output of a replayed op with its float64 reference, at the precision it computes in.

Three things decide a fair comparison:

- the values: a sparse result is compared densely, a conjugate or negative view as the values
  it stands for (``resolve_conj``), so a row never ends in an exception about a view's bit;
- the precision: an op is judged at the least precise of its output's dtype and its floating
  tensor inputs' (``computed_at``). A bfloat16 input caps what any kernel can compute from it
  (the float32 log-sum-exp of a bf16 flash attention, a bf16 batch norm's float32 bias gradient
  both carry bf16 intermediates on a correct CPU); 0-dim inputs do not count (a scalar tensor
  never sets the precision of a kernel that promotes it);
- overflow: where the reference rounded to the output's dtype is infinite, that inf is right.
"""

from __future__ import annotations

import math

import torch

from pytest_rocm.parity import tolerances
from pytest_rocm.parity.metrics import Reference, compare_exact, compare_float
from pytest_rocm.parity.result import Comparison, ParityResult


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _eps(dtype: torch.dtype) -> float:
    return float(torch.finfo(dtype).eps)


def computed_at(dtypes: list[torch.dtype]) -> torch.dtype | None:
    """The least precise floating dtype of ``dtypes`` (complex counts as its real part), or None."""
    real = [torch.empty(0, dtype=d).real.dtype if d.is_complex else d for d in dtypes]
    floating = [d for d in real if d.is_floating_point]
    return max(floating, key=_eps) if floating else None


def tolerance(dtype: torch.dtype, k: int) -> tolerances.Tolerance:
    """parity's default tolerance of the dtype; a dtype parity does not name (float8) gets the same
    rule from its own epsilon: rounding ``ROUNDING_EPS * eps`` plus float32 accumulation."""
    name = dtype_name(dtype)
    if name in tolerances.DTYPE_NAMES:
        return tolerances.default_tolerance(name, k)
    eps = _eps(dtype)
    normwise = tolerances.ROUNDING_EPS * eps + math.sqrt(max(1, k)) * tolerances.EPS["float32"]
    return tolerances.Tolerance(2 * eps, 1e-5, normwise)


def _reference_for(got: torch.Tensor, ref: torch.Tensor) -> Reference:
    """The float64 reference, with the dtype's overflow kept: where the reference rounded to the
    output's dtype is infinite, that inf is what a right kernel returns."""
    ref = ref.detach().cpu()
    if ref.is_floating_point() and got.dtype != ref.dtype and got.is_floating_point():
        rounded = ref.to(got.dtype).to(ref.dtype)
        ref = torch.where(torch.isinf(rounded) & torch.isfinite(ref), rounded, ref)
    return Reference(ref)


def plain(value: torch.Tensor) -> torch.Tensor:
    """The values a result stands for: dense, with a conjugate or negative bit resolved."""
    value = value.detach()
    if value.layout != torch.strided:
        value = value.to_dense()
    return value.resolve_conj().resolve_neg()


def compare(
    result: ParityResult,
    label: str,
    got: torch.Tensor,
    ref: torch.Tensor,
    k: int,
    floor: torch.dtype | None = None,
    mode: str = "absolute",
) -> Comparison:
    """One comparison, appended to ``result``; ``floor``: the least precise floating input of the
    op, below which it is not judged (``computed_at``)."""
    got, ref = plain(got), plain(ref)
    dtype = dtype_name(got.dtype)
    base = Comparison(dtype, label, mode, False, None)
    if got.shape != ref.shape or got.is_floating_point() != ref.is_floating_point():
        base.kind, base.detail = "structure", f"{label}: got {tuple(got.shape)} {dtype}, reference {tuple(ref.shape)}"
        result.comparisons.append(base)
        return base
    if got.is_complex():
        got, ref = torch.view_as_real(got), torch.view_as_real(ref)
    reference = _reference_for(got, ref)
    if not got.is_floating_point():
        comparison = compare_exact(got.cpu(), reference, base)
    else:
        judged = computed_at([got.dtype] + ([floor] if floor is not None else []))
        comparison = compare_float(got, reference, tolerance(judged or got.dtype, k), base, allow_vacuous=True)
        if judged is not None and judged != got.dtype:
            comparison.extra["judged_at"] = dtype_name(judged)
    result.comparisons.append(comparison)
    return comparison


__all__ = ["compare", "computed_at", "dtype_name", "plain"]
