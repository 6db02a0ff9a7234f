"""The call a corpus row hands to ``assert_parity``: the op (or module) and its sample, rebuilt on
the device with the sample's own layout.

parity moves every tensor argument to the device as a fresh copy in the caller's layout (strides
and storage offset); the tensors the call holds itself (below) it puts back into the layout the
sample had, on the device, before the op sees them (and it re-applies the layout to the passed ones:
a broadcast input with gradients reaches it dense). Only the tensors the
sample differentiates go through parity's gradient path (an op's integer indices, or a target that
has no derivative, are held by the call and moved to the run's device and dtype there).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import corpus_db as db
import torch
import torch.utils._pytree as pytree
from corpus_limits import not_run

#: torch.testing.assert_close's (rtol, atol) per dtype: an OpInfo override only ever loosens these
ASSERT_CLOSE = {"float32": (1.3e-6, 1e-5), "float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5)}


def criterion(device_type: str) -> str:
    """The parity mode of a corpus row. On a GPU ``cpu-relative``: as accurate as the CPU in the same
    dtype (PyTorch's ``test_compare_cpu``). On the CPU baseline the device *is* the CPU, and a
    same-dtype CPU run as yardstick could not fail; there the yardstick is ``model`` mode's computed
    one: the float64 reference with every op's result rounded to the dtype, which never calls a
    kernel of the dtype under test and measures what the dtype costs this very sample (its
    conditioning), so a wrong low-precision result fails the row."""
    return "model" if device_type == "cpu" else "cpu-relative"


#: the model criterion's factors on the CPU baseline (``cpu_factor``): the CPU's own kernels
#: round inside an op (fp32 intermediates, sums of a few terms in the dtype), which the yardstick's
#: exact op does not; measured on the clean ci corpus (docs/corpus.md), far below a wrong result
#: of a few percent
MODEL_FACTOR = 10.0


def criterion_options(device_type: str) -> dict[str, object]:
    """``mode`` (and on the CPU baseline ``cpu_factor``) for a corpus row's parity call."""
    mode = criterion(device_type)
    return {"mode": mode, "cpu_factor": MODEL_FACTOR} if mode == "model" else {"mode": mode}


@dataclass
class Call:
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    grad: bool
    tolerances: dict[str, dict[str, float]] = field(default_factory=dict)
    module: torch.nn.Module | None = None
    notes: dict[str, Any] = field(default_factory=dict)
    #: the indices, among the sample's flattened leaves, of the tensors passed as ``args``
    passed: tuple[int, ...] = ()


class Skip(Exception):
    """The row cannot run here; the message says why (an entry changed, a known skip, a dtype)."""


def relayout(t: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """``t`` (a fresh dense copy on the device) in ``like``'s strides and storage offset."""
    if (like.is_contiguous() and like.storage_offset() == 0) or t.numel() == 0:
        return t
    if like.layout != torch.strided or (any(s == 0 for s in like.stride()) and like.numel() > 1):
        return t  # sparse, or expanded: a write into overlapping memory is undefined; keep it dense
    span = 1 + sum((n - 1) * s for n, s in zip(like.shape, like.stride(), strict=True))
    base = torch.empty(like.storage_offset() + span, dtype=t.dtype, device=t.device)
    out = base.as_strided(like.shape, like.stride(), like.storage_offset())
    return out.copy_(t)


def as_outputs(obj: Any) -> Any:
    """The op's result as parity compares it: tensors (complex ones as real pairs), Python numbers
    as 0-d tensors, other objects (a dtype, a string) left out as None."""
    if isinstance(obj, torch.Tensor):
        if obj.layout != torch.strided:
            obj = obj.to_dense()
        # a lazy conjugate (ifft, ihfft return one) has no real view until it is resolved
        return torch.view_as_real(obj.resolve_conj().resolve_neg()) if obj.is_complex() else obj
    if isinstance(obj, (bool, int, float)):
        return torch.tensor(obj)
    if isinstance(obj, (list, tuple)):
        return tuple(as_outputs(o) for o in obj)
    if isinstance(obj, dict):
        return {k: as_outputs(v) for k, v in obj.items()}
    return None


def _convert(t: torch.Tensor, like: torch.Tensor | None) -> torch.Tensor:
    """A held tensor moved to the run: the device and floating dtype of ``like`` (the first passed one)."""
    if like is None:
        return t
    dtype = like.dtype if t.is_floating_point() and like.is_floating_point() else t.dtype
    return t.detach().to(like.device, dtype, copy=True)


# ---- OpInfo --------------------------------------------------------------------------------------
def op_call(row: db.Row, device_type: str, backend: str) -> Call:
    if (why := not_run(row.name, row.variant, device_type)) is not None:
        raise Skip(f"{row.name} is not run on {device_type}: {why}")
    entry = db.entries("opinfo")[(row.name, row.variant)]
    decorators = db.decorations(entry, db.COMPARE_TEST, device_type, row.dtype)
    if (why := db.known_skip(decorators)) is not None:
        raise Skip(f"OpInfo marks {row.name} {row.dtype} on {device_type} in {'.'.join(db.COMPARE_TEST)}: {why}")
    if not db.supported(entry, device_type, backend, row.dtype):
        raise Skip(f"OpInfo lists no {row.dtype} for {row.name} on {backend}")
    source, index = row.sample[0], int(row.sample[1:])
    sample = db.op_samples(row.name, row.variant, row.dtype, source, row.window)[index]
    leaves, spec = pytree.tree_flatten((sample.input, sample.args, sample.kwargs))
    is_tensor = [isinstance(x, torch.Tensor) for x in leaves]
    grad = (
        bool(getattr(entry, "supports_autograd", False))
        and db.supported(entry, device_type, backend, row.dtype, backward=True)
        and any(x.requires_grad for x, t in zip(leaves, is_tensor, strict=True) if t)
    )
    passed = [i for i, x in enumerate(leaves) if is_tensor[i] and (x.requires_grad or not grad)]
    if not passed:
        raise Skip(f"sample {row.sample} of {row.name} has no tensor argument to compare on a device")
    sparse = next((leaves[i].layout for i in passed if leaves[i].layout != torch.strided), None)
    if sparse is not None:
        raise Skip(f"sample {row.sample} of {row.name} passes a {sparse} tensor: parity compares strided tensors")
    op = entry.op

    def call(*xs: torch.Tensor) -> Any:
        values = list(leaves)
        for j, i in enumerate(passed):
            values[i] = relayout(xs[j], leaves[i])
        first = next((x for x in xs if x.is_floating_point()), xs[0])
        for i, t in enumerate(is_tensor):
            if t and i not in passed:
                values[i] = relayout(_convert(leaves[i], first), leaves[i])
        inp, args, kwargs = pytree.tree_unflatten(values, spec)
        return as_outputs(op(inp, *args, **kwargs))

    call.__name__ = row.name
    override = db.tolerance_overrides(decorators, row.dtype)
    tolerances = {}
    if override:
        rtol, atol = ASSERT_CLOSE[row.dtype]
        tolerances[row.dtype] = {"rtol": max(rtol, override["rtol"]), "atol": max(atol, override["atol"])}
    args = tuple(leaves[i].detach() for i in passed)
    notes = {"opinfo_tolerance": override} if override else {}
    return Call(call, args, grad, tolerances, notes=notes, passed=tuple(passed))


# ---- ModuleInfo -----------------------------------------------------------------------------------
def module_call(row: db.Row, device_type: str) -> Call:
    """One step of the module (``row.variant``: train or eval) on its sample; the outputs and the
    state the step leaves behind (buffers: running statistics, step counters) are compared."""
    entry = db.entries("moduleinfo")[(row.name, "default")]
    decorators = [
        *db.decorations(entry, db.MODULE_TEST, device_type, row.dtype),
        *db.decorations(entry, ("TestModule", "test_cpu_gpu_parity"), device_type, row.dtype),
    ]
    if (why := db.known_skip(decorators)) is not None:
        raise Skip(f"ModuleInfo marks {row.name} {row.dtype} on {device_type}: {why}")
    # ModuleInfo's dtypes are what its own tests run (fp32/fp64 for most modules), not what the
    # kernels support: fp16/bf16 rows run anyway, and a dtype without a kernel skips as unsupported
    listed = db.torch_dtype(row.dtype) in set(entry.supported_dtypes(device_type))
    sample = db.module_samples(row.name, row.dtype, row.variant == "train")[int(row.sample[1:])]
    db.seeded(0)
    module = entry.module_cls(*sample.constructor_args, **sample.constructor_kwargs)
    if getattr(module, "has_uninitialized_params", lambda: False)():
        # a lazy module makes its (float32) parameters on its first forward: give it one, in float32
        as_float = pytree.tree_map(
            lambda t: t.detach().float() if isinstance(t, torch.Tensor) and t.is_floating_point() else t,
            (sample.forward_args, sample.forward_kwargs),
        )
        with torch.no_grad():
            module(*as_float[0], **as_float[1])
    module = module.float()
    module.train(row.variant == "train")
    leaves, spec = pytree.tree_flatten((sample.forward_args, sample.forward_kwargs))
    is_tensor = [isinstance(x, torch.Tensor) for x in leaves]
    floats = [i for i, x in enumerate(leaves) if is_tensor[i] and x.is_floating_point()]
    # the inputs ModuleInfo differentiates get gradients; a loss's target (no requires_grad) is
    # held: some losses have no derivative for it (soft_margin_loss raises)
    passed = [i for i in floats if leaves[i].requires_grad] or floats
    grad = any(p.requires_grad for p in module.parameters()) or any(leaves[i].requires_grad for i in passed)

    def step(*xs: torch.Tensor) -> Any:
        values = list(leaves)
        for j, i in enumerate(passed):
            values[i] = relayout(xs[j], leaves[i])
        like = next(iter(module.parameters()), None) if not xs else xs[0]
        for i, t in enumerate(is_tensor):
            if t and i not in passed:
                values[i] = _convert(leaves[i], like)
        args, kwargs = pytree.tree_unflatten(values, spec)
        out = as_outputs(module(*args, **kwargs))
        return {"output": out, "state": {name: b for name, b in module.named_buffers()}}

    step.__name__ = row.name
    args = tuple(leaves[i].detach() for i in passed)
    notes = {} if listed else {"moduleinfo_lists_dtype": False}
    return Call(step, args, grad, module=module, notes=notes, passed=tuple(passed))
