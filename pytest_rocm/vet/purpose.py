"""Whether a package's optional CUDA path is the package itself.

An optional path inside a package is optional: numba's ``numba/cuda/``, torchao 0.7's CUDA
extension behind a fallback, next to a package that works without them. The package itself is
not: a distribution that is the CUDA target of another library (``jax-cuda12-plugin``, a
``*-cu12`` build) loads its CUDA binaries through a fallback because its host library probes for
it, and a kernel package whose import loads nothing but its version, with a module that
JIT-builds ``.cu`` sources as it is imported, *is* that module. Their CUDA findings decide the
class; demoting them would call a CUDA-only package "pure Python".
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pytest_rocm.vet.modules import ImportGraph

#: a distribution named for a CUDA build: a ``cuda12``/``cu121``/``cuda12x`` word of its name
_CUDA_NAME = re.compile(r"(?:^|[-_.])(?:cuda\d*x?|cu\d{2,3}x?)(?:[-_.]|$)", re.IGNORECASE)
#: modules that say what a package is called, not what it does
_GLUE = frozenset({"__init__", "__main__", "_version", "version", "__about__", "about", "_build_info", "build_info"})


def optional_is_the_package(name: str, python: Iterable[str], binaries: Iterable[str], graph: ImportGraph) -> str:
    """Why the package is its optional path ("" when it is not): its name says it is a CUDA
    build, or nothing of it outside the optional parts does anything (its import loads only
    ``__init__``/version modules, and no binary)."""
    if _CUDA_NAME.search(name):
        return f"its name ({name}) says it is a CUDA build of something"
    substance = [
        path
        for path in python
        if path.rsplit("/", 1)[-1].split(".", 1)[0] not in _GLUE and graph.optional_part(path) is None
    ]
    substance += [
        path
        for path in binaries
        if graph.optional_part(path, binary=True) is None and graph.binary_status(path) not in ("fallback", "opt-in")
    ]
    if substance:
        return ""
    return "its import loads nothing but its name and version: the optional part is what it is"
