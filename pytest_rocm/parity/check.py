"""``assert_parity``: is this op's output on the device under test numerically right, per dtype?

One reference run (float64 on the CPU), one run per dtype on the device, every output (and, with
``grad=True``, every input gradient) compared; see docs/parity.md for the tolerance model.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import torch

from pytest_rocm.env.model import device_backend
from pytest_rocm.parity import tolerances as tols
from pytest_rocm.parity.metrics import Reference, compare_exact, compare_float
from pytest_rocm.parity.result import (
    Comparison,
    DtypeUnsupported,
    ParityError,
    ParityResult,
    failure_message,
)

__all__ = ["MODES", "DtypeUnsupported", "ParityError", "ParityResult", "assert_parity"]

MODES = ("absolute", "cpu-relative")

_TORCH_DTYPES: dict[str, torch.dtype] = {name: getattr(torch, name) for name in tols.DTYPE_NAMES}

# Error texts that mean "this op has no kernel for this dtype here" rather than a bug:
# '"addmm_impl_cpu_" not implemented for 'Half'', 'Unsupported dtype BFloat16', ...
_UNSUPPORTED = re.compile(
    r"not implemented for '(?:Half|BFloat16|Float|Double)'"
    r"|(?:not supported|unsupported)\b.*\b(?:float16|bfloat16|half|bf16|fp16|float64|double)\b"
    r"|\b(?:float16|bfloat16|half|bf16|fp16|float64|double)\b.*\b(?:not supported|unsupported)",
    re.IGNORECASE,
)


class _Structure(Exception):
    """Internal: outputs of two runs do not have the same structure."""


def assert_parity(
    fn: Callable[..., Any],
    *args: Any,
    dtypes: Sequence[str] | str = tols.DEFAULT_DTYPES,
    device: Any = None,
    mode: str = "absolute",
    grad: bool = False,
    rtol: float | None = None,
    atol: float | None = None,
    normwise: float | None = None,
    tolerances: Mapping[str, Mapping[str, float]] | None = None,
    name: str | None = None,
    kwargs: Mapping[str, Any] | None = None,
    reduction_length: int | None = None,
    allow_vacuous: bool = False,
    cpu_factor: float = 2.0,
    baseline: Callable[..., Any] | None = None,
    reference_fn: Callable[..., Any] | None = None,
    reference_dtype: str = "float64",
    default_tolerances: Mapping[str, Mapping[str, float]] | None = None,
    seed: int = 0,
) -> ParityResult:
    """Run ``fn(*args, **kwargs)`` per dtype on ``device`` and compare with a float64 CPU reference.

    Floating tensor inputs (also inside lists/tuples/dicts) are cast to the dtype; every tensor is
    moved to the device; each run gets its own copies. ``fn`` may be an ``nn.Module`` (a copy is
    cast and moved per run). Tolerance precedence, lowest first: the default table,
    ``default_tolerances`` (the fixture's markers), ``rtol``/``atol``/``normwise`` (all dtypes),
    ``tolerances[dtype]``. ``mode="cpu-relative"`` also accepts an error up to ``cpu_factor`` times
    that of ``baseline`` (default ``fn``) run on the CPU in the same dtype, plus atol.
    Raises ParityError on failure, DtypeUnsupported when a dtype has no kernel (and the rest passed).
    """
    dtype_names = _check_dtypes(dtypes)
    ref_dtype = tols.canonical_dtype(reference_dtype)
    if mode not in MODES:
        raise ValueError(f"mode={mode!r} is not one of {', '.join(MODES)}")
    if isinstance(cpu_factor, bool) or not isinstance(cpu_factor, (int, float)) or cpu_factor < 0:
        raise ValueError(f"cpu_factor={cpu_factor!r} must be a number >= 0")
    call_layer = tols.check_overrides({"rtol": rtol, "atol": atol, "normwise": normwise})
    per_dtype = tols.check_per_dtype(tolerances)
    base_layer = tols.check_per_dtype(default_tolerances)
    dev = _device(device)
    kwargs = dict(kwargs or {})
    op = name or _op_name(fn)
    k = reduction_length if reduction_length is not None else _infer_reduction_length(args, kwargs)
    result = ParityResult(name=op, mode=mode, device=str(dev), dtypes=dtype_names)

    ref_out, ref_grads = _run(
        reference_fn or fn, args, kwargs, torch.device("cpu"), _TORCH_DTYPES[ref_dtype], grad, seed
    )
    try:
        ref_leaves = [(p, Reference(t) if t is not None else None) for p, t in _leaves(ref_out, op)]
    except _Structure as exc:
        raise _structure_failure(result, dtype_names, f"the reference run: {exc}") from None
    ref_leaves += [(f"{op}.grad[{i}]", Reference(g) if g is not None else None) for i, g in enumerate(ref_grads)]

    for dtype in dtype_names:
        tol = tols.resolve(dtype, k, [base_layer.get(dtype, {}), call_layer, per_dtype.get(dtype, {})])
        try:
            out, grads = _run(fn, args, kwargs, dev, _TORCH_DTYPES[dtype], grad, seed)
            floors: dict[str, float] | None = None
            cpu_refs: dict[str, Reference] = {}
            if mode == "cpu-relative":
                cpu_out, cpu_grads = _run(
                    baseline or fn, args, kwargs, torch.device("cpu"), _TORCH_DTYPES[dtype], grad, seed
                )
                floors, cpu_refs = _cpu_floors(ref_leaves, _all_leaves(cpu_out, cpu_grads, op), tol)
        except (RuntimeError, NotImplementedError, TypeError) as exc:
            if not _UNSUPPORTED.search(str(exc)):
                raise
            result.unsupported[dtype] = str(exc).strip().splitlines()[0]
            continue
        try:
            got_leaves = _all_leaves(out, grads, op)
            _check_same_paths(ref_leaves, got_leaves)
        except _Structure as exc:
            result.comparisons.append(Comparison(dtype, op, mode, False, "structure", detail=str(exc)))
            continue
        for (path, ref), (_, got) in zip(ref_leaves, got_leaves, strict=False):
            if ref is None:
                continue
            assert got is not None, path  # _check_same_paths: a leaf the reference has, the run has
            base = Comparison(dtype, path, mode, False, None)
            if floors is not None:
                base.cpu_factor, base.cpu_max_abs = float(cpu_factor), floors[path]
            result.comparisons.append(_compare(got, cpu_refs.get(path, ref), tol, base, cpu_factor, allow_vacuous))

    if result.failures:
        raise ParityError(failure_message(result), result.kind or "mismatch", result)
    if result.unsupported:
        backend = device_backend(dev, torch)
        listed = "; ".join(f"{d}: {m}" for d, m in result.unsupported.items())
        raise DtypeUnsupported(
            f"{op} does not support {', '.join(result.unsupported)} on {backend} ({listed})",
            op,
            dict(result.unsupported),
            backend,
            result,
        )
    return result


def _compare(
    got: torch.Tensor, ref: Reference, tol: tols.Tolerance, base: Comparison, cpu_factor: float, allow_vacuous: bool
) -> Comparison:
    if got.is_floating_point() != ref.is_float or got.shape != ref.tensor.shape:
        base.ok, base.kind = False, "structure"
        base.detail = (
            f"output {base.name}: got {tuple(got.shape)} {got.dtype}, "
            f"reference {tuple(ref.tensor.shape)} {ref.tensor.dtype}"
        )
        return base
    if not ref.is_float:
        return compare_exact(got, ref, base)
    floor = cpu_factor * base.cpu_max_abs + tol.atol if base.cpu_max_abs is not None else 0.0
    return compare_float(got, ref, tol, base, floor=floor, allow_vacuous=allow_vacuous)


def _cpu_floors(
    ref_leaves: list[tuple[str, Reference | None]],
    cpu_leaves: list[tuple[str, torch.Tensor | None]],
    tol: tols.Tolerance,
) -> tuple[dict[str, float], dict[str, Reference]]:
    """The CPU same-dtype run's max error per float output; its integer outputs become the reference."""
    _check_same_paths(ref_leaves, cpu_leaves)
    floors: dict[str, float] = {}
    int_refs: dict[str, Reference] = {}
    for (path, ref), (_, cpu) in zip(ref_leaves, cpu_leaves, strict=False):
        if ref is None or cpu is None:
            continue
        if not ref.is_float:
            int_refs[path] = Reference(cpu)
            floors[path] = 0.0
            continue
        d = torch.sub(cpu.detach().to(torch.float64), ref.tensor).abs_()
        d = torch.where(torch.isfinite(d), d, 0.0)
        floors[path] = float(d.max()) if d.numel() else 0.0
    return floors, int_refs


def _structure_failure(result: ParityResult, dtypes: tuple[str, ...], why: str) -> ParityError:
    for dtype in dtypes:
        result.comparisons.append(Comparison(dtype, result.name, result.mode, False, "structure", detail=why))
    return ParityError(failure_message(result), "structure", result)


# ---- inputs and runs -------------------------------------------------------------------------


def _check_dtypes(dtypes: Sequence[str] | str) -> tuple[str, ...]:
    if isinstance(dtypes, (str, torch.dtype)):
        dtypes = (dtypes,)
    names = tuple(tols.canonical_dtype(d) for d in dtypes)
    if not names:
        raise ValueError("dtypes is empty: name at least one of " + ", ".join(tols.DTYPE_NAMES))
    return names


def _device(device: Any) -> torch.device:
    if device is None:
        return torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    return device if isinstance(device, torch.device) else torch.device(device)


def _op_name(fn: Any) -> str:
    f = fn.func if isinstance(fn, functools.partial) else fn
    if isinstance(f, torch.nn.Module):
        return type(f).__name__
    return getattr(f, "__name__", None) or type(f).__name__


def _map_tensors(obj: Any, convert: Callable[[torch.Tensor], torch.Tensor]) -> Any:
    if isinstance(obj, torch.Tensor):
        return convert(obj)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # namedtuple
        return type(obj)(*(_map_tensors(o, convert) for o in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_map_tensors(o, convert) for o in obj)
    if isinstance(obj, dict):
        return {key: _map_tensors(v, convert) for key, v in obj.items()}
    return obj


def _infer_reduction_length(args: Any, kwargs: Any) -> int:
    """K when not given: the longest dimension of any floating input (bounds any 1-axis reduction)."""
    longest = [1]

    def visit(t: torch.Tensor) -> torch.Tensor:
        if t.is_floating_point() and t.dim():
            longest.append(max(t.shape))
        return t

    _map_tensors((args, kwargs), visit)
    return max(longest)


def _run(
    fn: Callable[..., Any], args: Any, kwargs: Any, dev: torch.device, dtype: torch.dtype, grad: bool, seed: int
) -> tuple[Any, list[torch.Tensor | None]]:
    """One run on fresh copies of the inputs; with ``grad`` also the inputs' gradients."""
    leaves: list[torch.Tensor] = []

    def convert(t: torch.Tensor) -> torch.Tensor:
        if not t.is_floating_point():
            return t.detach().to(dev, copy=True)
        x = t.detach().to(dev, dtype, copy=True)
        if not grad:
            return x
        leaves.append(x.requires_grad_(True))
        return x.clone()  # a non-leaf, so an in-place fn works under autograd too

    run_args, run_kwargs = _map_tensors((args, kwargs), convert)
    if isinstance(fn, torch.nn.Module):
        fn = copy.deepcopy(fn).to(dev, dtype)
    with torch.set_grad_enabled(grad):
        out = fn(*run_args, **run_kwargs)
        if not grad:
            return out, []
        return out, _input_grads(out, leaves, seed)


def _input_grads(out: Any, leaves: list[torch.Tensor], seed: int) -> list[torch.Tensor | None]:
    """Gradients of a fixed random projection sum(out_i * w_i) of the floating outputs."""
    loss = None
    for i, (_, t) in enumerate(_leaves(out, "")):
        if t is None or not t.is_floating_point() or not t.requires_grad:
            continue
        gen = torch.Generator().manual_seed(seed + i)
        acc = torch.float64 if t.dtype == torch.float64 else torch.float32
        w = torch.randn(t.shape, generator=gen, dtype=torch.float64).to(t.device, acc)
        term = (t.to(acc) * w).sum()
        loss = term if loss is None else loss + term
    if loss is None:
        raise ValueError("grad=True, but no floating output depends on a floating input")
    return list(torch.autograd.grad(loss, leaves, allow_unused=True))


# ---- outputs ---------------------------------------------------------------------------------


def _leaves(obj: Any, path: str) -> Iterator[tuple[str, torch.Tensor | None]]:
    """(path, tensor) for every output leaf; None leaves are kept; anything else is a structure error."""
    if obj is None or isinstance(obj, torch.Tensor):
        yield path, obj
    elif isinstance(obj, (list, tuple)):
        for i, item in enumerate(obj):
            yield from _leaves(item, f"{path}[{i}]")
    elif isinstance(obj, Mapping):
        for key in sorted(obj, key=repr):
            yield from _leaves(obj[key], f"{path}[{key!r}]")
    else:
        where = f" at {path}" if path else ""
        raise _Structure(
            f"fn returned {type(obj).__name__} {obj!r:.40}{where}; parity compares "
            "tensors or tuples/lists/dicts of tensors"
        )


def _all_leaves(out: Any, grads: list[torch.Tensor | None], op: str) -> list[tuple[str, torch.Tensor | None]]:
    return list(_leaves(out, op)) + [(f"{op}.grad[{i}]", g) for i, g in enumerate(grads)]


def _check_same_paths(ref: Sequence[tuple[str, Any]], got: Sequence[tuple[str, Any]]) -> None:
    ref_paths = [(p, r is None) for p, r in ref]
    got_paths = [(p, g is None) for p, g in got]
    if ref_paths != got_paths:
        missing = [p for p in ref_paths if p not in got_paths]
        extra = [p for p in got_paths if p not in ref_paths]
        raise _Structure(f"outputs differ from the reference's: missing {_paths(missing)}, unexpected {_paths(extra)}")


def _paths(items: list[tuple[str, bool]]) -> str:
    return ", ".join(p + (" (None)" if none else "") for p, none in items) or "none"
