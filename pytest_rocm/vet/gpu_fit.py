"""How a stack row's gfx targets fit this machine's GPUs (its "gpus" column), and what the row is based on.

- **What it is based on** (:func:`basis`), said in every row so nobody reads "no AMD binary" where
  vet could not read one: "10 gfx targets read from 2 binaries", "JIT at run time (Triton)",
  "bindings, no device code", "targets unknown: binary not readable (...)", or "no AMD binary:
  built from source, for the gfx you build it for".
- **Per variant** (:func:`variants`): a package that ships one library per ROCm version
  (bitsandbytes' ``libbitsandbytes_rocm64.so``, ``..._rocm70.so``) covers a gfx only through the
  variant that carries it, and a process loads one variant: the one for its torch's ROCm version.
  The union of all variants would say "covers gfx950" on a machine whose torch loads a variant
  without it. The variant is the ``rocm64``/``hip70``/``cuda121`` word of the binary's file name.
- **Build backends** (:data:`BUILD_BACKEND_BASIS`): evidence of which GPU backends a source tree's
  build can produce (HIP, CUDA, Vulkan, CPU from its CMake files) goes through this one door, so a
  row built from source can name them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from importlib import metadata
from typing import Any

from pytest_rocm.vet import gfx

_VARIANT = re.compile(r"(?:^|[_.-])(rocm|hip|cuda)(\d+(?:\.\d+)*)(?=[_.-]|$)", re.IGNORECASE)
_BINARY_RULES_UNREADABLE = ("oversized-member", "unreadable", "archive-too-large")
#: rules whose findings mean "compiled at run time by Triton for the GPU it runs on"
_JIT_RULES = ("triton-kernel",)
#: ROCm findings that say the code knows about ROCm, not how it runs there
_CONTEXT_ONLY = ("python-hip-branch", "rocm-mention", "rocm-version-or-requirement", "rocm-requirement-in-build")
#: ROCm evidence of a binding: linked or loaded, no device code of its own
_BINDING_RULES = ("links-rocm-library", "loads-rocm-library", "rocm-variant-binary")
#: a hook for build-backend evidence (which GPU backends a source tree's build can produce): a
#: function of the vet document returning a phrase ("builds for HIP, CUDA, Vulkan, CPU") or "";
#: a module that reads such evidence registers itself here
BUILD_BACKEND_BASIS: list[Callable[[dict[str, Any]], str]] = []


def gpu_fit(targets: Iterable[str], gpus: list[str]) -> str:
    """How a package's gfx targets meet this machine's GPUs, in a few words."""
    built = {gfx.processor(t) for t in targets}
    if not built:
        return "targets unknown"
    if not gpus:
        return "no AMD GPU here"
    from pytest_rocm.env.arch import generic_of

    missing = [g for g in gpus if g not in built and generic_of(g) not in built]
    return "covers " + ", ".join(gpus) if not missing else "does not cover " + ", ".join(missing)


def variant_of(path: str) -> str | None:
    """``rocm64`` of ``bitsandbytes/libbitsandbytes_rocm64.so``; None when the name says none."""
    name = path.rsplit("/", 1)[-1]
    found = _VARIANT.findall(name.split(".so", 1)[0])
    return f"{found[-1][0].lower()}{found[-1][1]}" if found else None


def variants(gfx_targets: dict[str, list[str]]) -> dict[str, list[str]]:
    """The gfx targets per variant, when the AMD binaries come in two or more variants."""
    by: dict[str, set[str]] = {}
    for path, targets in gfx_targets.items():
        if targets and (variant := variant_of(path)) is not None:
            by.setdefault(variant, set()).update(targets)
    return {v: gfx.order(t) for v, t in sorted(by.items())} if len(by) > 1 else {}


def torch_rocm() -> str | None:
    """This environment's torch ROCm version from its distribution's local version (``+rocm7.1``),
    never importing torch; None when torch is absent or not a ROCm build."""
    try:
        local = metadata.version("torch").partition("+")[2]
    except metadata.PackageNotFoundError:
        return None
    m = re.match(r"rocm(\d+)\.(\d+)", local)
    return f"{m.group(1)}.{m.group(2)}" if m else None


def loaded_variant(names: Iterable[str], rocm: str | None) -> str | None:
    """The variant a torch of ROCm ``rocm`` (``6.4``) loads: ``rocm64`` (or ``rocm6.4``/``hip64``)."""
    if rocm is None:
        return None
    major, minor = rocm.split(".")
    wanted = {f"rocm{major}{minor}", f"rocm{major}.{minor}", f"hip{major}{minor}", f"hip{major}.{minor}"}
    return next((n for n in names if n in wanted), None)


def variant_gpu_fit(by_variant: dict[str, list[str]], gpus: list[str], rocm: str | None) -> str:
    """Which variant covers this machine's GPUs, and which one this torch loads."""
    words = []
    for gpu in gpus:
        having = [v for v, targets in by_variant.items() if gpu_fit(targets, [gpu]).startswith("covers")]
        lacking = [v for v in by_variant if v not in having]
        if not having:
            words.append(f"no variant covers {gpu}")
        elif lacking:
            words.append(f"{gpu} only in {', '.join(having)} (not {', '.join(lacking)})")
        else:
            words.append(f"every variant covers {gpu}")
    loads = loaded_variant(by_variant, rocm)
    if rocm is None:
        words.append("this torch is no ROCm build: it loads none of them")
    elif loads is None:
        words.append(f"this torch (ROCm {rocm}) has no variant here")
    elif gpus:
        words.append(f"this torch (ROCm {rocm}) loads {loads}: {gpu_fit(by_variant[loads], gpus)}")
    else:
        words.append(f"this torch (ROCm {rocm}) loads {loads}")
    return "; ".join(words) if gpus else "no AMD GPU here; " + "; ".join(words)


def torch_build(name: str, version: str | None) -> str | None:
    """What a PyTorch build means for a stack, from its local version (``2.13.0+cpu``): a CPU or
    a CUDA build runs nothing on an AMD GPU, whatever the rest of the stack is; None otherwise."""
    if name.lower() not in ("torch", "pytorch") or not version:
        return None
    local = version.partition("+")[2].lower()
    if local.startswith("cpu"):
        return f"a CPU build of PyTorch (+{local}): nothing in this stack will use the GPU"
    if re.match(r"cu\d+$", local):
        return f"a CUDA build of PyTorch (+{local}): no ROCm support, nothing in this stack will use an AMD GPU"
    return None


def basis(doc: dict[str, Any]) -> str:
    """What a vet document's AMD verdict rests on, in a few words."""
    if build := torch_build(str(doc.get("name", "")), doc.get("version")):
        return build
    read = {path: targets for path, targets in doc["gfx_targets"].items() if targets}
    targets = {t for ts in read.values() for t in ts}
    if targets:
        n = len(read)
        return f"{len(targets)} gfx targets read from {n} binar{'y' if n == 1 else 'ies'}"
    unreadable = [f for f in doc["findings"] if f["rule"] in _BINARY_RULES_UNREADABLE and _is_binary(f["path"])] + [
        {"path": p, "text": n} for p, n in doc["gfx_notes"].items()
    ]
    if unreadable:
        first = unreadable[0]
        return f"targets unknown: binary not readable ({first['path']}: {first['text']})"
    for backend in BUILD_BACKEND_BASIS:  # the backends a build can target say more than its class
        if said := backend(doc):
            return said
    if doc["class"] in (1, 2):
        return "no native GPU code counted"
    if doc["class"] == 4:
        return "no AMD binary, JIT or ROCm source path"
    counted = {f["rule"] for f in doc["findings"] if not f["context"] and f.get("place", "runtime") != "tests"}
    rocm = {f["rule"] for f in doc["findings"] if f["side"] == "rocm" and not f["context"]} - set(_CONTEXT_ONLY)
    if str(doc.get("name", "")).lower().startswith(("triton", "pytorch-triton")) or (rocm and rocm <= set(_JIT_RULES)):
        return "JIT at run time (Triton)"
    if "jit-rocm" in rocm:  # compiled where it runs, for that GPU: not a build the user makes
        return "JIT at run time (hipcc through its run-time compiler): compiled for the GPU it runs on"
    if counted & set(_BINDING_RULES) and not counted & {"hip-fatbin-section", "hip-source-file", "hip-header"}:
        return "bindings, no device code"
    every_rocm = {f["rule"] for f in doc["findings"] if f["side"] == "rocm" and not f["context"]}
    if every_rocm and every_rocm <= {"rocm-version-or-requirement", "rocm-requirement-in-build", "rocm-mention"}:
        return "requires ROCm builds of other packages: vet those (their device code is theirs)"
    if doc.get("origin") in ("wheel", "installed"):  # a prebuilt artifact is not built from source
        return "no AMD binary in this build: its ROCm path is text (sources, headers, a build script)"
    return "no AMD binary: built from source, for the gfx you build it for"


def _is_binary(path: str) -> bool:
    from pytest_rocm.vet.kinds import BINARY, kind_of

    return kind_of(path.rsplit("!", 1)[-1]) == BINARY
