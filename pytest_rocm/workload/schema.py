"""Reading and writing ``pytest-rocm/workload/1`` files (stdlib and jsonschema only: the plugin
validates a workload at configure time, long before torch is imported).

A bad file is a :class:`WorkloadError` whose one line names the file and the field
(``ops.json: signatures[3].args[0].tensor.shape[1] is -4, expected at least 0``), as every other
loader of the project says it; the plugin turns it into a usage error, the CLI into exit status 2.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from pytest_rocm.env.schemas import duplicates, first_problem
from pytest_rocm.env.textfile import UserFileError, read_json
from pytest_rocm.report.files import write_text_atomic
from pytest_rocm.workload.limits import ITEMSIZE, LAYOUTS, MEMORY_FORMATS, tensor_problem

SCHEMA = "pytest-rocm/workload/1"


class WorkloadError(ValueError):
    """A workload file that cannot be used; the message is one line naming the file and the fault."""


#: argument kinds whose value names one of a closed set (a name outside it never reaches getattr)
_NAMED = {"dtype": ITEMSIZE, "layout": LAYOUTS, "memory_format": MEMORY_FORMATS}


def _check_arg(arg: Mapping[str, Any], where: str) -> None:
    meta = arg.get("tensor")
    if meta is not None and len(meta["shape"]) != len(meta["stride"]):
        raise WorkloadError(f"{where}.tensor: {len(meta['shape'])} sizes but {len(meta['stride'])} strides")
    problem = tensor_problem(meta) if meta is not None else None
    if problem:
        raise WorkloadError(f"{where}.tensor: {problem}")
    for kind, names in _NAMED.items():
        if kind in arg and arg[kind] not in names:
            raise WorkloadError(f"{where}.{kind} is {arg[kind]!r}, not a torch {kind.replace('_', ' ')}")
    for i, item in enumerate(arg.get("list") or ()):
        _check_arg(item, f"{where}.list[{i}]")


def validate(document: Any, source: str) -> dict[str, Any]:
    """The document if it is a valid workload; WorkloadError naming ``source`` and the field."""
    if not isinstance(document, dict):
        raise WorkloadError(f"{source}: expected a JSON object, got {type(document).__name__}")
    if document.get("schema") != SCHEMA:
        raise WorkloadError(f"{source}: schema is {document.get('schema')!r}, expected {SCHEMA!r}")
    problem = first_problem("workload", document)
    if problem:
        raise WorkloadError(f"{source}: {problem}")
    signatures = document["signatures"]
    twice = duplicates(s["id"] for s in signatures)
    if twice is not None:
        raise WorkloadError(f"{source}: signature id {twice!r} appears twice")
    for i, signature in enumerate(signatures):
        for j, arg in enumerate(signature["args"]):
            _check_arg(arg, f"{source}: signatures[{i}].args[{j}]")
        for name, arg in signature["kwargs"].items():
            _check_arg(arg, f"{source}: signatures[{i}].kwargs.{name}")
    return document


def load_workload(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and validate a workload file; WorkloadError (one line) on any fault."""
    try:
        document = read_json(path, "workload file")
    except UserFileError as exc:
        raise WorkloadError(str(exc)) from None
    return validate(document, os.fspath(path))


def workload_problem(path: str | os.PathLike[str]) -> str | None:
    """The one line saying why ``path`` is not a usable workload file, or None."""
    try:
        load_workload(path)
    except WorkloadError as exc:
        return str(exc)
    return None


def write_workload(path: str | os.PathLike[str], document: Mapping[str, Any]) -> None:
    """Write atomically (a reader, or a capture killed while writing, never sees half a file)."""
    write_text_atomic(os.fspath(path), json.dumps(document, indent=1, allow_nan=False) + "\n", make_folders=True)


def replayable(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [s for s in document["signatures"] if not s.get("not_replayable")]


__all__ = ["SCHEMA", "WorkloadError", "load_workload", "replayable", "validate", "workload_problem", "write_workload"]
