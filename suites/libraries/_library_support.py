"""What the library suites share: importing a library into the right outcome, recording what
ran, and the numeric judgements (quantisation bounds, optimizer trajectories, attention error
ratios) as pure functions so tests/test_libraries_checks.py can break them on purpose.

Outcomes of importing a library (see docs/libraries.md):

* the top-level module does not exist            -> ``not-installed`` (a skip with that prefix)
* it exists but importing it raises (any error)  -> ``failed``, the reason names library,
  version and the exception: an installed library that cannot be imported on this stack is a
  compatibility failure, never a silent skip
* importing it kills the process (segfault, abort) -> ``crashed``, through the crash isolation
  of ``rocm-compat run`` (pytest-xdist): that is why libraries are imported inside tests, never
  at module import (a crash during collection would take the whole worker's table with it).
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import pytest

from pytest_rocm import distribution_version, not_installed_reason, skip_not_installed

#: The classes the compatibility table groups libraries by (docs/libraries.md).
LIBRARY_CLASSES = ("pure-pytorch", "pytorch-ecosystem", "accelerated-port", "cuda-only")


def library_version(dist: str, module: ModuleType | None = None) -> str | None:
    """Version from distribution metadata, else the module's ``__version__`` (source checkouts)."""
    version = distribution_version(dist)
    if version is not None:
        return version
    return getattr(module, "__version__", None) if module is not None else None


def import_library(dist: str, module: str, install: str = "") -> ModuleType:
    """Import ``module`` (from distribution ``dist``) or end the test with the right outcome;
    ``install`` (how to install it here) is added to the not-installed reason."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        top = module.split(".")[0]
        if exc.name in (module, top):
            hint = f"; {install}" if install else ""
            skip_not_installed(dist, f"`import {module}` found no module {exc.name!r}{hint}")
        broken = exc
    except BaseException as exc:
        if isinstance(exc, (KeyboardInterrupt, pytest.skip.Exception)):
            raise
        broken = exc
    version = library_version(dist) or "unknown version"
    first_line = (str(broken).strip().splitlines() or [""])[0]
    pytest.fail(
        f"{dist} {version} is installed but `import {module}` raised {type(broken).__name__}: {first_line}",
        pytrace=False,
    )


def require_torch() -> ModuleType:
    """torch, or the whole module skipped as not-installed (used at test-module import)."""
    try:
        import torch
    except ModuleNotFoundError as exc:
        if exc.name != "torch":
            raise
        pytest.skip(not_installed_reason("torch", "the library suites run on PyTorch"), allow_module_level=True)
    return torch


# -- bitsandbytes: what absmax int8 / 4-bit quantisation promises --------------------------------
@dataclass(frozen=True)
class ErrorCheck:
    """A measured error against the bound it must stay under; ``ok`` and a one-line summary."""

    what: str
    measured: float
    bound: float

    @property
    def ok(self) -> bool:
        return math.isfinite(self.measured) and self.measured <= self.bound

    def line(self) -> str:
        verdict = "ok" if self.ok else "EXCEEDS"
        return f"{self.what}: {self.measured:.3g} vs bound {self.bound:.3g} ({verdict})"


def assert_checks(checks: Sequence[ErrorCheck], context: str) -> None:
    bad = [c for c in checks if not c.ok]
    if bad:
        pytest.fail(f"{context}: " + "; ".join(c.line() for c in checks), pytrace=False)


def int8_linear_checks(x: Any, weight: Any, bias: Any, out: Any, unit_roundoff: float) -> list[ErrorCheck]:
    """Judge ``out`` = Linear8bitLt(x) against the exact linear x @ W.T + b (float64).

    LLM.int8() with threshold 0 quantises each weight row i by its absmax s_i and each input row
    r by its absmax a_r to int8 (127 levels each side), rounding to nearest: the weight error is
    at most s_i/254 and the input error at most a_r/254. With u the unit roundoff of the output
    dtype (dequantised values and the output are rounded to it) and accumulation in float32
    (u32 = 2**-24), elementwise, never exceeded:

        |dy_ri| <= s_i/254 * sum_j|x_rj| + a_r/254 * sum_j|W_ij| + K*a_r*s_i/254**2
                   + u * (|y_ri| + sum_j|x_rj||W_ij|) + K*u32*sum_j|x_rj||W_ij|

    That worst case is loose (~sqrt(K) above typical), so a second, normwise check catches a
    systematic error of a few percent: rounding to nearest leaves errors uniform on
    [-step/2, step/2] (variance step**2/12), which predicts the expected squared output error;
    the measured ||dy|| must stay under 3x the root of that prediction. (If only the weights are
    quantised, as some backends do, the prediction over-counts and the checks stay valid.)
    """
    import torch

    u32 = 2.0**-24
    x64, w64 = x.detach().double().cpu(), weight.detach().double().cpu()
    ref = x64 @ w64.T + (bias.detach().double().cpu() if bias is not None else 0.0)
    got = out.detach().double().cpu()
    k = x64.shape[-1]
    s = w64.abs().amax(dim=1)  # per output row of W
    a = x64.abs().amax(dim=-1, keepdim=True)  # per input row
    abs_products = x64.abs() @ w64.abs().T
    worst = (
        (s / 254) * x64.abs().sum(-1, keepdim=True)
        + (a / 254) * w64.abs().sum(1)
        + k * a * s / 254**2
        + unit_roundoff * (ref.abs() + abs_products)
        + k * u32 * abs_products
    )
    excess = ((got - ref).abs() - worst).max().item()
    squares = (x64**2) @ (w64**2).T
    var = ((s / 127) ** 2 / 12) * (x64**2).sum(-1, keepdim=True) + ((a / 127) ** 2 / 12) * (w64**2).sum(1)
    var = var + (unit_roundoff**2 / 3) * (ref**2 + squares) + (k * u32**2 / 3) * squares
    predicted = torch.sqrt(var.sum()).item()
    return [
        ErrorCheck("elementwise error minus worst-case bound", excess, 0.0),
        ErrorCheck("normwise error ||dy||", torch.linalg.vector_norm(got - ref).item(), 3 * predicted),
    ]


def blockwise_4bit_checks(
    original: Any, restored: Any, blocksize: int, quant_type: str, unit_roundoff: float = 2.0**-24
) -> list[ErrorCheck]:
    """Round-trip bound of blockwise 4-bit quantisation (bitsandbytes.functional.quantize_4bit).

    Each block of ``blocksize`` values is scaled by its absmax into [-1, 1] and snapped to the
    nearest of 16 code values; the error is at most half the widest gap between neighbouring
    codes times the block's absmax. The NF4 code (QLoRA paper, appendix E) has its widest gap
    between -1 and -0.6962 (0.3038); FP4 (bitsandbytes' e2m1 table: 0, 0.0052, 0.1667, 0.25,
    0.3333, 0.5, 0.6667, 1 and negatives) between 0.6667 and 1 (0.3333): bounds 0.1519 and
    0.1667 of the block absmax, plus twice the unit roundoff of the dtype the values come back in.
    Mean relative error is checked too (what a scale or code-table bug shows first):
    measured 0.028 (NF4) and 0.037 (FP4) of the absmax for Gaussian blocks; bounds 0.05 and 0.06.
    """
    half_gap = {"nf4": 0.1519, "fp4": 0.1667}[quant_type]
    mean_bound = {"nf4": 0.05, "fp4": 0.06}[quant_type]
    o = original.detach().double().cpu().reshape(-1, blocksize)
    r = restored.detach().double().cpu().reshape(-1, blocksize)
    absmax = o.abs().amax(dim=1, keepdim=True)
    rel = (r - o).abs() / absmax.clamp_min(1e-30)
    return [
        ErrorCheck(f"{quant_type} max error / block absmax", rel.max().item(), half_gap + 2 * unit_roundoff + 1e-6),
        ErrorCheck(f"{quant_type} mean error / block absmax", rel.mean().item(), mean_bound),
    ]


def trajectory_checks(
    reference: Sequence[Any],
    candidate: Sequence[Any],
    losses: Sequence[float],
    rel_bound: float,
    loss_ratio_bound: float = 0.1,
) -> list[ErrorCheck]:
    """Judge an 8-bit optimizer's parameter trajectory against torch.optim's on the same problem.

    ``reference``/``candidate``: the parameters after each step (step 0 = the shared start).
    The distance between the two at each step, relative to how far the reference has moved from
    the start, must stay under ``rel_bound``; and the candidate's loss must fall below
    ``loss_ratio_bound`` times its starting value (an optimizer that does nothing, or walks the
    wrong way, fails that; torch.optim.Adam reaches 0.017 on the suite's problem).
    """
    import torch

    start = reference[0].double()
    worst = 0.0
    for ref, cand in zip(reference[1:], candidate[1:], strict=True):
        travelled = torch.linalg.vector_norm(ref.double() - start).item()
        apart = torch.linalg.vector_norm(cand.double() - ref.double()).item()
        worst = max(worst, apart / max(travelled, 1e-30))
    return [
        ErrorCheck("max over steps of |p8 - p32| / |p32 - p0|", worst, rel_bound),
        ErrorCheck("final loss / initial loss", losses[-1] / losses[0], loss_ratio_bound),
    ]


# -- attention: judged the way flash-attention judges itself ------------------------------------
def attention_math(q: Any, k: Any, v: Any, causal: bool, scale: float | None = None) -> Any:
    """Plain attention on (batch, seq, heads, dim) tensors in their own dtype; k/v may have fewer
    heads (GQA/MQA: query head h reads kv head h // (Hq // Hkv))."""
    import torch

    hq, hkv = q.shape[2], k.shape[2]
    if hq != hkv:
        k = k.repeat_interleave(hq // hkv, dim=2)
        v = v.repeat_interleave(hq // hkv, dim=2)
    scale = scale if scale is not None else q.shape[-1] ** -0.5
    scores = torch.einsum("bqhd,bkhd->bhqk", q, k) * scale
    if causal:
        sq, sk = q.shape[1], k.shape[1]
        # flash-attn >= 2.1 aligns the causal mask to the bottom right when sq != sk
        keep = torch.ones(sq, sk, dtype=torch.bool, device=q.device).tril(diagonal=sk - sq)
        scores = scores.masked_fill(~keep, float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    return torch.einsum("bhqk,bkhd->bqhd", probs, v)


def error_ratio_check(what: str, got: Any, plain: Any, reference: Any, factor: float) -> ErrorCheck:
    """flash-attention's rule: max|got - ref| <= factor * max|plain - ref| + rounding slack, where
    ``plain`` is a straightforward implementation in the same low precision and ``ref`` the fp32
    one. The slack (twice the fp32 rounding of the reference's values) keeps an exact kernel from
    failing when the plain error is 0."""
    ref = reference.detach().float()
    slack = 2 * ((ref + 0.3 - 0.3) - ref).abs().max().item()
    got_err = (got.detach().float() - ref).abs().max().item()
    plain_err = (plain.detach().float() - ref).abs().max().item()
    return ErrorCheck(f"{what} max error (plain {plain_err:.3g}, x{factor:g})", got_err, factor * plain_err + slack)


def attention_checks(
    run: Any,
    q: Any,
    k: Any,
    v: Any,
    causal: bool,
    fwd_factor: float = 2.0,
    bwd_factor: float = 10.0,
    seed: int = 0,
    math: Any = None,
) -> list[ErrorCheck]:
    """Forward and backward of ``run(q, k, v) -> out`` (low precision, (batch, seq, heads, dim))
    against fp32 math attention, relative to plain math attention in the same precision.
    ``math(q, k, v)`` replaces :func:`attention_math` (variable-length batches)."""
    import torch

    if math is None:

        def math(a: Any, b: Any, c: Any) -> Any:
            return attention_math(a, b, c, causal)

    grad_out = torch.randn((*q.shape[:-1], v.shape[-1]), generator=torch.Generator().manual_seed(seed))
    grad_out = grad_out.to(device=q.device, dtype=q.dtype)

    def forward_backward(fn: Any, dtype: Any) -> tuple[Any, ...]:
        leaves = [t.detach().to(dtype).requires_grad_() for t in (q, k, v)]
        out = fn(*leaves)
        grads = torch.autograd.grad(out, leaves, grad_out.to(dtype))
        return (out.detach(), *grads)

    got = forward_backward(run, q.dtype)
    reference = forward_backward(math, torch.float32)
    plain = forward_backward(math, q.dtype)
    names = ("out", "dq", "dk", "dv")
    return [
        error_ratio_check(name, g, p, r, fwd_factor if name == "out" else bwd_factor)
        for name, g, p, r in zip(names, got, plain, reference, strict=True)
    ]
