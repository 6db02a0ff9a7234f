"""Before a row allocates anything: is its op pure, can its arguments be built, does it fit.

Each check raises :class:`NotReplayable` with one line saying why, so a hostile or oversized
capture is a skipped row naming the reason (and, for memory, the limit and the flag that
raises it), never a traceback, an allocation that fails, or a ``failed`` row blaming the device.

The memory bound covers the inputs (from the metadata alone, ``limits.input_bytes``) and the
outputs: the op runs first on the ``meta`` device, which computes shapes without allocating, so
``zeros([2**40])`` or a broadcast to 4 TiB is refused before it is made. An op without a meta
kernel is bounded by its inputs only (its outputs are then a function of them in every such op
of this torch).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from pytest_rocm.workload.limits import GENERATED, input_bytes, over_limit, storage_elements
from pytest_rocm.workload.purity import TORCH_NAMESPACES, bad_mode_string, impure


class NotReplayable(Exception):
    """The signature cannot be replayed here (no such op in this torch, no CPU kernel at all)."""


#: argument kinds ``inputs.Maker`` rebuilds
_BUILDABLE = ("tensor", "list", "value", "float", "complex", "dtype", "device", "layout", "memory_format")


def resolve_op(name: str) -> Any:
    """``aten.mm.default`` -> ``torch.ops.aten.mm.default``; NotReplayable when this torch lacks it,
    or when the name is not one of PyTorch's own op overloads (the name comes from a file)."""
    namespace, packet, overload = name.split(".")
    if namespace not in TORCH_NAMESPACES:
        raise NotReplayable(f"{name} is not an op of PyTorch's own (namespace {namespace})")
    try:  # the dispatcher's own registry first: no attribute of a name from a file is looked up blind
        torch._C._dispatch_find_schema_or_throw(f"{namespace}::{packet}", "" if overload == "default" else overload)
        func = getattr(getattr(getattr(torch.ops, namespace), packet), overload)
    except (AttributeError, RuntimeError):
        raise NotReplayable(f"this torch ({torch.__version__}) has no op {name}") from None
    if not isinstance(func, torch._ops.OpOverload):
        raise NotReplayable(f"this torch ({torch.__version__}) has no op {name}")
    return func


def _unbuildable(arg: Mapping[str, Any], where: str) -> str | None:
    if "opaque" in arg:
        return f"{where} is a {arg['opaque']} the capture could not record"
    if not any(kind in arg for kind in _BUILDABLE):
        return f"{where} has none of the argument kinds a replay rebuilds"
    meta = arg.get("tensor")
    if meta is not None and meta["dtype"] not in GENERATED:
        return f"{where} is a {meta['dtype']} tensor: no values of that dtype can be generated"
    for i, item in enumerate(arg.get("list") or ()):
        problem = _unbuildable(item, f"{where}[{i}]")
        if problem:
            return problem
    return None


def _meta(arg: Mapping[str, Any]) -> Any:
    """One argument with every tensor on the ``meta`` device (no memory) and devices ``meta``."""
    if "tensor" in arg:
        m = arg["tensor"]
        base = torch.empty(storage_elements(m), dtype=getattr(torch, m["dtype"]), device="meta")
        return base.as_strided(m["shape"], m["stride"], m["offset"])
    if "list" in arg:
        return [_meta(a) for a in arg["list"]]
    if "value" in arg:
        return arg["value"]
    if "float" in arg:
        return float(arg["float"])
    if "complex" in arg:
        return complex(*arg["complex"])
    if "device" in arg:
        return torch.device("meta")
    kind = next(k for k in ("dtype", "layout", "memory_format") if k in arg)
    return getattr(torch, arg[kind])


def output_bytes(func: Any, signature: Mapping[str, Any]) -> int | None:
    """Bytes of the op's outputs and of their float64 copies for the comparison (by a meta run),
    or None when this op has no meta kernel for these arguments."""
    args = [_meta(a) for a in signature["args"]]
    kwargs = {k: _meta(a) for k, a in signature["kwargs"].items()}
    for position, argument in enumerate(func._schema.arguments):  # a factory's default device is the CPU's
        if argument.name == "device" and position >= len(args) and argument.name not in kwargs:
            kwargs["device"] = torch.device("meta")
    try:
        with torch.device("meta"):
            out = func(*args, **kwargs)
    except Exception:  # no meta kernel, or arguments it rejects: the CPU run will say
        return None
    stack, total = [out], 0
    while stack:
        value = stack.pop()
        if isinstance(value, torch.Tensor):
            total += value.numel() * (value.element_size() + 16)
        elif isinstance(value, (list, tuple)):
            stack.extend(value)
    return total


def check(func: Any, signature: Mapping[str, Any], max_bytes: int) -> None:
    """NotReplayable when the op is not pure, an argument cannot be built, or it needs more than
    ``max_bytes``: everything a row checks before it allocates."""
    reason = impure(func)
    if reason:
        raise NotReplayable(f"{signature['op']}: {reason}")
    where = [*(f"args[{i}]" for i in range(len(signature["args"]))), *(f"kwargs.{k}" for k in signature["kwargs"])]
    for name, arg in zip(where, [*signature["args"], *signature["kwargs"].values()], strict=True):
        problem = _unbuildable(arg, name)
        if problem:
            raise NotReplayable(problem)
    plain = [a.get("value") for a in signature["args"]]
    mode = bad_mode_string(func, plain, {k: a.get("value") for k, a in signature["kwargs"].items()})
    if mode:
        raise NotReplayable(f"{signature['op']}: {mode}")
    refused = over_limit("its inputs", input_bytes(signature), max_bytes)
    if refused:
        raise NotReplayable(refused)
    outputs = output_bytes(func, signature)
    refused = over_limit("its inputs and outputs", input_bytes(signature) + (outputs or 0), max_bytes)
    if refused:
        raise NotReplayable(refused)


__all__ = ["NotReplayable", "check", "output_bytes", "resolve_op"]
