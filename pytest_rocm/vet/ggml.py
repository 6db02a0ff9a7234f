"""Which backends a GGML-based build can target (HIP, CUDA, Vulkan, Metal, SYCL, CPU), from its
build files and, for a built package, from the backend libraries it ships.

llama.cpp (and everything that vendors it: llama-cpp-python, GGUF runners) picks its GPU backend
at configure time with CMake options, all but the CPU (and Metal on Apple) off by default, so a
plain ``pip install llama-cpp-python`` builds for the CPU only and HIP needs
``CMAKE_ARGS="-DGGML_HIP=ON"``. What is read:

- ``option(GGML_HIP "ggml: use HIP" OFF)`` in any CMakeLists.txt (``ggml/CMakeLists.txt`` from
  2024 on; before that llama.cpp's own file with ``LLAMA_HIPBLAS``, ``LLAMA_CUBLAS``,
  ``LLAMA_METAL``, and ``GGML_HIPBLAS``/``GGML_CUBLAS`` in between), with its default;
- ``-DGGML_HIP=ON`` in scikit-build-core's ``[tool.scikit-build] cmake.args`` of pyproject.toml
  (a package that turns a backend on for every build);
- the backends' source folders (``ggml/src/ggml-hip/``, ``ggml-cuda/``) or, in older trees, files
  (``ggml-cuda.cu``, which the HIP build compiles too, ``ggml-metal.m``, ``ggml-vulkan.cpp``);
- the backend libraries a wheel or an install ships (``libggml-cpu.so``, ``libggml-hip.so``,
  ``ggml-vulkan.dll``): what was actually built, which outranks what the build files could build.

Pure: fed member paths and texts by ``vet.scan``; the result is the vet document's
``build_backends``. Registers the row basis in ``vet.gpu_fit.BUILD_BACKEND_BASIS``.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from typing import Any

from pytest_rocm.vet import gpu_fit

BACKENDS = ("HIP", "CUDA", "Vulkan", "Metal", "SYCL", "CPU")
#: the CMake option names of each backend across llama.cpp's history
OPTIONS = {
    "GGML_HIP": "HIP",
    "GGML_HIPBLAS": "HIP",
    "LLAMA_HIPBLAS": "HIP",
    "GGML_CUDA": "CUDA",
    "GGML_CUBLAS": "CUDA",
    "LLAMA_CUBLAS": "CUDA",
    "LLAMA_CUDA": "CUDA",
    "GGML_VULKAN": "Vulkan",
    "LLAMA_VULKAN": "Vulkan",
    "GGML_METAL": "Metal",
    "LLAMA_METAL": "Metal",
    "GGML_SYCL": "SYCL",
    "LLAMA_SYCL": "SYCL",
    "GGML_CPU": "CPU",
}
_OPTION = re.compile(r'^[ \t]*option\s*\(\s*((?:GGML|LLAMA)_[A-Z]+)\s+"[^"]*"\s+([^\s)]+)', re.MULTILINE)
_DEFINE = re.compile(r"^-D((?:GGML|LLAMA)_[A-Z]+)(?::BOOL)?=(\S+)$")
_WORD = {"hip": "HIP", "cuda": "CUDA", "vulkan": "Vulkan", "metal": "Metal", "sycl": "SYCL", "cpu": "CPU"}
_SOURCE = re.compile(r"(?:^|/)ggml-(hip|cuda|vulkan|metal|sycl|cpu)(?:/|\.(?:cu|cpp|c|m)$)")
_SHIPPED = re.compile(
    r"(?:^|/)(?:lib)?ggml-(hip|cuda|vulkan|metal|sycl|cpu)(?:[-_][^/]*)?\.(?:so|dylib|dll)(?:\.[0-9.]+)?$"
)
#: a GGML tree at all: its core source or library (old trees have no backend options for the CPU)
_CORE = re.compile(r"(?:^|/)(?:ggml\.c|(?:lib)?ggml(?:-base)?\.(?:so|dylib|dll)(?:\.[0-9.]+)?)$")
_ON = {"on", "yes", "true", "1", "y"}
#: a GGML library that may hold every backend in one file (llama.cpp before the backends split, 2024)
_MONOLITHIC = re.compile(r"(?:^|/)lib(?:llama|ggml)\.(?:so|dylib)(?:\.[0-9.]+)?$")
#: what a monolithic library links, per backend
_LINKED = (
    (re.compile(r"^lib(?:amdhip64|hipblas|rocblas)\.so"), "HIP"),
    (re.compile(r"^lib(?:cudart|cublas|cuda)\.so"), "CUDA"),
    (re.compile(r"^libvulkan\.so"), "Vulkan"),
)


@dataclass
class GgmlEvidence:
    #: backend -> (option name, default as written, ``path:line``) of its first CMake option
    options: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    #: backend -> (value, pyproject path) of a ``-D`` in scikit-build-core's cmake.args
    defines: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: backend -> first source folder or file of it
    sources: dict[str, str] = field(default_factory=dict)
    #: backend -> first backend library shipped (or a monolithic library linking its runtime)
    shipped: dict[str, str] = field(default_factory=dict)
    #: a monolithic libllama/libggml whose NEEDED entries were read (old builds: one file, all backends)
    monolithic: str | None = None
    core: str | None = None

    def observe_path(self, path: str) -> None:
        if m := _SHIPPED.search(path):
            self.shipped.setdefault(_WORD[m.group(1)], path)
        elif m := _SOURCE.search(path):
            self.sources.setdefault(_WORD[m.group(1)], path[: m.end()].rstrip("/"))
        if self.core is None and _CORE.search(path):
            self.core = path

    def observe_needed(self, path: str, needed: list[str]) -> None:
        """A binary's NEEDED entries: a monolithic GGML library names the GPU runtimes it was built for."""
        if not _MONOLITHIC.search(path):
            return
        self.monolithic = self.monolithic or path
        for name in needed:
            for pattern, backend in _LINKED:
                if pattern.match(name):
                    self.shipped.setdefault(backend, f"{path} (links {name})")

    def observe_build(self, path: str, text: str) -> None:
        name = path.rsplit("/", 1)[-1].lower()
        if name == "cmakelists.txt" or name.endswith(".cmake"):
            for option in _OPTION.finditer(text):
                backend = OPTIONS.get(option.group(1))
                if backend is not None:
                    line = text.count("\n", 0, option.start()) + 1
                    self.options.setdefault(backend, (option.group(1), option.group(2), f"{path}:{line}"))
        elif name == "pyproject.toml" and "cmake" in text:
            for arg in _cmake_args(text):
                if (define := _DEFINE.match(arg)) and (backend := OPTIONS.get(define.group(1))):
                    self.defines.setdefault(backend, (define.group(2), path))

    @property
    def found(self) -> bool:
        return bool(self.options or self.shipped or self.defines or self.monolithic or (self.sources and self.core))


def _cmake_args(text: str) -> list[str]:
    """scikit-build-core's ``cmake.args`` (and the older ``cmake.define`` table) of a pyproject."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]
    try:
        tool = tomllib.loads(text).get("tool", {}).get("scikit-build", {})
    except tomllib.TOMLDecodeError:
        return []
    cmake = tool.get("cmake", {}) if isinstance(tool, dict) else {}
    args = [a for a in cmake.get("args", []) if isinstance(a, str)] if isinstance(cmake, dict) else []
    define = cmake.get("define", {}) if isinstance(cmake, dict) else {}
    if isinstance(define, dict):
        args += [f"-D{k}={'ON' if v is True else 'OFF' if v is False else v}" for k, v in define.items()]
    return [a.strip() for arg in args for a in arg.split()]


def _on(value: str) -> bool:
    return value.strip('"').lower() in _ON


def to_json(evidence: GgmlEvidence) -> dict[str, Any]:
    """The vet document's ``build_backends``: ``{}`` when the package is no GGML build."""
    if not evidence.found:
        return {}
    if evidence.shipped or evidence.monolithic:  # a built package: what it ships is what it runs on
        shipped = dict(evidence.shipped)
        if evidence.monolithic and "CPU" not in shipped:
            shipped["CPU"] = evidence.monolithic  # the CPU code is in the one library
        ships = [b for b in BACKENDS if b in shipped]
        return {
            "basis": "shipped",
            "one_library": evidence.monolithic is not None
            and not any(b for b in ships if not shipped[b].startswith(evidence.monolithic)),
            "backends": ships,
            "default": ships,
            "evidence": {b: shipped[b] for b in ships},
        }
    can = {b for b in (*evidence.options, *evidence.sources, *evidence.defines)}
    if "CPU" not in evidence.options:
        can.add("CPU")  # llama.cpp before the GGML_CPU option always built its CPU code
    default = {b for b, (_, value, _) in evidence.options.items() if _on(value)}
    if "CPU" not in evidence.options:
        default.add("CPU")
    default |= {b for b, (value, _) in evidence.defines.items() if _on(value)}
    default -= {b for b, (value, _) in evidence.defines.items() if not _on(value)}
    where = {
        b: (evidence.defines[b][1] if b in evidence.defines else None)
        or (evidence.options[b][2] if b in evidence.options else None)
        or evidence.sources.get(b, "")
        for b in BACKENDS
        if b in can
    }
    platform = {b for b, (_, value, _) in evidence.options.items() if value.startswith("${")} - default
    return {
        "basis": "build files",
        "platform_default": [b for b in BACKENDS if b in platform],
        "backends": [b for b in BACKENDS if b in can],
        "default": [b for b in BACKENDS if b in default],
        "options": {b: evidence.options[b][0] for b in BACKENDS if b in evidence.options},
        "evidence": {b: where[b] for b in BACKENDS if b in can and where[b]},
    }


def phrase(found: dict[str, Any]) -> str:
    """``builds for HIP, CUDA, Vulkan, Metal, SYCL, CPU (GGML CMake options; by default CPU)``."""
    if not found:
        return ""
    backends = ", ".join(found["backends"]) or "no backend"
    if found["basis"] == "shipped":
        missing = "it links no HIP runtime" if found.get("one_library") else "no libggml-hip"
        lacking = f"; {missing}" if "HIP" not in found["backends"] else ""
        only = " only" if found["backends"] == ["CPU"] else ""
        return f"ships GGML backends {backends}{only} ({', '.join(found['evidence'].values())}{lacking})"
    default = ", ".join(found["default"]) or "none"
    platform = ", ".join(found.get("platform_default", []))
    also = f"; {platform} where the platform turns it on" if platform else ""
    return f"builds for {backends} (GGML CMake options; by default {default}{also})"


def next_step(found: dict[str, Any]) -> str | None:
    """What to do to get a HIP build of it, when the build can make one and does not by default."""
    if not found or found["basis"] != "build files" or "HIP" not in found["backends"] or "HIP" in found["default"]:
        return None
    option = found.get("options", {}).get("HIP", "GGML_HIP")
    return (
        f'its build makes HIP code only when asked: CMAKE_ARGS="-D{option}=ON -DAMDGPU_TARGETS=<your gfx>" '
        "pip install --no-binary :all: <it> (a plain install builds for the CPU)"
    )


def caveat(found: dict[str, Any]) -> str | None:
    """A built GGML package without a HIP backend library: it runs on an AMD machine, on the CPU."""
    if not found or found["basis"] != "shipped" or "HIP" in found["backends"]:
        return None
    return (
        f"its GGML libraries are built for {', '.join(found['backends'])} only (no HIP backend): on an AMD GPU it "
        'runs on the CPU; a HIP build: CMAKE_ARGS="-DGGML_HIP=ON -DAMDGPU_TARGETS=<your gfx>" pip install '
        "--no-binary :all: <it>"
    )


def _basis(doc: dict[str, Any]) -> str:
    return phrase(doc.get("build_backends") or {})


if _basis not in gpu_fit.BUILD_BACKEND_BASIS:
    gpu_fit.BUILD_BACKEND_BASIS.append(_basis)
