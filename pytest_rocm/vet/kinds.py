"""The kind of a file, from its name: which rules read it, and whether the scan reads it at all."""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Final, Literal

FileKind = Literal[
    "cuda-source",
    "native-source",
    "python",
    "build",
    "metadata",
    "wheel-info",
    "requirements",
    "binary",
    "archive",
    "submodules",
]
CUDA_SRC: Final = "cuda-source"  # .cu .cuh
NATIVE: Final = "native-source"  # C/C++/HIP sources and headers
PYTHON: Final = "python"
BUILD: Final = "build"  # setup.py, CMake, Makefile, pyproject.toml ...
METADATA: Final = "metadata"  # METADATA / PKG-INFO
WHEEL: Final = "wheel-info"  # a wheel's WHEEL file (tags)
REQUIREMENTS: Final = "requirements"  # requirements*.txt, egg-info requires.txt
BINARY: Final = "binary"  # .so .pyd .dylib ... and device code files
ARCHIVE: Final = "archive"  # a nested archive
SUBMODULES: Final = "submodules"  # .gitmodules: which folders are other projects' code

_NATIVE_SUFFIXES = {
    ".c",
    ".cc",
    ".cpp",
    ".cxx",
    ".c++",
    ".h",
    ".hh",
    ".hpp",
    ".hxx",
    ".inl",
    ".ipp",
    ".tcc",
    ".hip",
    ".cl",
}
_BUILD_NAMES = {
    "setup.py",
    "setup.cfg",
    "pyproject.toml",
    "cmakelists.txt",
    "makefile",
    "meson.build",
    "build.sh",
    "build",
    "build.bazel",
    "workspace",
    "sconstruct",
}
_BUILD_SUFFIXES = {".cmake", ".mk", ".bzl", ".bazel"}
_BINARY_SUFFIXES = {".so", ".pyd", ".dylib", ".dll", ".o", ".a", ".cubin", ".fatbin", ".ptx", ".hsaco", ".co"}
_ARCHIVE_SUFFIXES = (".whl", ".zip", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".tar")


def kind_of(path: str) -> FileKind | None:
    """The kind of a file from its name; None for files the scan ignores (docs, data, .pyc)."""
    p = PurePosixPath(path)
    name = p.name.lower()
    suffix = p.suffix.lower()
    if name in _BUILD_NAMES or suffix in _BUILD_SUFFIXES:
        return BUILD
    if suffix in (".cu", ".cuh"):
        return CUDA_SRC
    if suffix in _NATIVE_SUFFIXES:
        return NATIVE
    if suffix in (".py", ".pyi"):
        return PYTHON
    if name in ("metadata", "pkg-info"):
        return METADATA
    if name == "wheel" and p.parent.name.endswith(".dist-info"):
        return WHEEL
    if name == "requires.txt" or (name.startswith("requirements") and suffix in (".txt", ".in")):
        return REQUIREMENTS
    if name == ".gitmodules":
        return SUBMODULES
    if suffix in _BINARY_SUFFIXES or re.search(r"\.so(\.\d+)+$", name):
        return BINARY
    if name.endswith(_ARCHIVE_SUFFIXES):
        return ARCHIVE
    return None
