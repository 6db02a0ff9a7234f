"""Which of a package's own modules, sub-packages and binaries its import loads: the import
graph across files, built from what each file imports when it runs (:mod:`imports_text`).

A finding's weight depends on it. numba's ``numba/cuda/`` is a sub-package ``import numba`` never
loads (a user opts in with ``from numba import cuda``), so its CUDA code is an optional part, not
what numba is. A binary that only a ``try`` whose ``except`` carries on loads (torchao 0.7's
``torch.ops.load_library`` of ``_C*.so``, then "Skipping import of cpp extensions") is an optional
path too. Both are caveats, not the verdict.

- the roots are the top-level packages and modules; importing ``a.b.c`` runs ``a`` and ``a.b``;
- a module is ``import`` when a chain of unguarded imports reaches it from a root, ``fallback``
  when only chains through a guarded import (a ``try`` that carries on) do, ``unreached`` when none;
- a top-level package that imports none of its own modules or loads them lazily
  (``__getattr__``, ``_LazyModule``) has its whole content treated as loaded (and so on down
  through its like sub-packages): its import says nothing about what its users import. An
  empty ``__init__.py`` deeper down (``numba/misc/``) loads nothing more than itself;
- a sub-package (a folder with ``__init__.py``) or a module that is unreached is an optional
  part (numba's ``numba/misc/numba_sysinfo.py``, which only ``numba -s`` imports); nothing is
  optional in a package whose import says nothing (above);
- a binary is loaded by the import of its extension module (``pkg/_C.cpython-311-...so`` is
  ``pkg._C``), or by a library load naming it (a literal file name or a glob such as ``"_C*.so"``
  in a file that calls ``load_library``/``CDLL``/``dlopen``/``spec_from_file_location``); with no
  such reference it keeps its
  full weight: binaries are the evidence of what was built.
"""

from __future__ import annotations

import fnmatch
import re
from collections import deque
from dataclasses import dataclass, field
from typing import Literal

from pytest_rocm.vet.imports_text import module_imports
from pytest_rocm.vet.reach import Reach, reach_at

Status = Literal["import", "fallback", "unreached"]
_IDENT = re.compile(r"^[A-Za-z_]\w*$")
#: the calls that load a binary by file name (importlib's spec_from_file_location and
#: ExtensionFileLoader load an extension module from a path: ComfyUI's kernels do)
_LOADER_WORDS = ("load_library", "DLL", "LoadLibrary", "dlopen", "cdll", "spec_from_file_location", "FileLoader")
_LOADER = re.compile(
    r"\b(?:load_library|CDLL|PyDLL|LoadLibrary\w*|dlopen|cdll|spec_from_file_location|ExtensionFileLoader)\b"
)
#: a quoted library file name or glob: "_C*.so", "libfoo.so.1", "*.pyd"
_LIBRARY_LITERAL = re.compile(r"[\"']([\w.*?\[\]-]*\.(?:so|pyd|dll|dylib)(?:\.[\d*]+)*)[\"']")
_NOT_MODULES = frozenset({"setup", "conftest", "noxfile"})


@dataclass
class _Module:
    is_package: bool
    edges: list[tuple[str, bool]] = field(default_factory=list)
    lazy: bool = False


@dataclass
class ImportGraph:
    """The modules of one target as they are read; ask :meth:`status` once all are in."""

    strip_first: bool  # sdists: every path starts with "name-version/"
    modules: dict[str, _Module] = field(default_factory=dict)
    #: library literals of files that load libraries: (literal, its module, where it runs)
    references: list[tuple[str, str, Reach]] = field(default_factory=list)
    _status: dict[str, Status] | None = None

    def _offset(self, parts: list[str]) -> int:
        """How many leading folders of a member path are not module names (``name-1.0/src/``)."""
        offset = 1 if self.strip_first else 0
        return offset + 1 if len(parts) > offset + 1 and parts[offset] == "src" else offset

    def module_of(self, path: str) -> tuple[str, bool] | None:
        """The dotted module name of a member (``pkg/sub/__init__.py`` is the package
        ``pkg.sub``; ``pkg/_C.cpython-311-x86_64-linux-gnu.so`` the extension ``pkg._C``)."""
        if "!" in path:  # a nested archive is its own project
            return None
        parts = path.split("/")
        parts = parts[self._offset(parts) :]
        if not parts:
            return None
        stem = parts[-1].split(".", 1)[0]
        is_package = stem == "__init__"
        names = parts[:-1] if is_package else [*parts[:-1], stem]
        if not names or not all(_IDENT.match(n) for n in names) or names[0] in _NOT_MODULES:
            return None
        return ".".join(names), is_package

    def read_python(self, path: str, text: str) -> None:
        found = self.module_of(path)
        if found is None:
            return
        name, is_package = found
        edges, lazy = module_imports(text, name, is_package)
        self.modules[name] = _Module(is_package, edges, lazy)
        self._status = None
        if any(w in text for w in _LOADER_WORDS) and _LOADER.search(text):  # names in a file that loads libraries
            for m in _LIBRARY_LITERAL.finditer(text):
                self.references.append((m.group(1), name, reach_at(text, m.start())))

    def add_binary(self, path: str) -> None:
        """A binary, as the extension module its file name makes (imported by name, or not)."""
        found = self.module_of(path)
        if found is not None and found[0] not in self.modules:
            self.modules[found[0]] = _Module(False)
            self._status = None

    def _children(self, package: str) -> list[str]:
        prefix = package + "."
        return [n for n in self.modules if n.startswith(prefix) and "." not in n[len(prefix) :]]

    def _own_imports(self, package: str) -> bool:
        mod = self.modules[package]
        prefix = package + "."
        return not mod.lazy and any(target.startswith(prefix) for target, _ in mod.edges)

    def _walk(self, follow_guarded: bool) -> set[str]:
        roots = [n for n in self.modules if "." not in n]
        #: packages whose import says nothing about what their users import (a root that
        #: imports none of its own modules, or lazily; such a package's like children)
        blanket = {n for n in roots if self.modules[n].is_package and not self._own_imports(n)}
        seen: set[str] = set()
        todo = deque(roots)
        while todo:
            name = todo.popleft()
            if name in seen or name not in self.modules:
                continue
            seen.add(name)
            mod = self.modules[name]
            parts = name.split(".")
            todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))  # a.b.c runs a, a.b
            todo.extend(t for t, guarded in mod.edges if follow_guarded or not guarded)
            if name in blanket:
                children = self._children(name)
                blanket |= {c for c in children if self.modules[c].is_package and not self._own_imports(c)}
                todo.extend(children)
        return seen

    def status(self, module: str) -> Status:
        if self._status is not None:
            return self._status.get(module, "unreached")
        required, any_path = self._walk(False), self._walk(True)
        known: dict[str, Status] = {n: "import" if n in required else "fallback" for n in any_path}
        self._status = known
        return known.get(module, "unreached")

    def optional_part(self, path: str, binary: bool = False) -> str | None:
        """The part of the package (a sub-package's folder, or a module's file) a member sits
        in that the package's own import never loads, or None. A binary counts only by its folder
        (a library is often loaded by a computed name: :meth:`binary_status` asks that)."""
        found = self.module_of(path)
        if found is None:
            return None
        name, is_package = found
        parts = name.split(".")
        folders = parts if is_package else parts[:-1]
        if not folders or self._blanket(folders[0]):
            return None
        cut = path.split("/")
        for depth in range(2, len(folders) + 1):
            package = ".".join(folders[:depth])
            if package in self.modules and self.modules[package].is_package and self.status(package) == "unreached":
                return "/".join(cut[: self._offset(cut) + depth]) + "/"
        if not binary and not is_package and len(parts) > 1 and name in self.modules:
            return path if self.status(name) == "unreached" else None
        return None

    def _blanket(self, root: str) -> bool:
        mod = self.modules.get(root)
        return mod is None or not mod.is_package or not self._own_imports(root)

    def binary_status(self, path: str) -> Reach | None:
        """How a binary is loaded: ``import`` (its extension module is imported, or a load on
        the import path names it), ``fallback``/``opt-in`` (every load of it is guarded or opt-in),
        None when nothing in the package's Python names it."""
        found = self.module_of(path)
        file_name = path.rsplit("/", 1)[-1]
        status = self.status(found[0]) if found is not None else "unreached"
        if status != "unreached":  # its extension module is imported (or its package is blanket-loaded)
            return status
        ways = [
            (reach, self.status(module))
            for literal, module, reach in self.references
            if fnmatch.fnmatchcase(file_name, literal) or file_name == literal
        ]
        if not ways:
            return None
        if any(reach in ("import", "unknown") and status == "import" for reach, status in ways):
            return "import"
        return "fallback" if any(reach == "fallback" for reach, _ in ways) else "opt-in"
