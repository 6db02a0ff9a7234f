"""Whose code a finding is in: the package's own, or a vendored copy of another project's.

A tree under ``third_party/``, ``vendor/``, ``external/`` (and the other names in
:data:`VENDOR_DIRS`), or a git submodule named in ``.gitmodules``, is another project's code. Its
findings count only when the package's own build compiles it: a CMake ``add_subdirectory`` of
the tree, or a source file (or glob) inside it named in a build file (llama.cpp inside
llama-cpp-python is the package's GPU code). A header tree that is only on an include path (glm
inside a CUDA-only rasterizer) is not: one ``#elif defined(__HIP__)`` in it says nothing about
what the package builds.
"""

from __future__ import annotations

import re

#: folder names that hold other projects' code by convention
VENDOR_DIRS = frozenset(
    {"third_party", "third-party", "thirdparty", "3rdparty", "vendor", "vendored", "_vendor", "external", "extern"}
)
_MAX_REFERENCES = 20_000
_SUBDIRECTORY = re.compile(r"\badd_subdirectory\s*\(\s*[\"']?([^\s)\"']+)")
_QUOTED = re.compile(r"[\"']([^\"'\n]*/[^\"'\n]*)[\"']")
_SOURCE = re.compile(r"\.(?:cu|cuh|c|cc|cpp|cxx|hip)$|\*")
_SUBMODULE_PATH = re.compile(r"^[ \t]*path[ \t]*=[ \t]*(\S+)", re.MULTILINE)


def _normal(ref: str) -> str:
    ref = re.sub(r"^(?:\$\{[^}]*\}|\$\([^)]*\))/", "", ref.strip().replace("\\", "/"))
    while ref.startswith("./"):
        ref = ref[2:]
    return ref.rstrip("/")


class VendoredTrees:
    """The vendored trees of one target and the references its own build makes to them."""

    def __init__(self, strip_first: bool) -> None:
        self.strip_first = strip_first  # sdists: every path starts with "name-version/"
        self.submodules: set[str] = set()
        self.built: set[str] = set()  # add_subdirectory arguments
        self.sources: set[str] = set()  # quoted source files and globs

    def relative(self, path: str) -> str | None:
        if "!" in path:  # inside a nested archive: its own project
            return None
        if self.strip_first:
            return path.split("/", 1)[1] if "/" in path else path
        return path

    def tree_of(self, path: str) -> str | None:
        """The vendored tree a member is in, relative to the target's root; None for own code."""
        rel = self.relative(path)
        if rel is None:
            return None
        for sub in self.submodules:
            if rel.startswith(sub + "/"):
                return sub
        parts = rel.split("/")
        for i, part in enumerate(parts[:-2]):
            if part.lower() in VENDOR_DIRS:
                return "/".join(parts[: i + 2])
        return None

    def read_gitmodules(self, text: str) -> None:
        self.submodules |= {_normal(p) for p in _SUBMODULE_PATH.findall(text)}

    def read_build(self, path: str, text: str) -> None:
        """Note what an own build file compiles (build files inside vendored trees build those)."""
        if self.tree_of(path) is not None or len(self.built) + len(self.sources) > _MAX_REFERENCES:
            return
        rel = self.relative(path) or ""
        base = rel.rsplit("/", 1)[0] + "/" if "/" in rel else ""
        self.built |= {base + _normal(r) for r in _SUBDIRECTORY.findall(text)} | {
            _normal(r) for r in _SUBDIRECTORY.findall(text)
        }
        self.sources |= {_normal(r) for r in _QUOTED.findall(text) if _SOURCE.search(r)}

    def is_built(self, tree: str) -> bool:
        # a build file names paths relative to itself: "third_party/glm/x.cu" from pkg/setup.py
        # names the tree pkg/third_party/glm, so any tail of two or more of its parts will do
        parts = tree.split("/")
        tails = ["/".join(parts[i:]) for i in range(max(1, len(parts) - 1))]

        def names(ref: str, whole: bool) -> bool:
            return any(ref.startswith(t + "/") or (whole and ref == t) for t in tails)

        return any(names(b, True) for b in self.built) or any(names(s, False) for s in self.sources)
