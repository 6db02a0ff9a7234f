"""The line-based reading of :mod:`pytest_rocm.vet.reach`'s two questions, for a file :mod:`ast`
cannot read (a Python 2 file in an old sdist, a syntax error, null bytes, nesting too deep).

It judges by indentation, so it errs (a method of a class instantiated at module level reads as
called; a string that names the function reads as a call), but a broken file still gets an answer,
and nothing here raises. ``jit`` asks here only when ``ast.parse`` fails.
"""

from __future__ import annotations

import re

_DEF = re.compile(r"^([ \t]*)(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)", re.MULTILINE)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def enclosing_function(text: str, pos: int) -> str | None:
    """The name of the outermost ``def``/``class`` that contains ``pos``; None at module level."""
    start, end = text.rfind("\n", 0, pos) + 1, text.find("\n", pos)
    depth = _indent(text[start : end if end >= 0 else len(text)])
    outermost: str | None = None
    for previous in reversed(text[:start].splitlines()):
        if not previous.strip() or previous.lstrip().startswith("#"):
            continue
        here = _indent(previous)
        if here < depth:
            m = _DEF.match(previous)
            if m is not None:
                outermost = m.group(2)
            depth = here
        if depth == 0:
            break
    return outermost


def _called_at_module_level(text: str, name: str) -> bool:
    call = re.compile(rf"(?<![\w.]){re.escape(name)}\s*\(")
    for line in text.splitlines():
        if line[:1] in (" ", "\t", "#") or _DEF.match(line) or line.startswith("@"):
            continue  # indented code is inside a block; module-level blocks are checked below
        if call.search(line):
            return True
    # a call inside a module-level if/try/with block: indented, but not inside any def
    for m in call.finditer(text):
        start = text.rfind("\n", 0, m.start()) + 1
        if _DEF.match(text, start):  # the def line itself
            continue
        if enclosing_function(text, m.start()) is None:
            return True
    return False


def _try_above(lines: list[str], index: int) -> int | None:
    """The index of the nearest ``try:`` line around ``lines[index]`` in the same function."""
    depth = _indent(lines[index])
    for i in range(index - 1, -1, -1):
        line = lines[i]
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        here = _indent(line)
        if here < depth:
            if line.strip().rstrip(":").strip() == "try":
                return i
            if _DEF.match(line):
                return None
            depth = here
    return None


def has_fallback(text: str, pos: int) -> bool:
    """Whether the line at ``pos`` is in a ``try:`` block whose ``except`` blocks hold no ``raise``."""
    lines = text.split("\n")  # not splitlines(): its other separators would shift the index
    index = text.count("\n", 0, pos)
    opened = _try_above(lines, index)
    if opened is None:
        return False
    base = _indent(lines[opened])
    handlers: list[list[str]] = []
    for line in lines[index + 1 :]:
        if not line.strip():
            continue
        here = _indent(line)
        if here < base or (here == base and not line.strip().startswith(("except", "else", "finally"))):
            break
        if here == base and line.strip().startswith("except"):
            handlers.append([])
        elif here > base and handlers:
            handlers[-1].append(line)
    return bool(handlers) and all(not any(re.match(r"\s*raise\b", ln) for ln in body) for body in handlers)


def on_import_path(text: str, pos: int) -> bool:
    """Whether the call at ``pos`` is at module level or in a function module-level code calls."""
    function = enclosing_function(text, pos)
    return function is None or _called_at_module_level(text, function)
