"""How much a match of a library-load or nvidia-smi rule weighs, from the text around it: a
binding's load (the verdict), a probe with a fallback, or an opt-in path (caveats); and whether
a file's nvidia-smi call parses its machine-readable output (a wrapper, when nothing else in the
package builds on torch). Where the code runs is :mod:`reach`'s to say.
"""

from __future__ import annotations

import re

from pytest_rocm._resources import load_json
from pytest_rocm.vet.reach import has_fallback, reach_at, unit_calls
from pytest_rocm.vet.rule import Context

#: nvidia-smi asked for machine-readable output: the package parses it (GPUtil's --query-gpu)
_NVSMI_QUERY = re.compile(
    r"--query-(?:gpu|compute-apps|accounted-apps)\b|--format=csv|--xml-format\b|[\"']-q[\"'],\s*[\"']-x[\"']"
)
#: a file that also asks AMD's tools is a multi-vendor monitor: nvidia-smi is one source of several
_AMD_SMI = re.compile(r"\b(?:rocm-smi|amd-smi|amdsmi|rocm_smi|pyrsmi)\b")
#: what a package builds on: one that wraps nvidia-smi *among other things* keeps the caveat
USES = ("uses-torch", "requires-torch", "uses-ecosystem", "requires-ecosystem")
#: the calls that load a library by name (a unit calling none only names libraries)
_LOADERS = frozenset({"CDLL", "WinDLL", "OleDLL", "PyDLL", "LoadLibrary", "LoadLibraryEx", "dlopen", "find_library"})
_VENDOR_API = re.compile(r"\b(?:nvml|cuda|cu|cublas|cudnn|nccl|nvrtc)[A-Z]\w*")
#: a binding names many of the library's functions (pynvml: hundreds); a probe one or two
BINDING_SYMBOLS = 3


#: names of NVIDIA libraries and products (``libcublasLt.so``, "cuBLAS", "cuDNN"): a file naming
#: them names libraries, it does not call their functions
_LIBRARY_NAMES = frozenset(
    n.lower() for n in [*load_json("vendor_libraries.json")["libraries"]["nvidia"], "cutensor", "cufile", "cudss"]
)


def _few_calls(text: str) -> bool:
    functions = {m for m in _VENDOR_API.findall(text) if m.lower() not in _LIBRARY_NAMES}
    return len(functions) < BINDING_SYMBOLS


#: a binding defines functions named after the library's API (pynvml's ``def nvmlInit():``);
#: a package that asks the library one question (its version) does not
_BINDING_DEF = re.compile(r"^[ \t]*def[ \t]+(?:nvml|cuda|cu|cublas|cudnn|nccl|nvrtc)[A-Z]\w*", re.MULTILINE)


def _only_finds(match: str, line: str) -> bool:
    """``find_library("cudart")`` alone looks a library up (None when absent): no load, unless
    the same line hands it to a loader (``CDLL(find_library("cudart"))``)."""
    return match.startswith("find_library") and not re.search(r"\b(?:CDLL|WinDLL|LoadLibrary\w*|dlopen)\s*\(", line)


def library_load(text: str, pos: int, match: str, line: str) -> tuple[str, Context]:
    """The rule id and context of a ``loads-nvidia-library`` match at ``pos``: the load of a
    binding (``loads-nvidia-library``, counted), a probe (``probes-nvidia-library``: in a file
    that names fewer than 3 of the library's functions and defines none named after its API,
    inside a ``try`` that carries on or a bare ``find_library``), or an opt-in (context
    ``opt-in``: in a function the import path does not call, as a probe there, or as names in a
    helper that loads nothing itself)."""
    probe = _few_calls(text) and not _BINDING_DEF.search(text)
    if probe and (has_fallback(text, pos) or _only_finds(match, line)):
        return "probes-nvidia-library", ""
    if reach_at(text, pos) in ("opt-in", "main") and (probe or not unit_calls(text, pos, _LOADERS)):
        return "loads-nvidia-library", "opt-in"  # a helper only an opt-in API runs (onnxruntime's preload_dlls)
    return "loads-nvidia-library", ""


def parses_nvidia_smi(text: str) -> bool:
    """Whether a file asks nvidia-smi for machine-readable output (GPUtil's ``--query-gpu``)
    and asks no AMD tool: nvidia-smi is its GPU source."""
    return bool(_NVSMI_QUERY.search(text)) and not _AMD_SMI.search(text)
