"""The devices' published peaks (``data/peaks.json``), for "% of peak" (torch-free).

Each entry names an architecture (``gfx942``, ``sm_90``), the product its figures are of, the
substrings of the device name that identify that product, dense (no sparsity) TFLOP/s per dtype
and the memory bandwidth in GB/s, each number with the source it was read from. A device is
matched by architecture *and* name (the longest matching name wins: ``7900 XTX`` over ``7900 XT``):
an H200 never gets an H100's bandwidth, an unknown card gets no peak rather than a neighbour's.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from pytest_rocm._resources import load_json

#: torch dtype names -> the keys of peaks.json
DTYPE_KEYS: dict[str, str] = {
    "float32": "fp32",
    "float16": "fp16",
    "bfloat16": "bf16",
    "float8_e4m3fn": "fp8",
    "float8_e5m2": "fp8",
    "float8_e4m3fnuz": "fp8",
    "float8_e5m2fnuz": "fp8",
}


@cache
def entries() -> tuple[dict[str, Any], ...]:
    """The entries of data/peaks.json (``arch, product, names, tflops, bandwidth_gbs``)."""
    return tuple(load_json("peaks.json")["devices"])


def entry_for(arch: str | None, name: str | None) -> dict[str, Any] | None:
    """The entry of the device ``name`` of architecture ``arch``; None when none matches both."""
    base = (arch or "").split(":", 1)[0]
    text = (name or "").lower()
    best: tuple[int, dict[str, Any]] | None = None
    for entry in entries():
        if entry["arch"] != base:
            continue
        for alias in entry["names"]:
            if alias.lower() in text and (best is None or len(alias) > best[0]):
                best = (len(alias), entry)
    return best[1] if best else None


def peak_of(arch: str | None, name: str | None, kind: str | None, dtype: str | None) -> float | None:
    """The peak in the throughput's unit: GFLOP/s for ``kind="flops"`` at ``dtype``, GB/s for
    ``kind="bytes"``; None when the device, the dtype or the number is not known."""
    entry = entry_for(arch, name)
    if entry is None:
        return None
    if kind == "bytes":
        figure = entry.get("bandwidth_gbs")
        return float(figure["value"]) if figure else None
    if kind == "flops" and dtype:
        figure = entry.get("tflops", {}).get(DTYPE_KEYS.get(dtype, dtype))
        return float(figure["value"]) * 1e3 if figure else None
    return None
