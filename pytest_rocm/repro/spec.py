"""Reading a parity record's ``repro`` spec (``parity.callspec`` writes it) back from a report:
every field checked, so what reaches a script is plain data of known shape. Pure and stdlib only.

A report is data from anywhere: a spec that is not exactly what ``callspec`` writes is refused
with one line naming the field (:class:`SpecError`), never trusted and never turned into code.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Mapping
from typing import Any

SPEC_VERSION = 1
#: the dtypes a check runs in (``parity.tolerances.DTYPE_NAMES``)
RUN_DTYPES = ("float64", "float32", "float16", "bfloat16")
#: dtypes an input tensor may have (a name ``getattr(torch, name)`` gives)
TENSOR_DTYPES = (
    *RUN_DTYPES,
    "complex128",
    "complex64",
    "complex32",
    "int64",
    "int32",
    "int16",
    "int8",
    "uint8",
    "bool",
)
_ITEMSIZE = {"complex128": 16, "float64": 8, "int64": 8, "complex64": 8, "float32": 4, "int32": 4, "complex32": 4}
_ITEMSIZE |= {"float16": 2, "bfloat16": 2, "int16": 2, "int8": 1, "uint8": 1, "bool": 1}
MODES = ("absolute", "cpu-relative", "model")
MAX_TENSORS, MAX_DIMS, MAX_STRING, MAX_DEPTH = 32, 12, 200, 8
#: elements of one rebuilt storage: a stand-in for unrecorded values is allocated at this size at most
MAX_ELEMENTS = 1 << 28
#: the values ``callspec`` saves, with base64's growth
MAX_VALUE_BYTES = 64 * 1024
OP_NAME = re.compile(r"torch(\.[A-Za-z_][A-Za-z0-9_]*){1,6}")
#: a program's step: an aten (or other namespace's) overload, ``torch.ops.aten.mm.default``
STEP_OP = re.compile(r"torch\.ops(\.[A-Za-z_][A-Za-z0-9_]*){3}")
MAX_STEPS = 64
_KEYWORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_FLOAT_WORDS = ("inf", "-inf", "nan")
#: a corpus row's sample (``parity.origin``): the database, the entry's name and variant, the sample id
CORPUS_DBS = ("opinfo", "moduleinfo")
_ENTRY = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,99}")
_SAMPLE = re.compile(r"[sr][0-9]{1,6}")
_VERSION = re.compile(r"[0-9A-Za-z.+_-]{1,60}")
#: the model criterion's parts of a tolerance record, beside rtol/atol/normwise
_MODEL_KEYS = ("normwise_factor", "accumulation")


class SpecError(ValueError):
    """The spec is not one ``callspec`` writes; the message names the field."""


def _int(value: Any, where: str, low: int = 0, high: int = 1 << 62) -> int:
    if type(value) is not int or not low <= value <= high:
        raise SpecError(f"{where}: {value!r:.60} is not an integer in [{low}, {high}]")
    return value


def _number(value: Any, where: str) -> float:
    if type(value) not in (int, float) or not math.isfinite(value) or value < 0:
        raise SpecError(f"{where}: {value!r:.60} is not a finite number >= 0")
    return float(value)


def _choice(value: Any, choices: tuple[str, ...], where: str) -> str:
    if not isinstance(value, str) or value not in choices:
        raise SpecError(f"{where}: {value!r:.60} is not one of {', '.join(choices)}")
    return value


def _values(value: Any, nbytes: int, where: str) -> dict[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or value.get("encoding") != "base64":
        raise SpecError(f"{where}.values: not base64-encoded values")
    byteorder = _choice(value.get("byteorder"), ("little", "big"), f"{where}.values.byteorder")
    data = value.get("data")
    if not isinstance(data, str) or len(data) > MAX_VALUE_BYTES * 4 // 3 + 4:
        raise SpecError(f"{where}.values.data: not a base64 string of at most {MAX_VALUE_BYTES} bytes")
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise SpecError(f"{where}.values.data: not base64") from None
    if len(raw) != nbytes:
        raise SpecError(f"{where}.values.data: {len(raw)} bytes where the layout reads {nbytes}")
    return {"encoding": "base64", "byteorder": byteorder, "data": base64.b64encode(raw).decode()}


def _tensor(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise SpecError(f"{where}: not an object")
    dtype = _choice(value.get("dtype"), TENSOR_DTYPES, f"{where}.dtype")
    shape, stride = value.get("shape"), value.get("stride")
    if not isinstance(shape, list) or not isinstance(stride, list) or len(shape) != len(stride):
        raise SpecError(f"{where}: shape and stride are not two lists of one length")
    if len(shape) > MAX_DIMS:
        raise SpecError(f"{where}: more than {MAX_DIMS} dimensions")
    shape = [_int(n, f"{where}.shape", 0, MAX_ELEMENTS) for n in shape]
    stride = [_int(s, f"{where}.stride", 0, MAX_ELEMENTS) for s in stride]
    offset = _int(value.get("storage_offset"), f"{where}.storage_offset", 0, MAX_ELEMENTS)
    span = 0 if 0 in shape else 1 + sum((n - 1) * s for n, s in zip(shape, stride, strict=True))
    if offset + span > MAX_ELEMENTS:
        raise SpecError(f"{where}: a storage of {offset + span} elements (at most {MAX_ELEMENTS})")
    out: dict[str, Any] = {"shape": shape, "dtype": dtype, "stride": stride, "storage_offset": offset}
    out["values"] = _values(value.get("values"), span * _ITEMSIZE[dtype], where)
    return out


_MEMORY_FORMATS = ("contiguous_format", "preserve_format", "channels_last", "channels_last_3d")


def _value(value: Any, where: str, n_tensors: int, depth: int = 0, steps: int | None = None) -> Any:
    """One argument as plain tagged data (``callspec._Recorder.value``'s forms only; in a program's
    step, ``steps`` earlier steps, also ``parity.program``'s references and run placeholders)."""
    if depth > MAX_DEPTH:
        raise SpecError(f"{where}: nested deeper than {MAX_DEPTH}")
    if value is None or type(value) in (bool, int):
        return value
    if type(value) is float:
        if not math.isfinite(value):
            raise SpecError(f"{where}: a non-finite float that is not tagged")
        return value
    if isinstance(value, str):
        if len(value) > MAX_STRING:
            raise SpecError(f"{where}: a string of more than {MAX_STRING} characters")
        return value
    if not isinstance(value, Mapping) or len(value) != 1:
        raise SpecError(f"{where}: {value!r:.60} is not an argument form")
    ((tag, inner),) = value.items()
    if tag == "tensor":
        return {"tensor": _int(inner, f"{where}.tensor", 0, n_tensors - 1)}
    if tag in ("tuple", "list") and isinstance(inner, list):
        return {tag: [_value(v, where, n_tensors, depth + 1, steps) for v in inner]}
    if tag == "dtype":
        return {"dtype": _choice(inner, (*TENSOR_DTYPES, *(("run",) if steps is not None else ())), f"{where}.dtype")}
    if steps is not None and tag == "input":
        return {"input": _int(inner, f"{where}.input", 0, n_tensors - 1)}
    if steps is not None and tag == "value" and isinstance(inner, list) and len(inner) == 2 and steps > 0:
        return {"value": [_int(inner[0], f"{where}.value", 0, steps - 1), _int(inner[1], f"{where}.value", -1, 1024)]}
    if steps is not None and tag == "device":
        return {"device": _choice(inner, ("run",), f"{where}.device")}
    if steps is not None and tag == "memory_format":
        return {"memory_format": _choice(inner, _MEMORY_FORMATS, f"{where}.memory_format")}
    if steps is not None and tag == "layout":
        return {"layout": _choice(inner, ("strided",), f"{where}.layout")}
    if tag == "float":
        return {"float": _choice(inner, _FLOAT_WORDS, f"{where}.float")}
    raise SpecError(f"{where}: {tag!r:.40} is not an argument form")


def read_spec(spec: Any) -> dict[str, Any]:
    """The checked spec (a fresh dict of plain data), or SpecError. A spec with ``op`` null says
    why it cannot be rebuilt: that is a SpecError too, with its own words."""
    if not isinstance(spec, Mapping):
        raise SpecError("repro: not an object")
    if spec.get("version") != SPEC_VERSION:
        raise SpecError(f"repro.version: {spec.get('version')!r:.20} is not {SPEC_VERSION}")
    corpus = _corpus(spec["corpus"]) if "corpus" in spec else None
    if spec.get("op") is None and corpus is None:
        why = spec.get("why")
        raise SpecError(why[:300] if isinstance(why, str) and why else "repro.op: not recorded")
    op = spec.get("op")
    if (op is not None or corpus is None) and (not isinstance(op, str) or not OP_NAME.fullmatch(op)):
        raise SpecError(f"repro.op: {op!r:.80} is not a torch name")
    mode = _choice(spec.get("mode"), MODES, "repro.mode")
    dtypes = spec.get("dtypes")
    if not isinstance(dtypes, list) or not dtypes:
        raise SpecError("repro.dtypes: not a list of dtypes")
    dtypes = list(dict.fromkeys(_choice(d, RUN_DTYPES, "repro.dtypes") for d in dtypes))
    tensors = spec.get("tensors")
    if not isinstance(tensors, list) or len(tensors) > MAX_TENSORS:
        raise SpecError(f"repro.tensors: not a list of at most {MAX_TENSORS} tensors")
    checked = [_tensor(t, f"repro.tensors[{i}]") for i, t in enumerate(tensors)]
    args, kwargs = spec.get("args"), spec.get("kwargs")
    if not isinstance(args, list) or not isinstance(kwargs, Mapping):
        raise SpecError("repro: args is not a list or kwargs not an object")
    out_args = [_value(a, f"repro.args[{i}]", len(checked)) for i, a in enumerate(args)]
    out_kwargs = {}
    for key, value in kwargs.items():
        if not isinstance(key, str) or not _KEYWORD.fullmatch(key):
            raise SpecError(f"repro.kwargs: {key!r:.40} is not a keyword name")
        out_kwargs[key] = _value(value, f"repro.kwargs.{key}", len(checked))
    tolerances = spec.get("tolerances")
    if not isinstance(tolerances, Mapping):
        raise SpecError("repro.tolerances: not an object")
    tols: dict[str, dict[str, float]] = {}
    for dtype in dtypes:
        tol = tolerances.get(dtype)
        if not isinstance(tol, Mapping):
            raise SpecError(f"repro.tolerances.{dtype}: not recorded")
        tols[dtype] = {
            key: _number(tol.get(key), f"repro.tolerances.{dtype}.{key}") for key in ("rtol", "atol", "normwise")
        }
        if tol.get("cpu_factor") is not None:
            tols[dtype]["cpu_factor"] = _number(tol["cpu_factor"], f"repro.tolerances.{dtype}.cpu_factor")
        if mode == "model" and dtype != "float64":  # float64's has no yardstick: judged as absolute
            for key in ("cpu_factor", *_MODEL_KEYS):
                tols[dtype][key] = _number(tol.get(key), f"repro.tolerances.{dtype}.{key}")
    grad, seed = spec.get("grad", False), spec.get("seed", 0)
    if type(grad) is not bool:
        raise SpecError(f"repro.grad: {grad!r:.20} is not true or false")
    seed = _int(seed, "repro.seed", 0, (1 << 63) - 1)
    program = _program(spec["program"], len(checked)) if "program" in spec else None
    keep_overflow = spec.get("keep_overflow", False)
    if type(keep_overflow) is not bool:
        raise SpecError(f"repro.keep_overflow: {keep_overflow!r:.20} is not true or false")
    return {
        "version": SPEC_VERSION,
        **({"program": program} if program is not None else {}),
        **({"corpus": corpus} if corpus is not None else {}),
        "grad": grad,
        "seed": seed,
        "keep_overflow": keep_overflow,
        "op": op,
        "mode": mode,
        "dtypes": dtypes,
        "tensors": checked,
        "args": out_args,
        "kwargs": out_kwargs,
        "tolerances": tols,
    }


def _program(value: Any, n_tensors: int) -> dict[str, Any]:
    """``parity.program``'s steps and result, every reference pointing at an input or an earlier step."""
    steps = value.get("steps") if isinstance(value, Mapping) else None
    if not isinstance(steps, list) or not 0 < len(steps) <= MAX_STEPS:
        raise SpecError(f"repro.program.steps: not a list of 1 to {MAX_STEPS} steps")
    out = []
    for n, step in enumerate(steps):
        where = f"repro.program.steps[{n}]"
        if not isinstance(step, Mapping) or not isinstance(step.get("op"), str) or not STEP_OP.fullmatch(step["op"]):
            raise SpecError(f"{where}.op: not a torch.ops name")
        args, kwargs = step.get("args"), step.get("kwargs")
        if not isinstance(args, list) or not isinstance(kwargs, Mapping):
            raise SpecError(f"{where}: args is not a list or kwargs not an object")
        for key in kwargs:
            if not isinstance(key, str) or not _KEYWORD.fullmatch(key):
                raise SpecError(f"{where}.kwargs: {key!r:.40} is not a keyword name")
        out.append(
            {
                "op": step["op"],
                "args": [_value(a, f"{where}.args[{i}]", n_tensors, steps=n) for i, a in enumerate(args)],
                "kwargs": {k: _value(v, f"{where}.kwargs.{k}", n_tensors, steps=n) for k, v in kwargs.items()},
            }
        )
    result = _value(value.get("result"), "repro.program.result", n_tensors, steps=len(steps))
    return {"steps": out, "result": result}


def _corpus(value: Any) -> dict[str, Any]:
    """A corpus row's sample: database, entry name and variant, dtype, sample id, the torch that
    made it, and which of the sample's flattened leaves the row passed (``parity.origin``)."""
    if not isinstance(value, Mapping):
        raise SpecError("repro.corpus: not an object")
    out: dict[str, Any] = {"db": _choice(value.get("db"), CORPUS_DBS, "repro.corpus.db")}
    for key, pattern in (("name", _ENTRY), ("variant", _ENTRY), ("sample", _SAMPLE), ("torch", _VERSION)):
        text = value.get(key)
        if not isinstance(text, str) or not pattern.fullmatch(text):
            raise SpecError(f"repro.corpus.{key}: {text!r:.60} is not a {key} of a corpus row")
        out[key] = text
    out["dtype"] = _choice(value.get("dtype"), RUN_DTYPES, "repro.corpus.dtype")
    passed = value.get("passed")
    if not isinstance(passed, list) or len(passed) > MAX_TENSORS:
        raise SpecError(f"repro.corpus.passed: not a list of at most {MAX_TENSORS} indices")
    out["passed"] = [_int(i, "repro.corpus.passed", 0, 4096) for i in passed]
    return out
