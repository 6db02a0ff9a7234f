"""Which ops a replay may run: pure computation, decided from the op's schema in this torch.

A capture is a file from someone else, and its ``not_replayable`` field is only what its writer
claimed: a replay asks the op itself. An op is run only when every argument its schema declares
is a value a signature holds and nothing else (tensors, numbers, booleans, dtypes, layouts,
devices, memory formats, lists and optionals of those, and strings only where the argument is a
mode switch such as ``reduce="sum"``), and when it returns or writes a tensor. That excludes,
by construction rather than by a list of names:

- file and storage I/O: ``from_file`` (a ``str filename``), ``set_.source_Storage`` (a
  ``Storage``), ``_print`` (a ``str``);
- process-global state and effects outside tensors: ops that return nothing and write no tensor
  (``_assert_async``, ``_cufft_set_plan_cache_max_size``, ``sym_constrain_range``), streams,
  generators, TorchScript objects.

An op added to a later torch is judged by the same rule, so nothing new runs unvetted.
"""

from __future__ import annotations

import functools
import re
from typing import Any

#: schema type kinds that are plain values a signature records
_VALUE_KINDS = frozenset(
    {
        "TensorType",
        "IntType",
        "SymIntType",
        "FloatType",
        "SymFloatType",
        "BoolType",
        "SymBoolType",
        "NumberType",
        "ComplexType",
        "DeviceObjType",
        "NoneType",
    }
)
_CONTAINER_KINDS = frozenset({"OptionalType", "ListType"})
#: string arguments that choose a mode of the computation (``reduce="sum"``, ``approximate="tanh"``);
#: any other string (a file name, a message, a key) makes the op not pure computation
MODE_STRINGS = frozenset(
    {
        "approximate",
        "reduce",
        "rounding_mode",
        "norm",
        "driver",
        "UPLO",
        "mode",
        "indexing",
        "pad_mode",
        "padding",
        "padding_side",
        "side",
        "interpolation",
        "activation",
        "ord",
        "equation",
    }
)
#: what a mode string may be: a short word or an einsum equation, never a path
_MODE_VALUE = re.compile(r"^[A-Za-z0-9_,.>\- ]{0,64}$")
#: the namespaces of ops PyTorch itself defines (an extension's op is another program's code)
TORCH_NAMESPACES = frozenset({"aten", "prims"})


def _type_problem(kind_of: Any) -> str | None:
    kind = kind_of.kind()
    if kind in _CONTAINER_KINDS:
        return next((p for p in map(_type_problem, kind_of.containedTypes()) if p), None)
    if kind in _VALUE_KINDS or kind == "StringType":
        return None
    return str(kind_of)


def impure(func: Any) -> str | None:
    """Why ``func`` (an OpOverload) is not pure computation on its tensors, or None (decided
    once per op: a capture asks for every new signature)."""
    try:
        return _impure(func)
    except TypeError:  # not hashable (a stand-in for an op): decided afresh
        return _impure.__wrapped__(func)


@functools.lru_cache(maxsize=4096)
def _impure(func: Any) -> str | None:
    schema = func._schema
    for argument in schema.arguments:
        problem = _type_problem(argument.type)
        if problem == "Storage":
            return f"argument {argument.name} is a Storage: storage I/O is not pure computation"
        if problem:
            return f"argument {argument.name} is a {problem}: not a value a signature holds"
        if "str" in str(argument.type) and argument.name not in MODE_STRINGS:
            return f"argument {argument.name} is a string that is not a mode (a file name, a message): not pure computation"
    writes = any(a.alias_info is not None and a.alias_info.is_write for a in schema.arguments)
    tensors_out = any(r.type.kind() in ("TensorType", "ListType", "OptionalType") for r in schema.returns)
    if not writes and not schema.returns:
        return "it returns nothing and writes no tensor: its effect is outside its tensors"
    if not writes and not tensors_out:
        return "its result is not a tensor: nothing to compare"
    return None


def bad_mode_string(func: Any, args: list[Any], kwargs: dict[str, Any]) -> str | None:
    """A mode string argument whose value is not a short word (``reduce`` given a path), or None."""
    for position, argument in enumerate(func._schema.arguments):
        if argument.name not in MODE_STRINGS or "str" not in str(argument.type):
            continue
        value = kwargs.get(argument.name, args[position] if position < len(args) else None)
        if isinstance(value, str) and not _MODE_VALUE.match(value):
            return f"argument {argument.name} is {value[:40]!r}, not a mode word"
    return None


__all__ = ["MODE_STRINGS", "TORCH_NAMESPACES", "bad_mode_string", "impure"]
