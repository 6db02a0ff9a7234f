"""Recording the distinct aten op calls of a running program (``pytest_rocm.capture()``).

A :class:`~torch.utils._python_dispatch.TorchDispatchMode` sees every aten op call below autograd
and autocast, forward and backward alike (the autograd engine runs backward ops inside the mode),
with the arguments the kernel gets: after autocast cast them, after a view was taken. Nothing is
monkey-patched. Each call is reduced to its signature (``workload.signature``): tensor metadata
only, never values. A cheap hashable key per call finds the signature already seen, so the cost
per call is a dictionary look-up; the JSON form is built once per distinct signature.

Why this module is long: the recorder, its per-call key, its file and its guards (a forked
child, `torch.compile`, a checkpoint's recomputation, the output path checked before the program
runs) are one lifetime; split, each part would need the others' state. Why the hash key and the
JSON form are built apart: the key must be cheap (it runs for every op
call of the program: the capture's overhead), the JSON form must be complete and portable.
"""

from __future__ import annotations

import contextlib
import math
import os
import platform
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from pytest_rocm.workload.purity import impure
from pytest_rocm.workload.schema import SCHEMA, write_workload
from pytest_rocm.workload.signature import signature_id

_current_graph_task_id = torch._C._current_graph_task_id
is_grad_enabled = torch.is_grad_enabled

#: namespaces of collectives: their result depends on other processes
_COLLECTIVE_NAMESPACES = frozenset({"c10d", "_c10d_functional", "c10d_functional", "_dtensor"})
#: namespaces whose ops replay from PyTorch alone
_TORCH_NAMESPACES = frozenset({"aten", "prims"})
#: namespaces that are bookkeeping, not computation (record_function markers): never recorded
_IGNORED_NAMESPACES = frozenset({"profiler"})
#: the argument that makes a random op deterministic when 0 (attention's dropout)
_DROPOUT_ARGS = ("dropout_p", "p", "dropout")
#: aten ops whose output is uninitialised memory: a replay has nothing to compare
_UNINITIALISED = frozenset({"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "resize_"})


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


#: argument types whose value is its own key (``(type, value)``: True and 1 stay apart)
_PLAIN = frozenset({bool, int, str, type(None), torch.dtype, torch.device, torch.layout})


def _tensor_key(value: torch.Tensor) -> tuple[Any, ...]:
    """A tensor's key: what its signature records, read in as few calls as there are fields
    (``shape`` is a hashable ``torch.Size``, ``device`` a hashable object: no conversions)."""
    try:
        stride = value.stride()
    except RuntimeError:  # a sparse or nested tensor has no strides: recorded as opaque anyway
        return ("T", value.shape, value.layout, value.dtype, value.device)
    dtype = value.dtype
    flags = (value.is_conj(), value.is_neg())
    return ("T", value.shape, stride, value.storage_offset(), dtype, value.device, value.requires_grad, flags)


def _wants_grad(keys: tuple[Any, ...]) -> bool:
    """Whether a tensor among these argument keys requires grad (an RNN's weights are a list)."""
    return any((k[0] == "T" and k[6:7] == (True,)) or (k[0] == "L" and _wants_grad(k[1])) for k in keys)


def _key(value: Any) -> Any:
    """A hashable key of one argument, cheap to build (the per-call cost of the capture): the
    common types are found by identity before any ``isinstance`` ladder."""
    cls = type(value)
    if cls is torch.Tensor or cls is torch.nn.Parameter:
        return _tensor_key(value)
    if cls is list or cls is tuple:
        return ("L", tuple(map(_key, value)))
    if cls is float:
        return ("nan",) if value != value else (float, value)
    if cls in _PLAIN:
        return (cls, value)
    if isinstance(value, torch.Tensor):
        return _tensor_key(value)
    if isinstance(value, (list, tuple)):
        return ("L", tuple(map(_key, value)))
    if isinstance(value, float) and math.isnan(value):
        return ("nan",)
    if isinstance(value, (bool, int, float, str, torch.dtype, torch.device, torch.layout)):
        return (type(value), value)
    if isinstance(value, torch.memory_format):
        return ("M", str(value))
    return ("O", type(value).__name__)


def encode(value: Any) -> dict[str, Any]:
    """One argument's JSON form (``{"tensor": {...}}``, ``{"value": 3}``, ``{"dtype": "float16"}``)."""
    if isinstance(value, torch.Tensor):
        if value.layout != torch.strided:
            return {"opaque": f"tensor with layout {str(value.layout).removeprefix('torch.')}"}
        meta = {
            "shape": list(value.shape),
            "stride": list(value.stride()),
            "offset": int(value.storage_offset()),
            "dtype": _dtype_name(value.dtype),
            "device": value.device.type,
            "requires_grad": bool(value.requires_grad),
        }
        # a lazy conjugate or negative view reaches the kernel as a flag it must honour (a GEMM's
        # conjugate-transpose mode): recorded only when set, so other signatures keep their ids
        meta.update({flag: True for flag, on in (("conj", value.is_conj()), ("neg", value.is_neg())) if on})
        return {"tensor": meta}
    if isinstance(value, (list, tuple)):
        items = [encode(v) for v in value]
        if all("value" in i and not isinstance(i["value"], list) for i in items):
            return {"value": [i["value"] for i in items]}  # sizes, dims: a plain list
        return {"list": items}
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return {"value": value}
    if isinstance(value, float):
        return {"value": value} if math.isfinite(value) else {"float": str(value)}
    if isinstance(value, complex):
        return {"complex": [value.real, value.imag]}
    if isinstance(value, torch.dtype):
        return {"dtype": _dtype_name(value)}
    if isinstance(value, torch.device):
        return {"device": value.type}
    if isinstance(value, torch.layout):
        return {"layout": str(value).removeprefix("torch.")}
    if isinstance(value, torch.memory_format):
        return {"memory_format": str(value).removeprefix("torch.")}
    return {"opaque": type(value).__name__}


def _has_opaque(encoded: Any) -> str | None:
    if isinstance(encoded, dict):
        if "opaque" in encoded:
            return str(encoded["opaque"])
        return next((o for o in map(_has_opaque, encoded.get("list", [])) if o), None)
    return None


def not_replayable(func: Any, args: list[dict[str, Any]], kwargs: dict[str, dict[str, Any]]) -> str | None:
    """Why a call cannot be replayed from its signature alone, or None."""
    namespace = func.namespace
    if namespace in _COLLECTIVE_NAMESPACES:
        return f"collective ({namespace}): its result depends on other processes"
    if namespace not in _TORCH_NAMESPACES:
        return f"custom op from an extension (namespace {namespace}): PyTorch alone cannot run it"
    tags = set(func.tags)
    if torch.Tag.nondeterministic_seeded in tags and not _no_dropout(func, args, kwargs):
        return "random op: its output depends on the generator's state, not on its inputs"
    if torch.Tag.data_dependent_output in tags or torch.Tag.dynamic_output_shape in tags:
        return "data-dependent output: its shape or value depends on the input values"
    if func.overloadpacket.__name__ in _UNINITIALISED:
        return "output is uninitialised memory: nothing to compare"
    why = impure(func)
    if why:
        return f"not pure computation: {why}"
    opaque = next((o for o in map(_has_opaque, [*args, *kwargs.values()]) if o), None)
    if opaque:
        return f"an argument of type {opaque} cannot be recorded"
    return None


def _no_dropout(func: Any, args: list[dict[str, Any]], kwargs: dict[str, dict[str, Any]]) -> bool:
    """A seeded op called with dropout 0 (``scaled_dot_product_attention`` in eval or inference)."""
    for position, argument in enumerate(func._schema.arguments):
        if argument.name in _DROPOUT_ARGS:
            given = kwargs.get(argument.name) or (args[position] if position < len(args) else None)
            value = given.get("value") if given is not None else argument.default_value
            return value is not None and not isinstance(value, bool) and value == 0
    return False


def _autocast(args: Any) -> dict[str, str] | None:
    """The autocast region the call ran in, or None. Inside the mode every autocast key is
    excluded (``is_autocast_enabled`` says False everywhere); the TLS snapshot the dispatcher took
    before autocast ran (``_RestorePythonTLSSnapshot``) says whether autocast was on for the
    call's device. ``torch.autocast``'s nesting count is read first: it is 0 outside any region,
    the common case, at the cost of a call. A region with ``enabled=False`` (gradient
    checkpointing's recomputation in a program that never autocasts) is not autocast."""
    nesting = torch.autocast_increment_nesting() - 1
    torch.autocast_decrement_nesting()
    if nesting <= 0:
        return None
    device_type = next((a.device.type for a in args if isinstance(a, torch.Tensor)), "cpu")
    with torch._C._RestorePythonTLSSnapshot():  # type: ignore[attr-defined]  # untyped in torch
        enabled = torch.is_autocast_enabled(device_type)
    if not enabled:
        return None
    return {"device_type": device_type, "dtype": _dtype_name(torch.get_autocast_dtype(device_type))}


class Recorder(TorchDispatchMode):  # type: ignore[no-untyped-call]  # torch leaves it untyped
    """Counts every aten op call by signature while it is active."""

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.signatures: dict[Any, dict[str, Any]] = {}
        self.calls = 0
        self.graphs_before = compiled_graphs()

    @classmethod
    def ignore_compile_internals(cls) -> bool:
        """torch.compile keeps compiling under capture: dynamo skips every frame while a mode
        that does not say this is active, so the program would run eagerly (0 graphs). The mode
        is off while dynamo compiles and on while the compiled code runs: what it records there
        is the aten ops that code calls (``compiled`` in the document says how many graphs)."""
        return True

    def __enter__(self) -> Recorder:
        from pytest_rocm.workload.composite import Composites

        self.composites = Composites(self)
        self.composites.__enter__()  # type: ignore[no-untyped-call]
        super().__enter__()  # type: ignore[no-untyped-call]
        return self

    def __exit__(self, *exc: Any) -> None:
        super().__exit__(*exc)  # type: ignore[no-untyped-call]
        self.composites.__exit__(*exc)  # type: ignore[no-untyped-call]

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if func.namespace in _IGNORED_NAMESPACES:
            return func(*args, **kwargs)
        backward = _current_graph_task_id() != -1
        self.record(func, args, kwargs, backward, _autocast(args))
        return func(*args, **kwargs)

    def record(
        self, func: Any, args: Any, kwargs: dict[str, Any], backward: bool, autocast: dict[str, str] | None
    ) -> None:
        """Count one call of ``func`` (an OpOverload) under its signature."""
        arg_key = tuple(map(_key, args))
        # requires_grad is a tensor key's 7th field: no second pass over the arguments
        grad = not backward and is_grad_enabled() and _wants_grad(arg_key)
        key = (
            func,
            backward,
            grad,
            None if autocast is None else tuple(autocast.values()),
            arg_key,
            tuple((name, _key(v)) for name, v in kwargs.items()) if kwargs else None,
        )
        self.calls += 1
        entry = self.signatures.get(key)
        if entry is None:
            entry = self.signatures[key] = self._signature(func, args, kwargs, backward, grad, autocast)
        entry["calls"] += 1

    @staticmethod
    def _signature(
        func: Any, args: Any, kwargs: Any, backward: bool, grad: bool, autocast: dict[str, str] | None
    ) -> dict[str, Any]:
        enc_args = [encode(a) for a in args]
        enc_kwargs = {k: encode(v) for k, v in kwargs.items()}
        signature: dict[str, Any] = {
            "op": str(func),
            "phase": "backward" if backward else "forward",
            "grad": grad,
            "inplace": bool(func._schema.is_mutable),
            "autocast": autocast,
            "args": enc_args,
            "kwargs": enc_kwargs,
        }
        signature["id"] = signature_id(signature)
        signature["calls"] = 0
        signature["not_replayable"] = not_replayable(func, enc_args, enc_kwargs)
        return signature


def compiled_graphs() -> int:
    """Graphs torch.compile has compiled in this process (0 when dynamo was never imported)."""
    utils = sys.modules.get("torch._dynamo.utils")
    return int(utils.counters["stats"]["unique_graphs"]) if utils is not None else 0


def captured_on() -> dict[str, Any]:
    """Which torch and device captured the workload (``captured_on`` in the file)."""
    backend = "rocm" if getattr(torch.version, "hip", None) else ("cuda" if torch.version.cuda else "cpu")
    info: dict[str, Any] = {
        "torch": torch.__version__,
        "backend": backend,
        "hip": getattr(torch.version, "hip", None),
        "cuda": torch.version.cuda,
        "device": "cpu",
        "arch": None,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
    try:
        if torch.cuda.is_available():
            props = torch.cuda.get_device_properties(torch.cuda.current_device())
            info["device"] = props.name
            info["arch"] = getattr(props, "gcnArchName", None) or f"sm_{props.major}{props.minor}"
    except RuntimeError:  # a broken driver: the capture still names the torch that ran
        pass
    return info


def document(recorder: Recorder, duration_s: float, command: list[str] | None = None) -> dict[str, Any]:
    """The ``pytest-rocm/workload/1`` document of what the recorder saw."""
    from pytest_rocm.env.seam import distribution_version  # the package root is the public API's layer

    signatures: dict[str, dict[str, Any]] = {}
    for entry in recorder.signatures.values():  # requires_grad is part of the key, not of the id
        seen = signatures.get(entry["id"])
        if seen is None:
            signatures[entry["id"]] = dict(entry)
        else:
            seen["calls"] += entry["calls"]
    ordered = sorted(signatures.values(), key=lambda s: (-s["calls"], s["op"], s["id"]))
    return {
        "schema": SCHEMA,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "tool": f"pytest-rocm {distribution_version('pytest-rocm')}",
        "captured_on": captured_on(),
        "command": command,
        "exit_status": None,
        "duration_s": round(duration_s, 6),
        "calls": recorder.calls,
        "compiled_graphs": compiled_graphs() - recorder.graphs_before,
        "signatures": ordered,
    }


class Capture:
    """What ``with pytest_rocm.capture() as cap:`` gives: the document once the block ended (the
    file is written by the process that started the capture, never by a forked child)."""

    def __init__(self, path: str | Path | None) -> None:
        self.path = Path(path) if path is not None else None
        self.recorder = Recorder()
        self.document: dict[str, Any] | None = None
        self._start = 0.0
        #: the process that writes the file: a child forked from it inherits the recorder and its
        #: exit handlers, and its own ops must not replace the parent's capture
        self.pid = os.getpid()

    @property
    def signatures(self) -> list[dict[str, Any]]:
        return list(self.document["signatures"]) if self.document else []

    def finish(self, command: list[str] | None = None, exit_status: int | None = None) -> dict[str, Any]:
        self.document = document(self.recorder, time.perf_counter() - self._start, command)
        self.document["exit_status"] = exit_status
        if self.path is not None and os.getpid() == self.pid:
            write_workload(self.path, self.document)
        return self.document


@contextlib.contextmanager
def capture(path: str | Path | None = None) -> Iterator[Capture]:
    """Record every distinct aten op call made inside the block (forward and backward); with
    ``path``, write the ``pytest-rocm/workload/1`` file when the block ends, even when it raised."""
    cap = Capture(path)
    cap._start = time.perf_counter()
    failed: BaseException | None = None
    try:
        with cap.recorder:
            yield cap
    except BaseException as exc:
        failed = exc
        raise
    finally:
        status = None if failed is None else (exc_status(failed))
        cap.finish(exit_status=status)


def exc_status(exc: BaseException) -> int:
    """The exit status a block that raised ``exc`` gives its process (SystemExit's code, else 1)."""
    if isinstance(exc, SystemExit):
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    return 1


__all__ = ["Capture", "Recorder", "capture", "captured_on", "document", "encode", "not_replayable"]
