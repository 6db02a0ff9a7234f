"""``assert_parity``: is this op's (or model's) output on the device under test numerically right, per dtype?

One reference run (float64 on the CPU), one run per dtype on the device, every output (and, with
``grad=True``, every input and parameter gradient) compared; see docs/parity.md for the tolerance
model and the modes. Runs themselves (casting, the dtype proof, gradients) are in ``runs``.

Why this module is long: ``assert_parity`` is one public call whose checks (arguments, inputs it
cannot judge, the reference, repeatability, per-dtype runs and their failures) read best in order.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ParamSpec

import torch

from pytest_rocm.env.model import device_backend
from pytest_rocm.parity import origin, tolerances
from pytest_rocm.parity.callspec import call_spec
from pytest_rocm.parity.metrics import Judge, Reference, compare_exact, compare_float, wrap_periodic, yardsticks
from pytest_rocm.parity.options import ParityOptions
from pytest_rocm.parity.result import (
    Comparison,
    DtypeUnsupported,
    FailureKind,
    ParityError,
    ParityResult,
    announce,
    failure_message,
    no_kernel_for_dtype,
)
from pytest_rocm.parity.runs import (
    NotInDtype,
    Run,
    RunSpec,
    Structure,
    check_same_paths,
    infer_reduction_length,
    map_tensors,
    run,
    unjudgeable,
)

__all__ = ["MODES", "DtypeUnsupported", "ParityError", "ParityResult", "assert_parity"]

MODES = ("absolute", "cpu-relative", "model")

_TORCH_DTYPES: dict[str, torch.dtype] = {name: getattr(torch, name) for name in tolerances.DTYPE_NAMES}


#: what a nondeterministic failure says (docs/parity.md)
NONDETERMINISTIC_HINT = (
    "outputs differ between two runs of the same input: is the model in train mode / using dropout? call .eval()"
)

Leaves = list[tuple[str, Reference | None]]
if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack from 3.11; a string here, never imported

    from pytest_rocm.parity.options import ParitySettings

_P = ParamSpec("_P")


def _announced(check: Callable[_P, ParityResult]) -> Callable[_P, ParityResult]:
    """Tell the listeners (the plugin's report) of every finished result, whether it passed or not."""

    @functools.wraps(check)
    def announcing(*args: _P.args, **kwargs: _P.kwargs) -> ParityResult:
        __tracebackhide__ = True  # pytest shows the caller's line and the message, not this wrapper
        try:
            result = check(*args, **kwargs)
        except (ParityError, DtypeUnsupported) as exc:
            announce(exc.result)
            raise
        announce(result)
        return result

    return announcing


@_announced
def assert_parity(
    fn: Callable[..., Any],
    *args: Any,
    kwargs: Mapping[str, Any] | None = None,
    device: Any = None,
    name: str | None = None,
    options: ParityOptions | None = None,
    **settings: Unpack[ParitySettings],
) -> ParityResult:
    """Run ``fn(*args, **kwargs)`` per dtype on ``device`` and compare with a float64 CPU reference.

    Floating tensor inputs (also inside lists/tuples/dicts) are cast to the dtype; every tensor is
    moved to the device; each run gets its own copies. ``fn`` may be an ``nn.Module`` (a copy is
    cast and moved per run); a closure over a module names it as ``module=`` (its parameters and
    buffers are swapped for cast copies during each run). Every run must prove it computed in its
    dtype (kind ``dtype`` otherwise). Tolerance precedence, lowest first: the default table,
    ``default_tolerances`` (the fixture's markers), ``rtol``/``atol``/``normwise`` (all dtypes),
    ``tolerances[dtype]``. ``mode="cpu-relative"`` also accepts an error up to ``cpu_factor`` (2)
    times that of ``baseline`` (default ``fn``) run on the CPU in the same dtype, plus atol;
    ``mode="model"`` judges the error against the reference rounded to the dtype after every op.
    ``periodic``: a period (or ``{output name: period}``) for outputs that wrap around.
    Raises ParityError on failure, DtypeUnsupported when a dtype has no kernel (and the rest passed).

    The call is ``fn``, ``args``, ``kwargs``, ``device`` and ``name``; how it is judged is
    ``options`` (:class:`~pytest_rocm.parity.options.ParityOptions`), each of whose fields may
    also be given as a keyword here (overriding ``options``).
    """
    __tracebackhide__ = True  # a failure reads as the caller's line and the table, not our source
    opts = (options or ParityOptions()).updated(settings)
    dtypes = tolerances.DEFAULT_DTYPES if opts.dtypes is None else opts.dtypes
    mode, grad, cpu_factor, module = opts.mode, opts.grad, opts.cpu_factor, opts.module
    allow_vacuous, baseline, reference_fn = opts.allow_vacuous, opts.baseline, opts.reference_fn
    dtype_names = _check_dtypes(dtypes)
    ref_dtype = tolerances.canonical_dtype(opts.reference_dtype)
    if mode not in MODES:
        raise ValueError(f"mode={mode!r} is not one of {', '.join(MODES)}")
    if cpu_factor is not None and (
        isinstance(cpu_factor, bool) or not isinstance(cpu_factor, (int, float)) or cpu_factor < 0
    ):
        raise ValueError(f"cpu_factor={cpu_factor!r} must be a number >= 0")
    if module is not None and not isinstance(module, torch.nn.Module):
        raise ValueError(f"module={module!r} is not a torch.nn.Module")
    periods = tolerances.check_periodic(opts.periodic)
    call_layer = tolerances.check_overrides({"rtol": opts.rtol, "atol": opts.atol, "normwise": opts.normwise})
    per_dtype = tolerances.check_per_dtype(opts.tolerances)
    base_layer = tolerances.check_per_dtype(opts.default_tolerances)
    dev = _device(device)
    op = name or _op_name(fn)
    spec = RunSpec(args, dict(kwargs or {}), grad, opts.seed, op, module)
    k = opts.reduction_length if opts.reduction_length is not None else _reduction_length(fn, spec, mode)
    result = ParityResult(name=op, mode=mode, device=str(dev), dtypes=dtype_names)
    reference = reference_fn or fn
    cpu = torch.device("cpu")

    _refuse_unjudgeable_inputs(op, spec.args, spec.kwargs)
    ref_leaves = _references(_guarded_run(result, dtype_names, reference, spec, cpu, ref_dtype), result, dtype_names)
    periods = tolerances.periods_by_path(periods, [path for path, _ in ref_leaves], op)
    if mode != "absolute":  # these modes judge against a run of the same code: it must be repeatable
        _check_repeatable(result, dtype_names, reference, spec, ref_dtype, ref_leaves, k)

    for dtype in dtype_names:
        tol = tolerances.resolve(dtype, k, [base_layer.get(dtype, {}), call_layer, per_dtype.get(dtype, {})])
        cpu_run: Run | None = None
        try:
            got = _run(fn, args, spec.kwargs, dev, _TORCH_DTYPES[dtype], spec)
            if mode == "cpu-relative":
                cpu_run = _run(baseline or fn, args, spec.kwargs, cpu, _TORCH_DTYPES[dtype], spec)
            elif mode == "model" and dtype != "float64":
                cpu_run = _run(reference, args, spec.kwargs, cpu, torch.float64, spec, round_to=_TORCH_DTYPES[dtype])
        except NotInDtype as exc:
            result.comparisons.append(Comparison(dtype, op, mode, False, "dtype", detail=str(exc)))
            continue
        except (RuntimeError, NotImplementedError, TypeError) as exc:
            if not no_kernel_for_dtype(str(exc)):
                raise
            result.unsupported[dtype] = str(exc).strip().splitlines()[0]
            continue
        try:
            got_leaves = got.leaves(op)
            check_same_paths(ref_leaves, got_leaves)
            yard = {}
            if cpu_run is not None:
                cpu_leaves = cpu_run.leaves(op)
                check_same_paths(ref_leaves, cpu_leaves)
                yard = yardsticks(ref_leaves, _wrapped(cpu_leaves, ref_leaves, periods))
        except Structure as exc:
            result.comparisons.append(Comparison(dtype, op, mode, False, "structure", detail=str(exc)))
            continue
        judge = Judge(mode, tol, allow_vacuous, cpu_factor, tolerances.accumulation_slack(dtype, k))
        for (path, ref), (_, value) in zip(ref_leaves, got_leaves, strict=False):
            if ref is None:
                continue
            assert value is not None, path  # check_same_paths: a leaf the reference has, the run has
            ((_, value),) = _wrapped([(path, value)], [(path, ref)], periods)
            result.comparisons.append(judge(value, ref, Comparison(dtype, path, mode, False, None), yard.get(path)))

    numbers_failed = any(c.kind in ("mismatch", "non-finite") for c in result.failures)
    if numbers_failed and mode == "absolute":  # wrong numbers may be a model that is not repeatable
        _check_repeatable(result, dtype_names, reference, spec, ref_dtype, ref_leaves, k, raise_now=False)
    if result.failures:
        # built when the report asks (it may run fn once more to trace it): a run without a report
        # neither pays for it nor calls the user's function again
        result.repro_of = functools.partial(
            call_spec, fn, spec.args, spec.kwargs, result, unsupported=_out_of_script(opts), grad=grad, seed=opts.seed,
            accumulation={d: tolerances.accumulation_slack(d, k) for d in dtype_names}, origin=origin.current(),
        )  # fmt: skip
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


def _out_of_script(opts: ParityOptions) -> str:
    """Why a standalone script (``rocm-compat repro``) cannot judge this call like assert_parity, or ""."""
    if tolerances.canonical_dtype(opts.reference_dtype) != "float64":
        return f"reference_dtype={opts.reference_dtype}: the script's reference is float64"
    for field, why in (
        ("module", "module=: the module's parameters are not recorded"),
        ("baseline", "baseline=: a second function torch alone cannot name"),
        ("reference_fn", "reference_fn=: a second function torch alone cannot name"),
        ("periodic", "periodic=: the script does not wrap outputs around"),
    ):
        if getattr(opts, field):
            return why
    return ""


def _wrapped(leaves: list[tuple[str, Any]], refs: Leaves, periods: dict[str, float]) -> list[tuple[str, Any]]:
    """Floating outputs with a period (``tolerances.periods_by_path``) moved to the representative nearest the reference."""
    out = []
    for (path, value), (_, ref) in zip(leaves, refs, strict=True):
        period = periods.get(path)
        if period is not None and ref is not None and ref.is_float and value is not None and value.is_floating_point():
            value = wrap_periodic(value, ref, period)
        out.append((path, value))
    return out


def _run(
    fn: Callable[..., Any],
    args: Any,
    kwargs: Any,
    dev: torch.device,
    dtype: torch.dtype,
    spec: RunSpec,
    round_to: torch.dtype | None = None,
) -> Run:
    """Every run of a call goes through here: the seam tests use to break only the device runs
    (those whose ``dtype`` is not float64; the model yardstick computes in float64, rounding to
    ``round_to``, on the reference's side). ``args``/``kwargs`` are ``spec``'s, for such wrappers."""
    __tracebackhide__ = True  # an error of fn reads from fn's own frame
    if round_to is not None:
        return run(fn, spec, dev, round_to, emulate=True)
    return run(fn, spec, dev, dtype)


def _guarded_run(
    result: ParityResult, dtypes: tuple[str, ...], fn: Callable[..., Any], spec: RunSpec, dev: Any, dtype: str
) -> Run:
    """The reference run; one that did not compute in its dtype fails every dtype."""
    __tracebackhide__ = True
    try:
        return _run(fn, spec.args, spec.kwargs, dev, _TORCH_DTYPES[dtype], spec)
    except NotInDtype as exc:
        raise _fail_all(result, dtypes, "dtype", f"the reference: {exc}") from None


def _refuse_unjudgeable_inputs(op: str, args: Any, kwargs: Any) -> None:
    """A sparse, meta or nested input: one clear ValueError naming it, never a raw torch error
    from deep inside the comparison."""
    found: list[str] = []

    def visit(t: torch.Tensor) -> torch.Tensor:
        problem = unjudgeable(t)
        if problem and not found:
            found.append(problem)
        return t

    for where, value in [*((f"argument {i}", a) for i, a in enumerate(args)), *((k, v) for k, v in kwargs.items())]:
        map_tensors(value, visit)
        if found:
            raise ValueError(f"assert_parity({op}): {where} {found[0]}")


def _references(ref_run: Run, result: ParityResult, dtypes: tuple[str, ...]) -> Leaves:
    __tracebackhide__ = True
    try:
        leaves = ref_run.leaves(result.name)
    except Structure as exc:
        raise _fail_all(result, dtypes, "structure", f"the reference run: {exc}") from None
    return [(p, Reference(t) if t is not None else None) for p, t in leaves]


def _check_repeatable(
    result: ParityResult,
    dtypes: tuple[str, ...],
    fn: Callable[..., Any],
    spec: RunSpec,
    ref_dtype: str,
    ref_leaves: Leaves,
    k: int,
    raise_now: bool = True,
) -> None:
    """Run the reference again: where it differs from the first beyond the reference dtype's rounding,
    the comparisons prove nothing (dropout, train mode, random numbers): kind ``nondeterministic``."""
    __tracebackhide__ = True
    again = _run(fn, spec.args, spec.kwargs, torch.device("cpu"), _TORCH_DTYPES[ref_dtype], spec).leaves(result.name)
    tol = tolerances.default_tolerance(ref_dtype, k)
    found = []
    for (path, ref), (_, value) in zip(ref_leaves, again, strict=False):
        if ref is None or value is None or value.shape != ref.tensor.shape:
            continue
        base = Comparison(ref_dtype, path, result.mode, False, None)
        c = (
            compare_float(value, ref, tol, base, allow_vacuous=True)
            if ref.is_float
            else compare_exact(value, ref, base)
        )
        if not c.ok:
            c.kind, c.detail = "nondeterministic", NONDETERMINISTIC_HINT
            c.name = f"{path} (reference run twice)"
            found.append(c)
    if not found:
        return
    result.comparisons.extend(found)
    if raise_now:
        raise ParityError(failure_message(result), "nondeterministic", result)


def _fail_all(result: ParityResult, dtypes: tuple[str, ...], kind: FailureKind, why: str) -> ParityError:
    for dtype in dtypes:
        result.comparisons.append(Comparison(dtype, result.name, result.mode, False, kind, detail=why))
    return ParityError(failure_message(result), kind, result)


# ---- arguments -------------------------------------------------------------------------------


def _check_dtypes(dtypes: Sequence[str] | str) -> tuple[str, ...]:
    if isinstance(dtypes, (str, torch.dtype)):
        dtypes = (dtypes,)
    names = tuple(tolerances.canonical_dtype(d) for d in dtypes)
    if not names:
        raise ValueError("dtypes is empty: name at least one of " + ", ".join(tolerances.DTYPE_NAMES))
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


def _reduction_length(fn: Any, spec: RunSpec, mode: str) -> int:
    """K: the longest dimension of any floating input; in model mode also of the model's parameters
    (a closure over a model often has integer inputs only)."""
    k = infer_reduction_length(spec.args, spec.kwargs)
    for model in (fn, spec.module) if mode == "model" else ():
        if isinstance(model, torch.nn.Module):
            k = max([k] + [max(p.shape) for p in model.parameters() if p.is_floating_point() and p.dim()])
    return k
