"""How llama-cpp-python is built for a machine (stdlib only: the noxfile imports it, and the
llama.cpp row puts the line in its not-installed reason; docs/inference.md).

PyPI has only the sdist: pip compiles llama.cpp, and the ggml backend is chosen by CMake flags in
``CMAKE_ARGS``: ``-DGGML_HIP=on`` (AMD, with ``-DGPU_TARGETS`` the gfx targets to compile kernels
for, as llama.cpp's HIP build instructions give them), ``-DGGML_CUDA=on`` (NVIDIA), none for the
CPU backend.
"""

from __future__ import annotations

from collections.abc import Iterable

#: the machine kinds (``env.model.Backend``) a build is for
BACKENDS = ("rocm", "cuda", "cpu")


def cmake_args(backend: str, gfx: Iterable[str] = ()) -> str:
    """The ``CMAKE_ARGS`` value for ``backend`` (``""`` on the CPU)."""
    if backend not in BACKENDS:
        raise ValueError(f"llama-cpp-python builds for one of {', '.join(BACKENDS)}, not {backend!r}")
    if backend == "rocm":
        targets = sorted({g for g in gfx if g.startswith("gfx")})
        return "-DGGML_HIP=on" + (f" -DGPU_TARGETS={';'.join(targets)}" if targets else "")
    return "-DGGML_CUDA=on" if backend == "cuda" else ""


def install_line(backend: str, gfx: Iterable[str] = ()) -> str:
    """The shell line that builds and installs llama-cpp-python for ``backend``."""
    args = cmake_args(backend, gfx)
    prefix = f'CMAKE_ARGS="{args}" ' if args else ""
    return f"{prefix}pip install llama-cpp-python --no-binary llama-cpp-python"
