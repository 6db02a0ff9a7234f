"""What a workload file may ask a replay to build, checked before anything is built (stdlib only).

A capture is a file from someone else: its tensor metadata decides how much memory a row
allocates. Two checks, both before torch allocates anything:

- at load (:func:`tensor_problem`, called by ``schema.validate``): every tensor is one torch can
  make at all: a dtype torch has, no negative stride, and every element it addresses inside
  what a 64-bit index reaches (an offset of 2**60 is the same fault as a 4 TiB shape, but a
  memory fault, so it is the bound's to say);
- per row (:func:`row_bytes` against ``--rocm-workload-max-memory``, by ``replay.guard``): the
  bytes a replay allocates for the inputs (the device's copy at the captured dtype and the
  reference's float64 copy), so a 4 TiB input is a skipped row naming the limit and the flag,
  never an allocation that fails or a row that blames the device.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

#: the default of ``--rocm-workload-max-memory``: what one row may allocate, device and reference
#: together (a captured LLM's largest GEMM at a long context is a few hundred MiB)
DEFAULT_MAX_BYTES = 8 * 2**30
#: the option that raises it, named in every line that refuses a row for its size
MAX_MEMORY_FLAG = "--rocm-workload-max-memory"
#: a tensor element's index is a signed 64-bit integer in every torch kernel
INDEX_LIMIT = 2**63

#: bytes per element of every dtype of torch's, by the name a capture writes (``str(dtype)``)
ITEMSIZE: dict[str, int] = {
    "float64": 8,
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "float8_e4m3fn": 1,
    "float8_e4m3fnuz": 1,
    "float8_e5m2": 1,
    "float8_e5m2fnuz": 1,
    "float8_e8m0fnu": 1,
    "float4_e2m1fn_x2": 1,
    "complex128": 16,
    "complex64": 8,
    "complex32": 4,
    "int64": 8,
    "int32": 4,
    "int16": 2,
    "int8": 1,
    "uint64": 8,
    "uint32": 4,
    "uint16": 2,
    "uint8": 1,
    "bool": 1,
    "qint8": 1,
    "qint32": 4,
    "quint8": 1,
    "quint4x2": 1,
    "quint2x4": 1,
    **{f"int{n}": 1 for n in range(1, 8)},
    **{f"uint{n}": 1 for n in range(1, 8)},
    "bits8": 1,
    "bits16": 2,
    "bits1x8": 1,
    "bits2x4": 1,
    "bits4x2": 1,
}
#: the dtypes a replay can fill with values (the rest are torch's, but no generator makes them)
GENERATED = frozenset(
    {
        "float64",
        "float32",
        "float16",
        "bfloat16",
        "float8_e4m3fn",
        "float8_e4m3fnuz",
        "float8_e5m2",
        "float8_e5m2fnuz",
        "complex128",
        "complex64",
        "complex32",
        "int64",
        "int32",
        "int16",
        "int8",
        "uint64",
        "uint32",
        "uint16",
        "uint8",
        "bool",
    }
)
LAYOUTS = frozenset(
    {"strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc", "_mkldnn", "jagged"}
)
MEMORY_FORMATS = frozenset({"contiguous_format", "channels_last", "channels_last_3d", "preserve_format"})


def size_text(n: float) -> str:
    """``4.0 TiB``, ``512.0 MiB``, ``12 B``: the unit a person reads at a glance."""
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{int(n)} B"


def storage_elements(meta: Mapping[str, Any]) -> int:
    """Elements of the storage the tensor's view needs (offset, then the furthest element)."""
    if any(int(s) == 0 for s in meta["shape"]):
        return int(meta["offset"])
    span = sum((int(s) - 1) * abs(int(st)) for s, st in zip(meta["shape"], meta["stride"], strict=True))
    return int(meta["offset"]) + span + 1


def tensor_problem(meta: Mapping[str, Any]) -> str | None:
    """Why torch cannot make this tensor at all (a fault of the file), or None; ``meta`` has passed
    the JSON schema (shape, stride and offset are integers, sizes and offset not negative)."""
    dtype = meta["dtype"]
    for flag in ("conj", "neg"):
        if flag in meta and not isinstance(meta[flag], bool):
            return f"{flag} is {meta[flag]!r}, expected true or false"
    if dtype not in ITEMSIZE:
        return f"dtype is {dtype!r}, not a torch dtype"
    for i, stride in enumerate(meta["stride"]):
        if stride < 0:
            return f"stride[{i}] is {stride}: torch has no negative strides"
    for i, size in enumerate(meta["shape"]):
        if size >= INDEX_LIMIT:
            return f"shape[{i}] is {size}, more than a 64-bit index reaches (2**63)"
    last = storage_elements(meta) - 1
    if last >= INDEX_LIMIT:
        return f"addresses element {last}, more than a 64-bit index reaches (2**63)"
    return None


def arg_tensors(arg: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    if "tensor" in arg:
        yield arg["tensor"]
    for item in arg.get("list") or ():
        yield from arg_tensors(item)


def input_bytes(signature: Mapping[str, Any]) -> int:
    """Bytes a replay allocates for the signature's tensor inputs: each storage at the captured
    dtype (the device run) and in float64 or complex128 (the reference), as ``inputs`` makes them."""
    total = 0
    for arg in [*signature["args"], *signature["kwargs"].values()]:
        for meta in arg_tensors(arg):
            itemsize = ITEMSIZE.get(meta["dtype"], 16)
            wide = 16 if meta["dtype"].startswith("complex") else max(itemsize, 8)
            total += storage_elements(meta) * (itemsize + wide)
    return total


def over_limit(what: str, needed: int, limit: int) -> str | None:
    """The one line refusing a row that needs ``needed`` bytes, or None within ``limit``."""
    if needed <= limit:
        return None
    return (
        f"{what} need {size_text(needed)}, more than the {size_text(limit)} a row may allocate "
        f"({MAX_MEMORY_FLAG}=SIZE raises it)"
    )


__all__ = [
    "DEFAULT_MAX_BYTES",
    "GENERATED",
    "ITEMSIZE",
    "LAYOUTS",
    "MAX_MEMORY_FLAG",
    "MEMORY_FORMATS",
    "input_bytes",
    "over_limit",
    "size_text",
    "storage_elements",
    "tensor_problem",
]
