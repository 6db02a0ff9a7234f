"""Running one known-issue case: seeded inputs, the op on the device and in float64 on the CPU, judging.

An op is two functions of the case's shapes and options (:class:`Op`): ``inputs`` builds seeded CPU
tensors whose values are exact in the case's dtype, ``run`` computes the outputs (a dict of tensors)
on whatever device and dtype it is handed. The reference is the same ``run`` on the CPU in float64
(integer and bool tensors keep their dtype), so a comparison measures the kernel, not the rounding
of its inputs. Ops may also raise :class:`Reproduced` for conditions that are not numbers (a result
that changes between identical calls). Anything the device run raises is the report reproduced (an
error report) or at least a failure of the row; anything the reference raises is a bug here.

:func:`reproduce` returns an :class:`Outcome`; the failure message always starts with the report's
URL, so the compatibility report and the terminal both name the report.
"""

from __future__ import annotations

import contextlib
import math
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F

from pytest_rocm import default_tolerance

from .cases import FEATURES, Case

DTYPES = {
    "float64": torch.float64,
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "bool": torch.bool,
}


class Reproduced(Exception):
    """An op's own check found the report's condition (e.g. a result that changes between calls)."""


@dataclass
class Ctx:
    device: torch.device
    dtype: torch.dtype
    reference: bool
    options: dict[str, Any]
    #: facts for the report (which SDPA backend ran, BLAS library...); only the device run's are kept
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def on_gpu(self) -> bool:
        return self.device.type == "cuda" and not self.reference


@dataclass
class Op:
    inputs: Callable[[dict[str, Any], dict[str, Any], torch.Generator, torch.dtype], dict[str, torch.Tensor]]
    run: Callable[[dict[str, torch.Tensor], Ctx], dict[str, torch.Tensor]]
    #: inputs made directly on the device for a timing run (kind "slow"): no CPU copy of a huge shape
    timing_inputs: Callable[[dict[str, Any], torch.device, torch.dtype], dict[str, torch.Tensor]] | None = None


@dataclass
class Outcome:
    failure: str | None = None
    skip: str | None = None
    records: list[dict[str, Any]] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)


# -- inputs ---------------------------------------------------------------------------------------------
def _exact(t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Round to ``dtype`` and back: values every run of the case sees exactly."""
    if dtype in (torch.float16, torch.bfloat16):
        return t.to(dtype).float()
    return t.to(torch.float64) if dtype == torch.float64 else t.float()


def _carrier(dtype: torch.dtype) -> torch.dtype:
    """The dtype seeded values are drawn in: float64 for float64 cases, else float32 (twice as fast)."""
    return torch.float64 if dtype == torch.float64 else torch.float32


def _randn(shape: Any, gen: torch.Generator, dtype: torch.dtype, scale: float = 1.0) -> torch.Tensor:
    return _exact(torch.randn(tuple(shape), generator=gen, dtype=_carrier(dtype)).mul_(scale), dtype)


def _rand(shape: Any, gen: torch.Generator, dtype: torch.dtype, scale: float = 1.0) -> torch.Tensor:
    return _exact(torch.rand(tuple(shape), generator=gen, dtype=_carrier(dtype)).mul_(scale), dtype)


def _cast(inputs: dict[str, torch.Tensor], device: torch.device, dtype: torch.dtype) -> dict[str, torch.Tensor]:
    out = {}
    for name, t in inputs.items():
        out[name] = t.to(device=device, dtype=dtype) if t.is_floating_point() else t.to(device)
    return out


# -- scaled_dot_product_attention -----------------------------------------------------------------------
_BACKENDS = {
    "flash": "FLASH_ATTENTION",
    "efficient": "EFFICIENT_ATTENTION",
    "math": "MATH",
    "cudnn": "CUDNN_ATTENTION",
}


def _sdpa_inputs(shapes: dict[str, Any], o: dict[str, Any], gen: torch.Generator, dtype: torch.dtype):
    b, h, lq, d = shapes["q"]
    b, h, lk, d = shapes.get("kv", (b, h, lq, d))
    dist = _rand if o.get("qk_dist") == "rand" else _randn
    if "q_fill" in o:
        q = _exact(torch.full((b, h, lq, d), float(o["q_fill"])), dtype)
        k = q.clone()
    elif "qk_fill" in o:
        q = _exact(torch.full((b, h, lq, d), float(o["qk_fill"])), dtype)
        k = _exact(torch.full((b, h, lk, d), float(o["qk_fill"])), dtype)
    else:
        q = dist((b, h, lq, d), gen, dtype, o.get("qk_scale", 1.0))
        k = dist((b, h, lk, d), gen, dtype, o.get("qk_scale", 1.0))
    if o.get("kv_clone_q"):
        v = q.clone()
    elif o.get("value_layout") == "heads-transposed-view":
        v = _randn((b, lk, h * d), gen, dtype)  # made a (b, h, lk, d) view in run(), as the report does
    else:
        v = (_rand if o.get("v_dist") == "rand" else _randn)((b, h, lk, d), gen, dtype)
    inputs = {"q": q, "k": k, "v": v}
    mask = o.get("mask")
    if mask == "bool-ones":
        inputs["mask"] = torch.ones(b, 1, lq, lk, dtype=torch.bool)
    elif mask == "float-left-padded-causal":
        inputs["mask"] = _left_padded_causal(b, lq, o["left_padding"], dtype)
    return inputs


def _left_padded_causal(batch: int, length: int, padding: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    """transformers' 4-D float mask: finfo.min where masked; a padding query row attends to everything."""
    low = torch.finfo(dtype if dtype.is_floating_point and dtype != torch.float64 else torch.float16).min
    mask = torch.zeros(batch, 1, length, length)
    causal = torch.ones(length, length).triu(1).bool()
    for i, pad in enumerate(padding):
        masked = causal.clone()
        masked[:, :pad] = True
        masked[:pad, :] = False  # rows of padding tokens: unmasked, so their softmax is not all -inf
        mask[i, 0][masked] = low
    return mask


@contextlib.contextmanager
def _backends(names: tuple[str, ...] | None) -> Iterator[None]:
    if names is None:
        yield
        return
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel([getattr(SDPBackend, _BACKENDS[n]) for n in names]):
        yield


def _sdpa_run(t: dict[str, torch.Tensor], ctx: Ctx) -> dict[str, torch.Tensor]:
    q, k, v = t["q"], t["k"], t["v"]
    if ctx.options.get("value_layout") == "heads-transposed-view":
        b, h, lk, d = k.shape
        v = v.view(b, lk, h, d).transpose(1, 2)  # non-contiguous, as in the report
        ctx.info["value_strides"] = list(v.stride())
    mask = t.get("mask")

    def call() -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    if not ctx.on_gpu:
        return {"out": call()}
    strict = "sdpa-backend" in ctx.info.get("needs", ())
    outs: dict[str, torch.Tensor] = {}
    ran: dict[str, str] = {}
    for names in ctx.options.get("backends") or [None]:
        label = "default" if names is None else "+".join(names)
        try:
            with _backends(names):
                outs[f"out[{label}]"] = call()
            ran[label] = "ran"
        except RuntimeError as exc:
            if strict or "No available kernel" not in str(exc):
                raise
            ran[label] = "not available: " + str(exc).strip().splitlines()[0][:160]
    ctx.info["sdpa_backends"] = ran
    return outs


# -- GEMM -----------------------------------------------------------------------------------------------
def _matmul_inputs(shapes, o, gen, dtype):
    if o.get("dist") == "uniform":
        lo, hi = o["low"], o["high"]
        return {
            n: _exact(lo + (hi - lo) * torch.rand(shapes[n], generator=gen, dtype=torch.float64), dtype) for n in "ab"
        }
    if o.get("dist") == "rand":
        return {n: _rand(shapes[n], gen, dtype) for n in "ab"}
    return {n: _randn(shapes[n], gen, dtype) for n in "ab"}


def _blas_facts(ctx: Ctx) -> None:
    if ctx.on_gpu:
        with contextlib.suppress(Exception):
            ctx.info["preferred_blas_library"] = str(torch.backends.cuda.preferred_blas_library())
        with contextlib.suppress(Exception):
            ctx.info["tunableop_enabled"] = bool(torch.cuda.tunable.is_enabled())


def _matmul_run(t, ctx):
    _blas_facts(ctx)
    return {"out": t["a"] @ t["b"]}


def _linear_inputs(shapes, o, gen, dtype):
    n = shapes["w"][0]
    return {
        "x": _randn(shapes["x"], gen, dtype),
        "w": _randn(shapes["w"], gen, dtype),
        "bias": _randn((n,), gen, dtype),
    }


def _linear_run(t, ctx):
    _blas_facts(ctx)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = F.linear(t["x"], t["w"], t["bias"])
    fallback = [str(w.message) for w in caught if "hipBLASLt" in str(w.message)]
    if fallback and not ctx.reference:
        ctx.info["blas_warnings"] = fallback[:3]
    return {"out": out}


def _einsum_views_inputs(shapes, o, gen, dtype):
    return {"q": _randn(shapes["q"], gen, dtype), "k": _randn(shapes["q"], gen, dtype)}


def _einsum_views_run(t, ctx):
    _blas_facts(ctx)
    shapes = ctx.options["_shapes"]
    q = t["q"].split(shapes["q_split"], dim=-2)[0]  # views into the full tensors, as in the report
    k = t["k"].split(shapes["k_split"], dim=-2)[0]
    return {"out": torch.einsum("b h i d, b h j d -> b h i j", q, k)}


def _mlp_inputs(shapes, o, gen, dtype):
    i, h, n = shapes["in"], shapes["hidden"], shapes["out"]
    return {
        "x": _randn((shapes["batch"], i), gen, dtype),
        "w1": _randn((h, i), gen, dtype, 1 / math.sqrt(i)),
        "b1": _randn((h,), gen, dtype, 0.1),
        "w2": _randn((n, h), gen, dtype, 1 / math.sqrt(h)),
        "b2": _randn((n,), gen, dtype, 0.1),
    }


def _mlp_run(t, ctx):
    _blas_facts(ctx)
    hidden = F.relu(F.linear(t["x"], t["w1"], t["b1"]))
    return {"out": F.linear(hidden, t["w2"], t["b2"])}


# -- convolution, norms ---------------------------------------------------------------------------------
def _conv_inputs(shapes, o, gen, dtype):
    k = shapes["w"][0]
    fan_in = math.prod(shapes["w"][1:])
    return {
        "x": _randn(shapes["x"], gen, dtype),
        "w": _randn(shapes["w"], gen, dtype, 1 / math.sqrt(fan_in)),
        "bias": _randn((k,), gen, dtype, 0.1),
    }


def _conv_timing_inputs(shapes, device, dtype):
    fan_in = math.prod(shapes["w"][1:])
    return {
        "x": torch.randn(shapes["x"], device=device, dtype=dtype),
        "w": torch.randn(shapes["w"], device=device, dtype=dtype) / math.sqrt(fan_in),
        "bias": torch.randn(shapes["w"][0], device=device, dtype=dtype) * 0.1,
    }


def _conv2d_run(t, ctx):
    return {"out": F.conv2d(t["x"], t["w"], t["bias"], padding=1)}


def _conv3d_run(t, ctx):
    return {"out": F.conv3d(t["x"], t["w"], t["bias"], padding=1)}


def _miopen_smoke_inputs(shapes, o, gen, dtype):
    c_out = shapes["out"]
    c2, c3 = shapes["conv2d"][1], shapes["conv3d"][1]
    c_bn = shapes["batchnorm"][1]
    return {
        "x2": _randn(shapes["conv2d"], gen, dtype),
        "w2": _randn((c_out, c2, 3, 3), gen, dtype, 1 / math.sqrt(9 * c2)),
        "x3": _randn(shapes["conv3d"], gen, dtype),
        "w3": _randn((c_out, c3, 3, 3, 3), gen, dtype, 1 / math.sqrt(27 * c3)),
        "xb": _randn(shapes["batchnorm"], gen, dtype),
        "gamma": _exact(1 + 0.1 * torch.randn(c_bn, generator=gen, dtype=torch.float64), dtype),
        "beta": _randn((c_bn,), gen, dtype, 0.1),
    }


def _miopen_smoke_run(t, ctx):
    return {
        "conv2d": F.conv2d(t["x2"], t["w2"], padding=1),
        "conv3d": F.conv3d(t["x3"], t["w3"], padding=1),
        # training-mode batch norm (batch statistics), what nn.BatchNorm2d does in train()
        "batchnorm2d": F.batch_norm(t["xb"], None, None, t["gamma"], t["beta"], training=True),
    }


def _layer_norm_inputs(shapes, o, gen, dtype):
    return {"x": _randn(shapes["x"], gen, dtype), "w": torch.ones(shapes["x"][-1])}


def _layer_norm_run(t, ctx):
    return {"out": F.layer_norm(t["x"], (t["x"].shape[-1],), weight=t["w"], bias=None, eps=1e-5)}


# -- embedding, topk, sum, sort -------------------------------------------------------------------------
def _embedding_inputs(shapes, o, gen, dtype):
    vocab, dim = shapes["vocab"], shapes["dim"]
    return {
        "weight": _randn((vocab, dim), gen, dtype),
        "indices": torch.randint(0, vocab, shapes["indices"], generator=gen),
    }


def _embedding_run(t, ctx):
    weight = t["weight"].detach().clone().requires_grad_(True)
    F.embedding(t["indices"], weight, sparse=True).sum().backward()
    grad = weight.grad
    assert grad is not None
    ctx.info["grad_layout"] = str(grad.layout)
    return {"weight.grad": grad.coalesce().to_dense() if grad.is_sparse else grad}


def _topk_inputs(shapes, o, gen, dtype):
    # distinct values (no ties to break differently): a permutation, scaled so it is exact in the dtype
    rows, cols = shapes["x"]
    values = torch.stack([torch.randperm(cols, generator=gen) for _ in range(rows)]).double()
    return {"x": _exact(values - cols / 2, dtype)}


def _topk_run(t, ctx):
    shapes = ctx.options["_shapes"]
    x, k = t["x"], shapes["k"]
    first = torch.topk(x, k, dim=-1)
    if not ctx.reference:
        changed = torch.zeros(x.shape[0], dtype=torch.bool, device=x.device)
        for _ in range(shapes["repeats"] - 1):
            changed |= (torch.topk(x, k, dim=-1).indices != first.indices).any(dim=-1)
        n = int(changed.sum())
        ctx.info["rows_changed"] = n
        if n:
            raise Reproduced(f"topk indices changed between identical calls in {n} of {x.shape[0]} rows")
    return {"values": first.values, "picked": x.gather(-1, first.indices)}


def _sum_inputs(shapes, o, gen, dtype):
    x = (torch.rand(shapes["x"], generator=gen) < shapes["p"]).float()
    x2 = (torch.rand(shapes["x2"], generator=gen) < shapes["p"]).float()
    return {"x": x, "x2": x2}


def _sum_run(t, ctx):
    return {"sum": t["x"].sum(), "sum(x2, dim=0)": t["x2"].sum(dim=0), "sum(x2)": t["x2"].sum()}


def _sort_bool_inputs(shapes, o, gen, dtype):
    return {"a": torch.randint(0, shapes["high"], shapes["x"], generator=gen, dtype=torch.uint8)}


def _sort_bool_run(t, ctx):
    a = t["a"]
    # the reference sorts real bools; the device sorts the report's bool view of the bytes
    values = torch.sort(a != 0).values if ctx.reference else torch.sort(a.view(torch.bool)).values
    # as 0/1 bytes: a bool whose byte is neither 0 nor 1 must still count as True
    return {"values": (values.view(torch.uint8) != 0).to(torch.uint8)}


OPS: dict[str, Op] = {
    "sdpa": Op(_sdpa_inputs, _sdpa_run),
    "matmul": Op(_matmul_inputs, _matmul_run),
    "linear": Op(_linear_inputs, _linear_run),
    "einsum-views": Op(_einsum_views_inputs, _einsum_views_run),
    "mlp": Op(_mlp_inputs, _mlp_run),
    "conv2d": Op(_conv_inputs, _conv2d_run, _conv_timing_inputs),
    "conv3d": Op(_conv_inputs, _conv3d_run, _conv_timing_inputs),
    "miopen-smoke": Op(_miopen_smoke_inputs, _miopen_smoke_run),
    "layer-norm": Op(_layer_norm_inputs, _layer_norm_run),
    "embedding-sparse-backward": Op(_embedding_inputs, _embedding_run),
    "topk": Op(_topk_inputs, _topk_run),
    "sum": Op(_sum_inputs, _sum_run),
    "sort-bool-view": Op(_sort_bool_inputs, _sort_bool_run),
}


# -- judging --------------------------------------------------------------------------------------------
def skip_reason(case: Case, device: torch.device) -> str | None:
    """Why the row cannot run here (a GPU feature on the CPU), naming the feature and the device."""
    for need in case.needs:
        if device.type != "cuda":
            return f"needs {FEATURES[need]}: a GPU feature, not available on {device.type}"
        if need == "rocm" and not torch.version.hip:
            return f"needs {FEATURES[need]}: this is torch {torch.__version__}"
    return None


def _tolerance(case: Case, dtype: str) -> dict[str, float]:
    tol = (
        default_tolerance(dtype, case.reduction).as_dict()
        if dtype in ("float64", "float32", "float16", "bfloat16")
        else {}
    )
    tol.update(case.tolerance.get(dtype, {}))
    return tol


def compare(
    name: str, got: torch.Tensor, ref: torch.Tensor, dtype: str, tol: dict[str, float]
) -> tuple[dict, str | None]:
    """One output against its float64 reference; (parity record, failure text or None).

    Floating outputs: finite where the reference is, then torch.testing.assert_close's criterion
    ``|got - ref| <= atol + rtol * |ref|`` with the dtype's rtol and atol (pytest_rocm.parity's table,
    torch.testing's defaults) and ``normwise * rms(ref)`` added to atol: rounding in a long sum is
    relative to the tensor's size, not to each element's. Computed in a few passes (outputs reach
    2^24 elements). Integer and bool outputs: equal.
    """
    got = got.detach().cpu()
    ref = ref.detach().cpu()
    record: dict[str, Any] = {"dtype": dtype, "name": name, "mode": "absolute", "numel": ref.numel()}
    if got.shape != ref.shape:
        record["ok"] = False
        return record, f"{name}: shape {tuple(got.shape)} != reference {tuple(ref.shape)}"
    if not ref.is_floating_point():
        bad = int((got != ref).sum())
        record.update(
            ok=bad == 0, n_bad=bad, max_abs=float((got.double() - ref.double()).abs().max()) if ref.numel() else 0.0
        )
        return record, None if bad == 0 else f"{name}: {bad} of {ref.numel()} elements differ from the reference"
    r = ref.double()
    diff = got.double().sub_(r).abs_()
    ref_norm = float(r.norm())
    rms = ref_norm / math.sqrt(max(1, r.numel()))
    record.update(rtol=tol["rtol"], atol=tol["atol"], normwise_tol=tol["normwise"])
    if not bool(torch.isfinite(diff).all()):
        non_finite = ~torch.isfinite(diff) & torch.isfinite(r)
        n = int(non_finite.sum())
        if n:
            record.update(ok=False, kind="non-finite", n_bad=n, max_abs=math.inf)
            return record, f"{name}: {n} of {r.numel()} outputs are inf/NaN where the reference is finite"
        diff = diff.nan_to_num_(0.0, 0.0, 0.0)  # non-finite where the reference is too: equal_nan
    atol = tol["atol"] + tol["normwise"] * rms
    excess = diff - r.abs().mul_(tol["rtol"]).add_(atol)  # > 0: outside the bound
    n_bad = int((excess > 0).sum())
    max_abs = float(diff.max()) if r.numel() else 0.0
    record.update(
        max_abs=max_abs,
        normwise=float(diff.norm()) / ref_norm if ref_norm > 0 else max_abs,
        n_bad=n_bad,
        ok=n_bad == 0,
    )
    if n_bad == 0:
        return record, None
    flat = int(excess.reshape(-1).argmax())
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), r.shape))
    record.update(
        kind="mismatch",
        worst_index=list(index),
        worst_got=float(got.reshape(-1)[flat]),
        worst_expected=float(r.reshape(-1)[flat]),
    )
    return record, (
        f"{name}: {n_bad} of {r.numel()} elements outside |got - ref| <= {atol:.3g} + {tol['rtol']:g}*|ref| "
        f"(max abs error {max_abs:.3g}, normwise {record['normwise']:.3g}); worst at {list(index)}: "
        f"got {record['worst_got']:.6g}, expected {record['worst_expected']:.6g}"
    )


def _finite_convex(name: str, got: torch.Tensor, v: torch.Tensor, dtype: str) -> tuple[dict, str | None]:
    """An attention output is a convex combination of the values: finite and within their range."""
    g = got.detach().cpu().double()
    lo, hi = float(v.double().min()), float(v.double().max())
    finite = torch.isfinite(g)
    outside = finite & ((g < lo - 1e-2 * abs(lo)) | (g > hi + 1e-2 * abs(hi)))
    record = {
        "dtype": dtype,
        "name": name,
        "mode": "finite-convex",
        "numel": g.numel(),
        "n_bad": int((~finite).sum() + outside.sum()),
        "ok": bool(finite.all() and not outside.any()),
    }
    if not bool(finite.all()):
        return record, f"{name}: {int((~finite).sum())} of {g.numel()} outputs are inf/NaN"
    if bool(outside.any()):
        return record, f"{name}: {int(outside.sum())} outputs outside the values' range [{lo:g}, {hi:g}]"
    return record, None


def _describe(device: torch.device) -> str:
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        arch = (getattr(props, "gcnArchName", "") or props.name).split(":")[0]
        return f"{device} ({arch}, torch {torch.__version__})"
    return f"{device} (torch {torch.__version__})"


def reproduce(case: Case, dtype: str, device: torch.device, scale: str) -> Outcome:
    """Run the case on ``device`` and judge it. Never raises for a device-side failure."""
    outcome = Outcome()
    skip = skip_reason(case, device)
    if skip:
        outcome.skip = skip
        return outcome
    op = OPS[case.op]
    shapes = case.shapes_for(scale, on_cpu=device.type == "cpu")
    options = {**case.options, "_shapes": shapes}
    torch_dtype = DTYPES[dtype]
    gen = torch.Generator().manual_seed(0)
    inputs = op.inputs(shapes, options, gen, torch_dtype)
    outcome.info.update(scale=scale, shapes={k: list(v) if isinstance(v, tuple) else v for k, v in shapes.items()})
    where = _describe(device)

    def failed(text: str) -> Outcome:
        outcome.failure = f"{case.url} ({case.kind}) reproduced on {where}: {text}"
        return outcome

    ref_dtype = torch.float64 if torch_dtype.is_floating_point else torch_dtype
    reference = op.run(
        _cast(inputs, torch.device("cpu"), ref_dtype), Ctx(torch.device("cpu"), ref_dtype, True, options)
    )
    ctx = Ctx(device, torch_dtype, False, options, info={"needs": case.needs})
    try:
        got = op.run(_cast(inputs, device, torch_dtype), ctx)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
    except Reproduced as exc:
        outcome.info.update({k: v for k, v in ctx.info.items() if k != "needs"})
        return failed(str(exc))
    except Exception as exc:  # the device run failing at all is the row failing; an error report reproduced
        outcome.info.update({k: v for k, v in ctx.info.items() if k != "needs"})
        message = " ".join(str(exc).strip().split())[:300]
        return failed(f"{type(exc).__name__}: {message}")
    outcome.info.update({k: v for k, v in ctx.info.items() if k != "needs"})
    tol = _tolerance(case, dtype)
    problems = []
    for name, tensor in got.items():
        base = name.split("[", 1)[0]
        if options.get("check") == "finite-convex":
            record, problem = _finite_convex(name, tensor, inputs["v"], dtype)
        else:
            record, problem = compare(name, tensor, reference[base], dtype, tol)
        outcome.records.append(record)
        if problem:
            problems.append(problem)
    if problems:
        return failed("; ".join(problems))
    if case.timing and device.type == "cuda":
        slow = _time_it(case, op, options, device, torch_dtype, outcome)
        if slow:
            return failed(slow)
    elif case.timing:
        outcome.info["timing"] = "not measured: the report's time budget applies to GPUs"
    return outcome


def _time_it(case: Case, op: Op, options: dict[str, Any], device: torch.device, dtype: torch.dtype, outcome: Outcome):
    """The report's shapes on the GPU: one warm-up call (MIOpen's find, TunableOp), then one timed."""
    assert case.timing is not None and op.timing_inputs is not None, f"{case.id}: timing needs op.timing_inputs"
    shapes = case.timing["shapes"]
    torch.manual_seed(1)
    inputs = op.timing_inputs(shapes, device, dtype)
    ctx = Ctx(device, dtype, False, {**options, "_shapes": shapes})
    op.run(inputs, ctx)
    torch.cuda.synchronize(device)
    start = time.perf_counter()
    op.run(inputs, ctx)
    torch.cuda.synchronize(device)
    seconds = time.perf_counter() - start
    budget = float(case.timing["budget_s"])
    outcome.info["timing"] = {"seconds": round(seconds, 4), "budget_s": budget, "shapes": shapes}
    if seconds > budget:
        return f"the report's shape took {seconds:.2f} s (after a warm-up call), over the row's budget of {budget:g} s"
    return None
