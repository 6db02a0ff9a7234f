"""A callable torch cannot name (a suite's ``lambda x: F.gelu(x, approximate="tanh")``, a closure
that re-lays its input out) recorded as the aten ops it ran: the program ``rocm-compat repro``
replays through ``torch.ops`` where only torch is installed (``callspec``, docs/report.md).

The program is traced from one more run on the device in the failing dtype (the ops the device
ran), on fresh copies of the inputs: every tensor an op gets is an input (``{"input": i}``) or an
earlier op's output (``{"value": [step, k]}``); other arguments are data, and a factory's device
and dtype are the run's (``{"device": "run"}``, ``{"dtype": "run"}``). A program that reads
anything else (a generator, a tensor made outside the ops, a module's parameters) is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch

from pytest_rocm.parity.probe import _LightMode
from pytest_rocm.parity.runs import map_tensors

#: at most this many aten calls (a model is not a reproducer: a suite's op is a few)
MAX_STEPS = 64
_FORMATS = {torch.contiguous_format: "contiguous_format", torch.preserve_format: "preserve_format"}
_FORMATS |= {torch.channels_last: "channels_last", torch.channels_last_3d: "channels_last_3d"}


class NotTraceable(Exception):
    """The callable's run cannot be written as data; the message says why."""


class _Tracer(_LightMode):  # a light mode: no torch._dynamo import (which aborts a pytester run)
    def __init__(self, inputs: dict[int, int], encode: Callable[[Any, str], Any], dev: torch.device, dtype: Any):
        super().__init__()  # type: ignore[no-untyped-call]
        self.known: dict[int, Any] = {k: {"input": v} for k, v in inputs.items()}
        self.keep: list[Any] = []  # every tensor seen stays alive: no id is reused while tracing
        self.steps: list[dict[str, Any]] = []
        self.encode, self.dev, self.dtype = encode, dev, dtype
        self.problem: str | None = None

    def arg(self, value: Any, where: str) -> Any:
        if isinstance(value, torch.Tensor):
            found = self.known.get(id(value))
            if found is None:
                raise NotTraceable(f"{where} is a tensor made outside the traced ops (a constant or a parameter)")
            return found
        if isinstance(value, (list, tuple)):
            return {"list" if isinstance(value, list) else "tuple": [self.arg(v, where) for v in value]}
        if isinstance(value, torch.device):
            if value.type != self.dev.type:
                raise NotTraceable(f"{where} names the device {value}, not the run's")
            return {"device": "run"}
        if isinstance(value, torch.dtype) and value == self.dtype:
            return {"dtype": "run"}
        if isinstance(value, torch.memory_format) and value in _FORMATS:
            return {"memory_format": _FORMATS[value]}
        if isinstance(value, torch.layout) and value == torch.strided:
            return {"layout": "strided"}
        return self.encode(value, where)

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if self.problem is None:
            try:
                if len(self.steps) >= MAX_STEPS:
                    raise NotTraceable(f"it runs more than {MAX_STEPS} aten ops")
                n = len(self.steps)
                name = f"torch.ops.{func}"
                step = {
                    "op": name,
                    "args": [self.arg(a, f"argument {i} of {name}") for i, a in enumerate(args)],
                    "kwargs": {str(k): self.arg(v, f"keyword {k} of {name}") for k, v in kwargs.items()},
                }
                self.steps.append(step)
                outs = out if isinstance(out, (list, tuple)) else [out]
                for k, t in enumerate(outs):
                    if isinstance(t, torch.Tensor) and id(t) not in self.known:
                        self.known[id(t)] = {"value": [n, k if isinstance(out, (list, tuple)) else -1]}
                        self.keep.append(t)
            except NotTraceable as exc:
                self.problem = str(exc)
        return out


def trace(
    fn: Callable[..., Any],
    args: Any,
    kwargs: Mapping[str, Any],
    dev: torch.device,
    dtype: str,
    encode: Callable[[Any, str], Any],
) -> dict[str, Any]:
    """``{"steps": [...], "result": ...}`` of ``fn`` run once on ``dev`` in ``dtype`` (no gradients:
    the script differentiates the replayed ops itself), or NotTraceable. Input ``i`` is the i-th
    tensor of ``(args, kwargs)`` in ``runs.map_tensors``' order (the spec's ``tensors``)."""
    run_dtype = getattr(torch, dtype)
    inputs: dict[int, int] = {}
    kept: list[torch.Tensor] = []

    def copy(t: torch.Tensor) -> torch.Tensor:
        target = run_dtype if t.is_floating_point() else t.dtype
        x = torch.empty_strided(t.shape, t.stride(), dtype=target, device=dev)
        x.copy_(t.detach())  # the caller's strides (offset: the script's own as_strided)
        inputs[id(x)] = len(kept)
        kept.append(x)
        return x

    run_args, run_kwargs = map_tensors((tuple(args), dict(kwargs)), copy)
    tracer = _Tracer(inputs, encode, dev, run_dtype)
    with torch.no_grad(), tracer:
        out = fn(*run_args, **run_kwargs)
    if tracer.problem:
        raise NotTraceable(tracer.problem)
    if not tracer.steps:
        raise NotTraceable("it runs no aten op")
    return {"steps": tracer.steps, "result": _result(out, tracer)}


def _result(out: Any, tracer: _Tracer) -> Any:
    if out is None:
        return None
    if isinstance(out, torch.Tensor):
        return tracer.arg(out, "the result")
    if isinstance(out, (list, tuple)) and not hasattr(out, "_fields"):
        return {"list" if isinstance(out, list) else "tuple": [_result(o, tracer) for o in out]}
    raise NotTraceable(f"it returns a {type(out).__name__}: the script compares tensors, lists and tuples")
