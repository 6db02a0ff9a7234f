"""Replaying one captured signature: the device under test against float64 on the CPU.

For each value regime the op runs once on the device at the captured shapes, strides, storage
offset and dtypes, and once on the CPU with every floating input in float64 (the same numbers:
``inputs``). Every output and every input the op writes (an in-place op's ``self``, ``out=``, an
optimizer's ``_foreach_`` lists) is compared with parity's metrics at the tolerance of its dtype;
where the reference rounded to that dtype overflows, the same inf is a match (an exp that
overflows float16 is right to). A signature seen with gradients gets its backward checked too,
by autograd through the op, with generated output gradients. Ops with integer outputs run the
random regime only (ties in a degenerate input make any index right).

An op that has no float64 CPU kernel is compared with the CPU at the captured dtypes instead
(``reference`` in the row's info says which); one the CPU cannot run at all is not replayable here.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from pytest_rocm.parity.callspec import NUMBER_KINDS, build_spec
from pytest_rocm.parity.result import Comparison, ParityResult
from pytest_rocm.workload import composite, guard, indices, references, vendors
from pytest_rocm.workload.compare import compare, computed_at, dtype_name, tolerance
from pytest_rocm.workload.guard import NotReplayable, resolve_op
from pytest_rocm.workload.inputs import REGIMES, Built, Maker, same_dtype_reference
from pytest_rocm.workload.limits import DEFAULT_MAX_BYTES
from pytest_rocm.workload.references import SUBSTITUTES
from pytest_rocm.workload.signature import signature_text

#: what the dispatcher says when an op has no kernel for a backend
_NO_KERNEL = "Could not run"
#: what torch says when the CPU has no kernel (at any dtype); any other refusal is of the inputs
_NO_CPU_KERNEL = (_NO_KERNEL, "not implemented for", "no kernel", "not supported")


class DeviceFailed(Exception):
    """The device run raised where the reference ran: a finding, not a skip."""


@dataclass
class Replay:
    result: ParityResult
    reference: str  # "cpu float64" or "cpu <captured dtypes>"
    regimes: list[str]
    backward: bool
    #: the perf record of the device call (random inputs), when timed (``perf.measure``)
    perf: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)


def written_inputs(func: Any, built: Built) -> Iterator[tuple[str, Any]]:
    """The arguments the op writes (alias_info.is_write in its schema), by name."""
    for position, argument in enumerate(func._schema.arguments):
        if argument.alias_info is None or not argument.alias_info.is_write:
            continue
        if position < len(built.args) and not argument.kwarg_only:
            yield f"{argument.name} (written)", built.args[position]
        elif argument.name in built.kwargs:
            yield f"{argument.name} (written)", built.kwargs[argument.name]


def leaves(value: Any, path: str) -> Iterator[tuple[str, torch.Tensor]]:
    if isinstance(value, torch.Tensor):
        yield path, value
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from leaves(item, f"{path}[{i}]")


def _outputs(func: Any, built: Built, returned: Any) -> list[tuple[str, torch.Tensor]]:
    found = list(leaves(returned, "out"))
    for name, value in written_inputs(func, built):
        found.extend(leaves(value, name))
    return found


def reduction_bound(built: Built) -> int:
    """K for the tolerance: the most elements of any floating input. A sum in the op has at most
    that many terms (a convolution's weight gradient sums over batch and image: more than any one
    dimension, which is all ``assert_parity`` infers for the ops it is given)."""
    sizes = [t.numel() for _, t in _inputs(built) if t.is_floating_point()]
    return max([1, *sizes])


def _call(func: Any, built: Built) -> Any:
    return func(*built.args, **built.kwargs)


def _run_reference(func: Any, signature: Mapping[str, Any], ref: Built) -> tuple[Any, Built, str]:
    substitute = SUBSTITUTES.get(str(signature["op"]))
    if substitute is not None:  # no CPU kernel: the math it fuses, in float64
        kind = "math attention" if "attention" in str(signature["op"]) else "portable equivalent"
        return substitute(*ref.args, **ref.kwargs), ref, f"cpu float64 ({kind})"
    try:
        return _call(func, ref), ref, "cpu float64"
    except (RuntimeError, NotImplementedError, TypeError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        no_kernel = isinstance(exc, NotImplementedError) or any(words in first for words in _NO_CPU_KERNEL)
        same = same_dtype_reference(ref, signature)
        try:
            return _call(func, same), same, "cpu at the captured dtypes"
        except (RuntimeError, NotImplementedError, TypeError, ValueError):
            if no_kernel:
                raise NotReplayable(f"the CPU reference cannot run it: {first}") from None
            raise NotReplayable(
                f"the CPU reference refused the generated inputs ({first}): values the program passed "
                "cannot be rebuilt from its signature"
            ) from None


def _backward(
    result: ParityResult, func: Any, dev: Built, ref: Built, dev_out: Any, ref_out: Any, k: int, seed: int
) -> bool:
    """Gradients of the op's floating outputs (generated output gradients) against the reference's."""
    pairs = [
        (d, r)
        for (_, d), (_, r) in zip(leaves(dev_out, "out"), leaves(ref_out, "out"), strict=False)
        if d.requires_grad and d.is_floating_point() and r.requires_grad
    ]
    if not pairs or not dev.grad_inputs or len(dev.grad_inputs) != len(ref.grad_inputs):
        return False
    g = torch.Generator().manual_seed(seed + 7)
    grads = [torch.randn(d.shape, generator=g, dtype=torch.float64).to(d.dtype) for d, _ in pairs]
    dev_grads = torch.autograd.grad(
        [d for d, _ in pairs],
        [t for _, t in dev.grad_inputs],
        [x.to(d.device) for x, (d, _) in zip(grads, pairs, strict=True)],
        allow_unused=True,
    )
    ref_grads = torch.autograd.grad(
        [r for _, r in pairs],
        [t for _, t in ref.grad_inputs],
        [x.to(torch.float64) for x in grads],
        allow_unused=True,
    )
    for (name, _), got, want in zip(dev.grad_inputs, dev_grads, ref_grads, strict=True):
        if got is not None and want is not None:
            compare(result, f"random: grad {name}", got, want, k, _floor(dev))
    return True


def replay(
    signature: Mapping[str, Any],
    device: torch.device,
    *,
    seed: int = 0,
    perf: Mapping[str, Any] | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Replay:
    """Replay one signature on ``device``; the ParityResult holds every comparison (check ``ok``).
    ``perf``: also time the device call with ``perf.measure`` and these settings (warmup, reps...).

    NotReplayable when it cannot run here (or may not: ``guard``, which also bounds its memory by
    ``max_bytes``); DeviceFailed when the device raised and the CPU did not."""
    reason = signature.get("not_replayable")
    if reason:
        raise NotReplayable(str(reason))
    signature, mapped = vendors.for_device(references.pinned(dict(signature)), device)
    func = resolve_op(str(signature["op"]))
    guard.check(func, signature, max_bytes)
    result = ParityResult(name=signature_text(signature), mode="absolute", device=str(device), dtypes=())
    reference_kind, done, backward = "cpu float64", [], False
    for regime in REGIMES:
        dev, ref = Maker(signature, device, regime, seed).build()
        indices.fix(func, dev, ref, seed)
        ref_out, ref_used, reference_kind = _run_reference(func, signature, ref)
        try:
            dev_out = _call(func, dev)
        except (RuntimeError, NotImplementedError, TypeError, ValueError) as exc:
            if _NO_KERNEL in str(exc):  # mkldnn_*, cudnn_*: an op of the capturing machine's backend
                raise NotReplayable(
                    f"{signature['op']} has no {device.type} kernel here: an op of the backend that captured it"
                ) from None
            raise DeviceFailed(f"{regime} inputs: the device raised {type(exc).__name__}: {exc}") from None
        k = reduction_bound(ref_used) * composite.chain(signature)
        dev_leaves, ref_leaves = _outputs(func, dev, dev_out), _outputs(func, ref_used, ref_out)
        if reference_kind.endswith(")"):  # a substitute's reference: the outputs it has
            dev_leaves = dev_leaves[: len(ref_leaves)]  # the outputs the math has: the attention
        results = indices.RESULTS.get(getattr(getattr(func, "overloadpacket", None), "__name__", ""))
        if results is not None:  # the rest is bookkeeping for the backward, laid out per kernel
            dev_leaves, ref_leaves = dev_leaves[:results], ref_leaves[:results]
        if len(dev_leaves) != len(ref_leaves):
            raise DeviceFailed(f"{len(dev_leaves)} outputs on the device, {len(ref_leaves)} in the reference")
        input_dtypes = {t.dtype for _, t in _inputs(dev)}
        failed_before = len(result.failures)
        for (path, got), (_, want) in zip(dev_leaves, ref_leaves, strict=True):
            if got.dtype == torch.uint8 and torch.uint8 not in input_dtypes:
                continue  # a workspace (an RNN kernel's reserve): opaque bytes, not a result
            compare(result, f"{regime}: {path}", got, want, k, _floor(dev))
        if result.repro is None and len(result.failures) > failed_before:  # this regime's inputs rebuild it
            result.repro = _repro_spec(func, dev, result.failures[failed_before:], k, reference_kind)
        done.append(regime)
        # a recurrence's gradient compounds T x layers steps of rounding per element; its
        # backward ops are rows of their own (the decomposition is recorded too)
        if regime == "random" and signature.get("grad") and ref_used is ref and composite.chain(signature) == 1:
            backward = _backward(result, func, dev, ref, dev_out, ref_out, k, seed)
        if any(not t.is_floating_point() for _, t in dev_leaves) or not any(
            t.is_floating_point() for _, t in _inputs(dev)
        ):
            break  # integer outputs, or nothing floating to vary: the other regimes prove nothing more
    result.dtypes = tuple(sorted({c.dtype for c in result.comparisons}))
    replayed = Replay(result, reference_kind, done, backward, notes=[mapped] if mapped else [])
    if perf is not None:
        timed, timed_ref = Maker(signature, device, "random", seed).build()
        indices.fix(func, timed, timed_ref, seed)
        replayed.perf = measure_call(func, timed, device, perf)
    return replayed


def _floor(built: Built) -> torch.dtype | None:
    """The least precise floating tensor input that is not a 0-dim scalar: the precision the op
    computes in is at most that (``compare``)."""
    return computed_at([t.dtype for _, t in _inputs(built) if t.dim() > 0])


def _repro_spec(func: Any, dev: Built, failed: list[Comparison], k: int, reference_kind: str) -> dict[str, Any]:
    """The ``repro`` spec of the first regime that failed (``parity.callspec``): its device inputs,
    at the captured layout, run in their one floating dtype against float64, as this replay did."""
    floating = sorted({dtype_name(t.dtype) for _, t in _inputs(dev) if t.is_floating_point()})
    dtypes = sorted({c.dtype for c in failed if c.kind in NUMBER_KINDS})
    why = ""
    if reference_kind != "cpu float64":
        why = f"the reference is {reference_kind}, not the op in float64"
    elif len(floating) != 1 or dtypes != floating:
        why = f"inputs in {', '.join(floating) or 'no floating dtype'}: the script runs one dtype per run"
    elif any(a.is_write for a in func._schema.arguments if a.alias_info is not None):
        why = f"{func} writes its inputs: the script compares what an op returns"
    spec = build_spec(
        func, dev.args, dev.kwargs, "absolute", dtypes, lambda: {d: _tolerance_record(d, k) for d in dtypes}, why
    )
    if spec.get("op"):
        spec["keep_overflow"] = True  # as _reference_for: an inf the reference rounds to is a match
    return spec


def _tolerance_record(dtype: str, k: int) -> dict[str, Any]:
    tol = tolerance(getattr(torch, dtype), k)
    return {"rtol": tol.rtol, "atol": tol.atol, "normwise": tol.normwise}


def _inputs(built: Built) -> list[tuple[str, torch.Tensor]]:
    return [*leaves(built.args, "args"), *leaves(list(built.kwargs.values()), "kwargs")]


def work_of(func: Any, built: Built) -> dict[str, float]:
    """``{"flops": n}`` where torch's flop counter knows the op (matmuls, convolutions,
    attention), else ``{"bytes": n}``: the bytes of its tensor inputs and outputs."""
    from torch.utils.flop_counter import FlopCounterMode

    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        out = _call(func, built)
    flops = counter.get_total_flops()
    if flops:
        return {"flops": float(flops)}
    tensors = [t for _, t in _inputs(built)] + [t for _, t in leaves(out, "out")]
    return {"bytes": float(sum(t.numel() * t.element_size() for t in tensors))}


def measure_call(func: Any, built: Built, device: torch.device, settings: Mapping[str, Any]) -> dict[str, Any]:
    """The device call's perf record, as the ``perf`` fixture makes one (no autograd recording)."""
    from pytest_rocm.perf.measure import measure

    dtypes = [t.dtype for _, t in _inputs(built) if t.is_floating_point()]

    def call() -> Any:
        with torch.no_grad():
            return _call(func, built)

    record = measure(
        call,
        work=work_of(func, built),
        name=str(func),
        dtype=dtype_name(dtypes[0]) if dtypes else None,
        device=device,
        **settings,
    )
    return dict(record)


__all__ = ["DeviceFailed", "NotReplayable", "Replay", "replay", "resolve_op"]
