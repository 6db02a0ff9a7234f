"""What a failed ``assert_parity`` call records so ``rocm-compat repro`` can rebuild it where only
torch is installed: the op by a name torch alone resolves, every input's layout (shape, dtype,
strides, storage offset) and, when small, its values, the keyword arguments that are data, the
failing dtypes, the mode and the tolerances (docs/report.md, ``repro``).

Recorded only for a failed call, and bounded: at most :data:`MAX_TENSORS` tensors of at most
:data:`MAX_DIMS` dimensions; the values of all inputs together at most :data:`VALUES_LIMIT` bytes
of storage (base64 in the report: about 4/3 of that), else none of a tensor past the limit is saved
and the spec says so. A call that cannot be named or rebuilt records ``why`` instead of guessing.
"""

from __future__ import annotations

import base64
import functools
import math
import re
import sys
from collections.abc import Callable, Mapping
from typing import Any

import torch

from pytest_rocm.parity.result import ParityResult
from pytest_rocm.parity.runs import map_tensors

#: report/1's ``repro`` spec version (``pytest_rocm.repro.spec`` reads it)
SPEC_VERSION = 1
#: bytes of input storage whose values one call saves in the report, all inputs together
VALUES_LIMIT = 64 * 1024
MAX_TENSORS = 32
MAX_DIMS = 12
#: a string keyword longer than this is not recorded (the call is then not rebuildable)
MAX_STRING = 200
#: failure kinds a script can reproduce: numbers (the others are the call's structure or probe)
NUMBER_KINDS = ("mismatch", "non-finite")
#: where a callable is looked up by identity; the first namespace that holds it names it
_NAMESPACES = ("torch.nn.functional", "torch.linalg", "torch.special", "torch.fft", "torch", "torch.Tensor")
_NAME = re.compile(r"torch(\.[A-Za-z_][A-Za-z0-9_]*)+")


class NotRecordable(Exception):
    """The call cannot be rebuilt from data; the message says why."""


def resolve(name: str) -> Any:
    """The object a dotted ``torch....`` name names, by attribute lookups only (no eval)."""
    if not _NAME.fullmatch(name):
        raise NotRecordable(f"{name!r} is not a torch name")
    obj: Any = torch
    for part in name.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


def op_name(fn: Callable[..., Any]) -> str:
    """A name torch alone resolves to ``fn`` itself (checked by identity), or NotRecordable."""
    if isinstance(fn, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        candidates = [f"torch.ops.{fn}"]
    else:
        if isinstance(fn, functools.partial):
            raise NotRecordable("the op is a functools.partial: torch alone cannot name it")
        if isinstance(fn, torch.nn.Module):
            raise NotRecordable(f"the op is a module ({type(fn).__name__}): its parameters are not recorded")
        short = getattr(fn, "__name__", None)
        qual = getattr(fn, "__qualname__", "") or ""
        if not isinstance(short, str) or "<" in qual:  # <lambda>, <locals>
            raise NotRecordable(f"the op is {qual or short or type(fn).__name__}: torch alone cannot name it")
        candidates = [f"{ns}.{short}" for ns in _NAMESPACES]
        for ns in _NAMESPACES[:4]:  # torch.linalg.norm is torch._C._linalg.linalg_norm
            module = resolve(ns)
            candidates += [f"{ns}.{key}" for key, value in vars(module).items() if value is fn]
    for name in candidates:
        try:
            if resolve(name) is fn:
                return name
        except (AttributeError, NotRecordable, RuntimeError):
            continue
    raise NotRecordable(f"the op {getattr(fn, '__qualname__', fn)!r} is not a torch function, method or operator")


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _figure(value: float) -> Any:
    """A float as report/1 holds it: the words for what JSON cannot hold."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


class _Recorder:
    def __init__(self) -> None:
        self.tensors: list[dict[str, Any]] = []
        self.saved = 0

    def tensor(self, t: torch.Tensor) -> dict[str, Any]:
        if len(self.tensors) >= MAX_TENSORS:
            raise NotRecordable(f"more than {MAX_TENSORS} tensor inputs")
        if t.layout != torch.strided or t.is_meta or t.dim() > MAX_DIMS:
            raise NotRecordable(f"an input is not a strided tensor of at most {MAX_DIMS} dimensions")
        shape, stride, offset = list(t.shape), list(t.stride()), t.storage_offset()
        span = 0 if t.numel() == 0 else 1 + sum((n - 1) * s for n, s in zip(shape, stride, strict=True))
        spec: dict[str, Any] = {
            "shape": shape,
            "dtype": _dtype_name(t.dtype),
            "stride": stride,
            "storage_offset": offset,
        }
        nbytes = span * t.element_size()
        if self.saved + nbytes <= VALUES_LIMIT:
            # the storage the view reads, from its offset on: strides and overlaps rebuild exactly
            flat = t.detach().as_strided([span], [1], offset).cpu().contiguous()
            raw = flat.view(torch.uint8).numpy().tobytes() if span else b""
            spec["values"] = {"encoding": "base64", "byteorder": sys.byteorder, "data": base64.b64encode(raw).decode()}
            self.saved += nbytes
        else:
            spec["values"] = None
            spec["values_why"] = f"{nbytes} bytes: past the {VALUES_LIMIT}-byte limit of saved values"
        self.tensors.append(spec)
        return {"tensor": len(self.tensors) - 1}

    def value(self, obj: Any, where: str) -> Any:
        """``obj`` as tagged JSON data; NotRecordable for what is not data."""
        if isinstance(obj, torch.Tensor):
            return self.tensor(obj)
        if obj is None or isinstance(obj, (bool, int)):
            return obj
        if isinstance(obj, float):
            return obj if math.isfinite(obj) else {"float": _figure(obj)}
        if isinstance(obj, str):
            if len(obj) > MAX_STRING:
                raise NotRecordable(f"{where} is a string of more than {MAX_STRING} characters")
            return obj
        if isinstance(obj, torch.dtype):
            return {"dtype": _dtype_name(obj)}
        if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
            return {"tuple": [self.value(o, where) for o in obj]}
        if isinstance(obj, list):
            return {"list": [self.value(o, where) for o in obj]}
        raise NotRecordable(f"{where} is a {type(obj).__name__}: not data a script can rebuild")


def _as_program(
    fn: Callable[..., Any],
    args: Any,
    kwargs: Mapping[str, Any],
    dev: torch.device,
    dtype: str,
    recorder: _Recorder,
    unnamed: str,
) -> dict[str, Any]:
    """``op``, ``args``, ``kwargs`` and ``program`` of an unnamed callable (``parity.program``)."""
    from pytest_rocm.parity.program import NotTraceable, trace  # only for a failure of an unnamed callable

    try:
        program = trace(fn, args, kwargs, dev, dtype, recorder.value)
    except NotTraceable as exc:
        raise NotRecordable(f"{unnamed}, and its aten ops cannot be recorded: {exc}") from None
    map_tensors((tuple(args), dict(kwargs)), lambda t: recorder.value(t, "an input") and t)
    ops = list(dict.fromkeys(step["op"] for step in program["steps"]))
    return {"op": ops[-1], "args": [], "kwargs": {}, "program": program}


def _tolerances(
    result: ParityResult, dtypes: list[str], accumulation: Mapping[str, float]
) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for c in result.comparisons:
        if c.dtype in dtypes and c.dtype not in found and c.rtol is not None and c.kind in (*NUMBER_KINDS, None):
            found[c.dtype] = {"rtol": c.rtol, "atol": c.atol, "normwise": c.normwise_tol}
            if c.cpu_factor is not None:
                found[c.dtype]["cpu_factor"] = c.cpu_factor
            if c.mode == "model" and c.cpu_normwise_factor is not None:
                # its normwise_tol is this output's bound: the parts the script recomputes it from
                found[c.dtype] |= {"normwise": 0.0, "normwise_factor": c.cpu_normwise_factor}
                found[c.dtype]["accumulation"] = accumulation.get(c.dtype, 0.0)
    return found


def call_spec(
    fn: Callable[..., Any],
    args: Any,
    kwargs: Mapping[str, Any],
    result: ParityResult,
    *,
    unsupported: str = "",
    grad: bool = False,
    seed: int = 0,
    accumulation: Mapping[str, float] | None = None,
    origin: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``repro`` spec of a failed call (see the module's docstring); ``unsupported``: why the
    call's options put it out of a standalone script's reach (a module, ...), or "". A callable
    torch cannot name is recorded as the aten ops it runs (``parity.program``) where it can be.
    ``accumulation``: the model criterion's slack per dtype; ``origin``: the corpus sample the
    inputs are (``parity.origin``), which the script rebuilds from torch's own database."""
    dtypes = sorted({c.dtype for c in result.failures if c.kind in NUMBER_KINDS}, key=result.dtypes.index)

    def tolerances() -> dict[str, dict[str, Any]]:
        return _tolerances(result, dtypes, accumulation or {})

    spec = build_spec(fn, args, kwargs, result.mode, dtypes, tolerances, unsupported, traced=result.device)
    if origin is not None and dtypes and not spec.get("op"):
        spec = _corpus_only(args, result.mode, dtypes, tolerances, str(spec.get("why", "")))
    if spec.get("op") or "corpus_why" in spec:
        spec |= {"grad": grad, "seed": seed}
        if origin is not None:
            spec["corpus"] = dict(origin)
    return spec


def _corpus_only(
    args: Any, mode: str, dtypes: list[str], tolerances: Callable[[], dict[str, dict[str, Any]]], why: str
) -> dict[str, Any]:
    """A corpus row's spec where its call is not recorded as ops (a module, a tensor it holds): the
    passed inputs' layout (and values, when small: the script checks the rebuilt sample by them),
    and ``corpus_why``: why the script cannot fall back to recorded ops in another torch."""
    spec: dict[str, Any] = {"version": SPEC_VERSION, "mode": mode, "dtypes": dtypes}
    try:
        recorder = _Recorder()
        for i, t in enumerate(args):
            recorder.value(t, f"argument {i}")
    except NotRecordable as exc:
        return spec | {"op": None, "why": str(exc)}
    return spec | {"op": None, "args": [], "kwargs": {}, "tensors": recorder.tensors, "tolerances": tolerances(),
                   "corpus_why": why[:300]}  # fmt: skip


def build_spec(
    fn: Callable[..., Any],
    args: Any,
    kwargs: Mapping[str, Any],
    mode: str,
    dtypes: list[str],
    tolerances: Callable[[], dict[str, dict[str, Any]]],
    unsupported: str = "",
    traced: str | None = None,
) -> dict[str, Any]:
    """The spec of a call of ``fn`` that failed in ``dtypes`` (``tolerances()``: each one's bound),
    or ``{"op": None, "why": ...}`` when it cannot be rebuilt (``unsupported`` says why already)."""
    spec: dict[str, Any] = {"version": SPEC_VERSION, "mode": mode, "dtypes": dtypes}
    try:
        if not dtypes:
            raise NotRecordable("no dtype failed on its numbers (structure, dtype or determinism failures only)")
        if unsupported:
            raise NotRecordable(unsupported)
        recorder = _Recorder()
        try:
            spec["op"] = op_name(fn)
        except NotRecordable as unnamed:
            if traced is None or isinstance(fn, torch.nn.Module):  # a model's parameters are no input
                raise
            spec |= _as_program(fn, args, kwargs, torch.device(traced), dtypes[0], recorder, str(unnamed))
            spec["tensors"] = recorder.tensors
            spec["tolerances"] = tolerances()
            return spec
        spec["args"] = [recorder.value(a, f"argument {i}") for i, a in enumerate(args)]
        spec["kwargs"] = {str(k): recorder.value(v, f"keyword {k}") for k, v in kwargs.items()}
        spec["tensors"] = recorder.tensors
        spec["tolerances"] = tolerances()
    except NotRecordable as exc:
        return {"version": SPEC_VERSION, "mode": mode, "dtypes": dtypes, "op": None, "why": str(exc)}
    except Exception as exc:  # recording must never turn a parity failure into a crash
        why = f"the spec could not be recorded: {type(exc).__name__}: {exc}"[:300]
        return {"version": SPEC_VERSION, "mode": mode, "dtypes": dtypes, "op": None, "why": why}
    return spec
