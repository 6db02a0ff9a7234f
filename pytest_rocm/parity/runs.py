"""One run of the function under parity: inputs cast and copied, the model cast, gradients taken,
and the proof (through :class:`~pytest_rocm.parity.probe.DtypeProbe`) that it ran in its dtype.
Also the walk over a run's outputs (paths and leaves) that the comparisons use.
"""

from __future__ import annotations

import contextlib
import copy
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from pytest_rocm.parity.layout import copy_laid_out, is_plain, relaid
from pytest_rocm.parity.probe import HOW_TO_PASS_A_MODEL, DtypeProbe, RoundTo, cast_module, dtype_name


class Structure(Exception):
    """Outputs of two runs do not have the same structure."""


class NotInDtype(Exception):
    """A run did not compute in the dtype under test (a closure over an uncast module, ...)."""


@dataclass
class Run:
    out: Any
    #: (suffix, gradient): ``[0]`` for the first floating input, ``[layer.weight]`` for a parameter
    grads: list[tuple[str, torch.Tensor | None]] = field(default_factory=list)

    def leaves(self, op: str) -> list[tuple[str, torch.Tensor | None]]:
        """Every output (and gradient) to compare; a complex one as its real and imaginary parts
        (``view_as_real``: a complex64 output is judged as float32 pairs, against complex128's)."""
        found = list(leaves(self.out, op)) + [(f"{op}.grad{suffix}", g) for suffix, g in self.grads]
        return [(path, _judgeable(path, t)) for path, t in found]


def _judgeable(path: str, t: torch.Tensor | None) -> torch.Tensor | None:
    """``t`` as a strided real tensor the metrics can judge; ValueError (one line) for a tensor
    that has no values to compare here: sparse, meta, nested."""
    if t is None:
        return None
    problem = unjudgeable(t)
    if problem:
        raise ValueError(f"output {path} {problem}")
    return torch.view_as_real(t.detach().resolve_conj()) if t.is_complex() else t


def unjudgeable(t: torch.Tensor) -> str | None:
    """Why parity cannot compare ``t``'s values: ``is a sparse tensor (torch.sparse_coo)...``."""
    if t.is_meta:
        return "is a meta tensor: it has no values to compare (make it on the CPU or the device)"
    if getattr(t, "is_nested", False):
        return "is a nested tensor: parity compares strided tensors (pass t.to_padded_tensor(0))"
    if t.layout != torch.strided:
        return f"is a sparse tensor ({t.layout}): parity compares strided tensors (pass t.to_dense())"
    return None


#: the complex dtype a complex input takes in each dtype's run; bfloat16 has none in torch
_COMPLEX = {torch.float64: torch.complex128, torch.float32: torch.complex64, torch.float16: torch.complex32}


def _complex_in(dtype: torch.dtype) -> torch.dtype:
    target = _COMPLEX.get(dtype)
    if target is None:  # worded for check's "no kernel for this dtype" rule: the dtype is unsupported
        raise RuntimeError(
            f"complex inputs are not supported in {dtype_name(dtype)} (torch has no complex {dtype_name(dtype)})"
        )
    return target


@dataclass(frozen=True)
class RunSpec:
    """What every run of one assert_parity call shares."""

    args: Any
    kwargs: Any
    grad: bool
    seed: int
    op: str
    module: torch.nn.Module | None = None


def map_tensors(obj: Any, convert: Callable[[torch.Tensor], torch.Tensor]) -> Any:
    if isinstance(obj, torch.Tensor):
        return convert(obj)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # namedtuple
        return type(obj)(*(map_tensors(o, convert) for o in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(map_tensors(o, convert) for o in obj)
    if isinstance(obj, dict):
        return {key: map_tensors(v, convert) for key, v in obj.items()}
    return obj


def infer_reduction_length(args: Any, kwargs: Any) -> int:
    """K when not given: the longest dimension of any floating input (bounds any 1-axis reduction)."""
    longest = [1]

    def visit(t: torch.Tensor) -> torch.Tensor:
        if t.is_floating_point() and t.dim():
            longest.append(max(t.shape))
        return t

    map_tensors((args, kwargs), visit)
    return max(longest)


def caster(dev: torch.device, dtype: torch.dtype, emulate: bool = False) -> Callable[[torch.Tensor], torch.Tensor]:
    """A fresh copy on ``dev``: floating tensors in ``dtype`` (emulated: rounded to it, held in float64),
    in the caller's strides and storage offset (``layout.copy_laid_out``; the emulated yardstick
    computes in float64 on the CPU, where layout is not under test)."""

    def convert(t: torch.Tensor) -> torch.Tensor:
        if t.is_complex():  # compared as complex: complex128 reference, complex64 / complex32 runs
            target = _complex_in(dtype)
            with warnings.catch_warnings():  # torch calls complex32 "experimental": it is what we test
                warnings.simplefilter("ignore", UserWarning)
                if emulate:
                    return t.detach().to(dev, target).to(torch.complex128)
                return copy_laid_out(t, dev, target)
        if not t.is_floating_point():
            return copy_laid_out(t, dev, t.dtype)
        if emulate:
            return t.detach().to(dev, dtype).to(torch.float64)
        return copy_laid_out(t, dev, dtype)

    return convert


def run(fn: Callable[..., Any], spec: RunSpec, dev: torch.device, dtype: torch.dtype, *, emulate: bool = False) -> Run:
    """One run on fresh copies of the inputs (and of the model); with ``grad`` also the gradients.

    ``emulate``: the model criterion's yardstick (probe.RoundTo), on the CPU in float64 with every
    result rounded to ``dtype``. Otherwise the run is probed and raises NotInDtype when it did not
    compute in ``dtype``.
    """
    __tracebackhide__ = True  # an error of fn reads from fn's own frame
    convert = caster(dev, dtype, emulate)
    leaves_in: list[torch.Tensor] = []

    def prepare(t: torch.Tensor) -> torch.Tensor:
        x = convert(t)
        if not spec.grad or not x.is_floating_point():
            return x
        # the leaf is a dense copy (its gradient is the input's); the fn gets a non-leaf in x's
        # layout (an in-place fn works under autograd too, and a sliced view stays sliced)
        leaf = x if is_plain(x) else x.detach().clone()
        leaves_in.append(leaf.requires_grad_(True))
        return relaid(leaf, x)

    run_args, run_kwargs = map_tensors((spec.args, spec.kwargs), prepare)
    model: torch.nn.Module | None = None
    with contextlib.ExitStack() as stack:
        if isinstance(fn, torch.nn.Module):
            fn = model = copy.deepcopy(fn)._apply(convert)  # type: ignore[no-untyped-call]
        elif spec.module is not None:
            stack.enter_context(cast_module(spec.module, convert))
            model = spec.module
        probe = DtypeProbe()
        stack.enter_context(RoundTo(dtype) if emulate else probe)
        stack.enter_context(torch.set_grad_enabled(spec.grad))
        try:
            out = fn(*run_args, **run_kwargs)
            grads = _gradients(out, leaves_in, _named_params(model), spec) if spec.grad else []
        except (RuntimeError, TypeError) as exc:
            problem = None if emulate else probe.problem(dtype_name(dtype), set())
            if problem:
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                raise NotInDtype(f"{problem} ({first}); {HOW_TO_PASS_A_MODEL}") from exc
            raise
    if not emulate:
        try:
            floating = {dtype_name(t.dtype) for _, t in leaves(out, "") if t is not None and t.is_floating_point()}
        except Structure:  # reported by the comparison, with the output's path
            floating = set()
        problem = probe.problem(dtype_name(dtype), floating)
        if problem:
            raise NotInDtype(f"{problem}; {HOW_TO_PASS_A_MODEL}")
    return Run(out, grads)


def _named_params(model: torch.nn.Module | None) -> list[tuple[str, torch.Tensor]]:
    if model is None:
        return []
    return [(name, p) for name, p in model.named_parameters() if p.requires_grad and p.is_floating_point()]


def _gradients(
    out: Any, inputs: list[torch.Tensor], params: list[tuple[str, torch.Tensor]], spec: RunSpec
) -> list[tuple[str, torch.Tensor | None]]:
    """Gradients of a fixed random projection sum(out_i * w_i) of the floating outputs, with respect
    to the floating inputs (``[i]``) and the module's parameters (``[name]``)."""
    if not inputs and not params:
        raise ValueError(
            f"grad=True, but {spec.op} has no floating input and no module parameter to differentiate "
            "(integer inputs such as token ids have none): pass the model as fn or as module= to compare "
            "its parameter gradients"
        )
    loss = None
    for i, (_, t) in enumerate(leaves(out, "")):
        if t is None or not t.is_floating_point() or not t.requires_grad:
            continue
        gen = torch.Generator().manual_seed(spec.seed + i)
        acc = torch.float64 if t.dtype == torch.float64 else torch.float32
        w = torch.randn(t.shape, generator=gen, dtype=torch.float64).to(t.device, acc)
        term = (t.to(acc) * w).sum()
        loss = term if loss is None else loss + term
    if loss is None:
        raise ValueError("grad=True, but no floating output depends on a floating input or parameter")
    grads = torch.autograd.grad(loss, inputs + [p for _, p in params], allow_unused=True)
    names = [f"[{i}]" for i in range(len(inputs))] + [f"[{name}]" for name, _ in params]
    return list(zip(names, grads, strict=True))


# ---- outputs ---------------------------------------------------------------------------------


def leaves(obj: Any, path: str) -> Iterator[tuple[str, torch.Tensor | None]]:
    """(path, tensor) for every output leaf; None leaves are kept; anything else is a structure error."""
    if obj is None or isinstance(obj, torch.Tensor):
        yield path, obj
    elif isinstance(obj, (list, tuple)):
        for i, item in enumerate(obj):
            yield from leaves(item, f"{path}[{i}]")
    elif isinstance(obj, Mapping):
        for key in sorted(obj, key=repr):
            yield from leaves(obj[key], f"{path}[{key!r}]")
    else:
        where = f" at {path}" if path else ""
        raise Structure(
            f"fn returned {type(obj).__name__} {obj!r:.40}{where}; parity compares "
            "tensors or tuples/lists/dicts of tensors"
        )


def check_same_paths(ref: Sequence[tuple[str, Any]], got: Sequence[tuple[str, Any]]) -> None:
    ref_paths = [(p, r is None) for p, r in ref]
    got_paths = [(p, g is None) for p, g in got]
    if ref_paths != got_paths:
        missing = [p for p in ref_paths if p not in got_paths]
        extra = [p for p in got_paths if p not in ref_paths]
        raise Structure(f"outputs differ from the reference's: missing {_paths(missing)}, unexpected {_paths(extra)}")


def _paths(items: list[tuple[str, bool]]) -> str:
    return ", ".join(p + (" (None)" if none else "") for p, none in items) or "none"
