"""Does a piece of a Python file run when its module is imported? The one reachability analysis
vet asks for every rule whose weight depends on it: a ``torch.utils.cpp_extension.load`` of CUDA
sources (on the import path: the package's core; behind an opt-in: a note), a ctypes load of an
NVIDIA library (onnxruntime's library names returned by a helper only its opt-in
``preload_dlls()`` uses), an import of a CUDA-only module, and (with :mod:`modules`) which of a
package's own modules and binaries its import loads. Decided from the text, never by running it.

Read with :mod:`ast`, a statement runs on import when its code unit (the module, a ``def``)
is reached from module level:

- module-level statements run, also inside an ``if``/``try``/``with``/``for`` block; so do class
  bodies, decorators, base classes and default values: the ``class``/``def`` statement runs them;
- a ``def`` body runs only when called; a ``lambda`` body likewise, never traced (it has no name);
- ``if __name__ == "__main__":`` does not run on import (its ``else`` does): a script's entry;
  nor does ``if TYPE_CHECKING:`` (its ``else`` does);
- a reached unit's calls reach, transitively (a fixed point), what they name in the same file:
  ``f()`` a function ``f`` visible from the caller (module level, an enclosing ``def``); ``C()``
  class ``C``'s ``__init__``/``__new__``/``__post_init__``; ``C.f()``, ``C().f()``, and
  ``self.f()``/``cls.f()`` in ``C``'s methods: method ``f``; ``super().f()``: ``f`` of ``C``'s
  bases; ``@f`` (no arguments): ``f``. A method is looked up in the class, then its same-file bases;
- nothing else is followed (``obj.f()`` on a variable, a function passed as a value, other
  modules): code reached only that way reads as an opt-in, the milder verdict;
- a ``load(`` that is no call (in a comment, a string, a docstring) runs nothing.

``has_fallback`` asks whether the statement sits in the body of a ``try`` (the innermost one, in
the same function: an outer one's handlers belong to other code) whose every ``except`` carries
on without a ``raise``, at any depth; a ``raise`` in a ``def`` the handler defines runs later.
:func:`reach_at` puts both together: ``import``, ``fallback``, ``opt-in``, ``main`` or ``unknown``.

Why this module is long: it is one analysis. Every question (is this call on the import path,
is this statement guarded, where does this statement run, does its unit load a library) reads the
same private tree (parents, reached units, per-line statements); split across modules, that tree
would become an interface of its own, and the questions would drift apart, as the three copies
this replaced had.

A file that does not parse (a Python 2 file in an old sdist, a syntax error, null bytes, nesting
too deep for the parser) gets the old line-based reading (:mod:`pytest_rocm.vet.jit_text`), so a
broken file still gets an answer and never raises.
"""

from __future__ import annotations

import ast
import bisect
import functools
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal, TypeGuard, cast

from pytest_rocm.vet import jit_text

_FUNC = (ast.FunctionDef, ast.AsyncFunctionDef)
_FUNC_OR_LAMBDA = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_DEFINES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)  # statements that bind a name
_SCOPE = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.Module)
_TRY: tuple[type[ast.stmt], ...] = tuple(t for t in (ast.Try, getattr(ast, "TryStar", None)) if t is not None)
_CONSTRUCTORS = ("__init__", "__new__", "__post_init__")
_NEWLINE = re.compile(r"\r\n|\r|\n")  # the tokenizer's line ends (not splitlines()'s \f, \x1c...)
Unit = ast.AST  # the module, a def or a lambda: code that runs together


@dataclass
class _Tree:
    module: ast.Module
    line_starts: list[int]  # character offset of each line's start, for pos -> (lineno, col)
    parents: dict[ast.AST, ast.AST] = field(default_factory=dict)
    names: dict[ast.AST, dict[str, list[ast.AST]]] = field(default_factory=dict)  # scope -> defs
    classes: dict[str, list[ast.ClassDef]] = field(default_factory=dict)
    reached: set[Unit] = field(default_factory=set)  # the units that run on import
    #: line -> the calls whose callee spans it, and the statements that span it: a match looks at
    #: its own line's, not every node of the file (scan.py asks once per match)
    calls: dict[int, list[ast.Call]] = field(default_factory=dict)
    stmts: dict[int, list[ast.stmt]] = field(default_factory=dict)


def _is_type_checking(node: ast.AST) -> bool:
    """``if TYPE_CHECKING:`` / ``if typing.TYPE_CHECKING:``: for the type checker, never run."""
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _is_main(node: ast.AST) -> TypeGuard[ast.If]:
    """``if __name__ == "__main__":`` (either way round), or ``if TYPE_CHECKING:``: a block whose
    body never runs on import."""
    if _is_type_checking(node):
        return True
    if not (isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and len(node.test.ops) == 1):
        return False
    sides = [node.test.left, *node.test.comparators]
    return isinstance(node.test.ops[0], ast.Eq) and {
        s.id if isinstance(s, ast.Name) else s.value if isinstance(s, ast.Constant) else None for s in sides
    } == {"__name__", "__main__"}


def _own_nodes(unit: Unit) -> Iterator[ast.AST]:
    """The nodes whose code runs when ``unit`` runs: not nested def/lambda bodies, nor a main block."""
    stack: list[ast.AST] = [unit.body] if isinstance(unit, ast.Lambda) else list(getattr(unit, "body", []))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, _FUNC_OR_LAMBDA):  # defining it evaluates these, not the body
            args = node.args
            stack.extend([*args.defaults, *(d for d in args.kw_defaults if d is not None)])
            if isinstance(node, _FUNC):
                stack.extend(node.decorator_list)
        elif _is_main(node):
            stack.extend([node.test, *node.orelse])
        else:
            stack.extend(ast.iter_child_nodes(node))


def _unit_of(tree: _Tree, node: ast.AST) -> Unit | None:
    """The unit whose running runs ``node``; None inside a main block (never on import)."""
    child = node
    while (parent := tree.parents.get(child)) is not None:
        if (isinstance(parent, _FUNC) and child in parent.body) or (
            isinstance(parent, ast.Lambda) and child is parent.body
        ):
            return parent
        if _is_main(parent) and child in parent.body:
            return None
        child = parent
    return tree.module


def _class_of(tree: _Tree, unit: Unit) -> ast.ClassDef | None:
    """The class a method (or a def nested in one) belongs to, for ``self.f()``."""
    node = tree.parents.get(unit)
    while node is not None and not isinstance(node, ast.ClassDef):
        node = tree.parents.get(node)
    return node if isinstance(node, ast.ClassDef) else None


def _visible(tree: _Tree, unit: Unit, name: str) -> list[ast.AST]:
    """The defs and classes ``name`` may mean in ``unit``: its own, its enclosing defs', the
    module's (a class body's names are not visible from its methods, as in Python)."""
    found: list[ast.AST] = []
    node: ast.AST | None = unit
    while node is not None:
        if not isinstance(node, ast.ClassDef):
            found += tree.names.get(node, {}).get(name, [])
        node = tree.parents.get(node)
    return found


def _methods(tree: _Tree, cls: ast.ClassDef, name: str, seen: set[ast.ClassDef] | None = None) -> list[ast.AST]:
    """``cls``'s method ``name``, else the first of its same-file bases that has one."""
    seen = seen if seen is not None else set()
    seen.add(cls)
    own: list[ast.AST] = [d for d in tree.names.get(cls, {}).get(name, []) if isinstance(d, _FUNC)]
    if own:
        return own
    for base in cls.bases:
        for parent in tree.classes.get(base.id, []) if isinstance(base, ast.Name) else []:
            if parent not in seen and (found := _methods(tree, parent, name, seen)):
                return found
    return []


def _callees(tree: _Tree, unit: Unit, func: ast.expr) -> list[ast.AST]:
    """The defs of this file that calling ``func`` from ``unit`` runs."""
    if isinstance(func, ast.Name):  # a function, or a class: its constructors
        found = _visible(tree, unit, func.id)
        news = [m for c in found if isinstance(c, ast.ClassDef) for n in _CONSTRUCTORS for m in _methods(tree, c, n)]
        return [d for d in found if not isinstance(d, ast.ClassDef)] + news
    if not isinstance(func, ast.Attribute):
        return []
    value, owners = func.value, []
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super":
        here = _class_of(tree, unit)
        bases = here.bases if here is not None else []
        owners = [c for b in bases if isinstance(b, ast.Name) for c in tree.classes.get(b.id, [])]
    elif isinstance(value, ast.Call):  # C().f()
        value = value.func
    if isinstance(value, ast.Name) and value.id in ("self", "cls"):
        owners = [c for c in [_class_of(tree, unit)] if c is not None]
    elif isinstance(value, ast.Name):
        owners = [c for c in _visible(tree, unit, value.id) if isinstance(c, ast.ClassDef)]
    return [m for c in owners for m in _methods(tree, c, func.attr)]


# scan.py asks about one file's matches one after the other: one tree is enough, and a tree of a
# large file (its parents and line tables) is ~150 MB per MB of source, not to be kept around
@functools.lru_cache(maxsize=1)
def _tree(text: str) -> _Tree | None:
    try:
        bom = text.startswith("\ufeff")  # decoded as utf-8, not utf-8-sig: ast rejects it
        with warnings.catch_warnings():  # the vetted file's own SyntaxWarnings are not ours to print
            warnings.simplefilter("ignore")  # (and under -W error they would become a SyntaxError)
            module = ast.parse(text[bom:])
        return _read(module, text, int(bom))
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # ValueError: null bytes, surrogates
        return None  # RecursionError: nesting too deep to parse, or a base-class chain too long


def _read(module: ast.Module, text: str, bom: int) -> _Tree:
    """The parents, the names each scope binds, and the units that run on import."""
    tree = _Tree(module, [bom, *(m.end() for m in _NEWLINE.finditer(text))])
    for node in ast.walk(module):
        for child in ast.iter_child_nodes(node):
            tree.parents[child] = node
        if isinstance(node, ast.Call):
            for line in range(node.func.lineno, (node.func.end_lineno or node.func.lineno) + 1):
                tree.calls.setdefault(line, []).append(node)
        elif isinstance(node, ast.stmt):
            for line in range(node.lineno, (node.end_lineno or node.lineno) + 1):
                tree.stmts.setdefault(line, []).append(node)
    for node in ast.walk(module):
        if isinstance(node, _DEFINES):  # bound in the nearest enclosing scope
            scope = tree.parents[node]
            while not isinstance(scope, _SCOPE):
                scope = tree.parents[scope]
            tree.names.setdefault(scope, {}).setdefault(node.name, []).append(node)
            if isinstance(node, ast.ClassDef):
                tree.classes.setdefault(node.name, []).append(node)
    todo: list[Unit] = [module]
    tree.reached.add(module)
    while todo:  # the fixed point: every unit a reached unit calls is reached
        unit = todo.pop()
        for node in _own_nodes(unit):
            funcs = [node.func] if isinstance(node, ast.Call) else []
            if isinstance(node, _DEFINES):  # @f without arguments calls f
                funcs += [d for d in node.decorator_list if not isinstance(d, ast.Call)]
            for callee in (c for f in funcs for c in _callees(tree, unit, f)):
                if callee not in tree.reached:
                    tree.reached.add(callee)
                    todo.append(callee)
    return tree


def _where(tree: _Tree, text: str, pos: int) -> tuple[int, int]:
    """``pos`` as ast's (lineno, col_offset): the column counts UTF-8 bytes, not characters."""
    index = bisect.bisect_right(tree.line_starts, pos) - 1
    start = tree.line_starts[index]
    return index + 1, len(text[start:pos].encode("utf-8", "surrogatepass"))


def _covers(node: ast.expr | ast.stmt, at: tuple[int, int]) -> bool:
    return (node.lineno, node.col_offset) <= at < (node.end_lineno or 0, node.end_col_offset or 0)


def _innermost(node: ast.expr | ast.stmt) -> tuple[int, int, int, int]:
    """Of nodes that all cover one position, the innermost sorts last: the latest start, then the
    earliest end (``load(...).cuda()``: both calls start at ``load``)."""
    return node.lineno, node.col_offset, -(node.end_lineno or 0), -(node.end_col_offset or 0)


def on_import_path(text: str, pos: int) -> bool:
    """Whether the ``load(`` call at ``pos`` runs when the module is imported."""
    tree = _tree(text)
    if tree is None:
        return jit_text.on_import_path(text, pos)
    at = _where(tree, text, pos)
    # the innermost call whose callee (``load``, ``cpp_extension.load``) covers pos: an argument
    # of another call, such as a string, is not that call
    calls = [n for n in tree.calls.get(at[0], []) if _covers(n.func, at)]
    call = max(calls, key=_innermost, default=None)
    return call is not None and _unit_of(tree, call) in tree.reached


def _raises(body: list[ast.stmt]) -> bool:
    """Whether a ``raise`` is in ``body`` at any depth, except in a nested def (runs later)."""
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Raise):
            return True
        if not isinstance(node, _FUNC):
            stack.extend(ast.iter_child_nodes(node))
    return False


def has_fallback(text: str, pos: int) -> bool:
    """Whether the statement at ``pos`` sits in a ``try`` whose ``except`` carries on without
    raising (transformers' ``try: CDLL("libcudart.so") except OSError: return 0, 0``): a probe
    that degrades, not a binding that fails without the library."""
    tree = _tree(text)
    if tree is None:
        return jit_text.has_fallback(text, pos)
    at = _where(tree, text, pos)
    stmts = [n for n in tree.stmts.get(at[0], []) if _covers(n, at)]
    if not stmts:  # a comment between statements
        return False
    return _guarded(tree, max(stmts, key=_innermost))


def _guarded(tree: _Tree, stmt: ast.AST) -> bool:
    """Whether ``stmt`` sits in a ``try`` (innermost, same function) whose handlers all carry on."""
    child = stmt
    while (parent := tree.parents.get(child)) is not None and not isinstance(parent, _FUNC_OR_LAMBDA):
        guard = cast(ast.Try, parent)  # a TryStar (3.11) has the same fields
        if isinstance(parent, _TRY) and child in guard.body:
            return bool(guard.handlers) and not any(_raises(h.body) for h in guard.handlers)
        child = parent  # an except/else/finally block is not guarded by its own try: go out
    return False


def import_runs_on_import(text: str, line: int) -> bool:
    """Whether the ``import``/``from`` statement starting on ``line`` runs when its module is
    imported, with no fallback around it: then the module cannot be imported without that
    library. In a ``def`` the import path does not call, under ``if __name__ == "__main__":``, or
    in a ``try`` that carries on, it is an opt-in. A file that does not parse: the milder reading."""
    tree = _tree(text)
    if tree is None:
        return False
    imports = [n for n in tree.stmts.get(line, []) if isinstance(n, (ast.Import, ast.ImportFrom)) and n.lineno == line]
    return any(_unit_of(tree, n) in tree.reached and not _guarded(tree, n) for n in imports)


#: where a statement runs, as :func:`reach_at` says it
Reach = Literal["import", "fallback", "opt-in", "main", "unknown"]


def reach_at(text: str, pos: int) -> Reach:
    """Whether the statement at ``pos`` runs when its module is imported: ``import`` (it runs,
    nothing catches its failure), ``fallback`` (it runs inside a ``try`` whose ``except``
    carries on), ``opt-in`` (in a function the import path does not call), ``main`` (under
    ``if __name__ == "__main__":`` or ``if TYPE_CHECKING:``), ``unknown`` (a comment between
    statements, or a file ``ast`` cannot parse)."""
    tree = _tree(text)
    if tree is None:
        return "unknown"
    at = _where(tree, text, pos)
    stmts = [n for n in tree.stmts.get(at[0], []) if _covers(n, at)]
    if not stmts:
        return "unknown"
    stmt = max(stmts, key=_innermost)
    unit = _unit_of(tree, stmt)
    if unit is None:
        return "main"
    if unit not in tree.reached:
        return "opt-in"
    return "fallback" if _guarded(tree, stmt) else "import"


def unit_calls(text: str, pos: int, names: frozenset[str]) -> bool:
    """Whether the code unit (module or ``def``) holding the statement at ``pos`` itself calls one
    of ``names`` (``CDLL``, ``ctypes.cdll.LoadLibrary``: the last name of the callee). A library
    name in a helper that only returns names (onnxruntime's ``_get_nvidia_dll_paths``) is no load.
    A file that does not parse: True, the stricter reading."""
    tree = _tree(text)
    if tree is None:
        return True
    at = _where(tree, text, pos)
    stmts = [n for n in tree.stmts.get(at[0], []) if _covers(n, at)]
    unit = _unit_of(tree, max(stmts, key=_innermost)) if stmts else None
    if unit is None:
        return True
    for node in _own_nodes(unit):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name in names:
                return True
    return False
