"""An op signature of a workload capture: its id and its readable text (stdlib only).

A signature is what replaying one op call needs and nothing more: the overload, every argument's
metadata (tensors: shape, strides, storage offset, dtype, device type, requires_grad; scalars and
keyword arguments: their value), whether the call ran in the backward pass or under autocast, and
whether it mutated its inputs. Tensor *values* are never part of it. Two calls with the same
signature are one entry with a call count; the id is a hash of the canonical JSON of the fields
that decide the replay, so the same call captured on two machines gets the same id.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

#: the fields of a signature that make it distinct (and go into its id); the rest is counted
#: (``calls``) or derived (``not_replayable``)
KEY_FIELDS: tuple[str, ...] = ("op", "phase", "grad", "inplace", "autocast", "args", "kwargs")
#: length of a signature id in hex digits (40 bits: collisions need about a million signatures)
ID_LENGTH = 10

_SHORT = {
    "float64": "f64",
    "float32": "f32",
    "float16": "f16",
    "bfloat16": "bf16",
    "int64": "i64",
    "int32": "i32",
    "int16": "i16",
    "int8": "i8",
    "uint8": "u8",
    "bool": "b8",
    "complex64": "c64",
    "complex128": "c128",
}


def signature_id(signature: Mapping[str, Any]) -> str:
    """The id of a signature: a hash of its key fields, independent of where it was captured."""
    key = {name: signature.get(name) for name in KEY_FIELDS}
    text = json.dumps(key, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:ID_LENGTH]


def contiguous_strides(shape: list[int]) -> list[int]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return list(reversed(strides))


def tensor_text(meta: Mapping[str, Any]) -> str:
    """``f32[64,32]``; a non-contiguous layout adds its strides (``{s=1,64}``), an offset ``@5``,
    a lazy conjugate or negative view ``.conj`` / ``.neg``."""
    shape = list(meta["shape"])
    text = f"{_SHORT.get(meta['dtype'], meta['dtype'])}[{','.join(map(str, shape))}]"
    if list(meta["stride"]) != contiguous_strides(shape):
        text += "{s=" + ",".join(map(str, meta["stride"])) + "}"
    if meta.get("offset"):
        text += f"@{meta['offset']}"
    return text + "".join(f".{flag}" for flag in ("conj", "neg") if meta.get(flag))


def arg_text(arg: Mapping[str, Any]) -> str:
    """One argument as the table shows it."""
    if "tensor" in arg:
        return tensor_text(arg["tensor"])
    if "list" in arg:
        return "[" + ", ".join(arg_text(a) for a in arg["list"]) + "]"
    if "value" in arg:
        return json.dumps(arg["value"])
    for kind in ("dtype", "device", "layout", "memory_format", "float"):
        if kind in arg:
            return str(arg[kind])
    if "complex" in arg:
        re_, im = arg["complex"]
        return f"({re_}{im:+}j)"
    return f"<{arg.get('opaque', '?')}>"


def signature_text(signature: Mapping[str, Any]) -> str:
    """``aten.mm.default(f32[8,64], f32[64,32]{s=1,64})`` with ``backward``/autocast noted."""
    parts = [arg_text(a) for a in signature.get("args", [])]
    parts += [f"{k}={arg_text(v)}" for k, v in sorted((signature.get("kwargs") or {}).items())]
    text = f"{signature['op']}({', '.join(parts)})"
    notes = []
    if signature.get("phase") == "backward":
        notes.append("in backward")
    if signature.get("grad"):
        notes.append("with grad")
    autocast = signature.get("autocast")
    if autocast:
        notes.append(f"autocast {autocast.get('device_type')} {autocast.get('dtype')}")
    return text + (f" [{'; '.join(notes)}]" if notes else "")


def row_name(signature: Mapping[str, Any]) -> str:
    """The signature's row in the compatibility table: ``workload/aten.mm.default[3f2a9c1b7e]``."""
    return f"workload/{signature['op']}[{signature['id']}]"


__all__ = ["ID_LENGTH", "KEY_FIELDS", "arg_text", "row_name", "signature_id", "signature_text", "tensor_text"]
