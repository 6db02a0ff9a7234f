"""Is a ``torch.utils.cpp_extension.load`` of CUDA sources on the package's import path, or
behind an opt-in? Decided from the text of the Python file, never by running it.

On the import path: the call is at module level (possibly inside a module-level ``if``/``try``),
or inside a function that module-level code of the same file calls (``_C = _build()``). A
module-level load runs when its module is imported, so the package's ops depend on the kernel.
Behind an opt-in: the call is inside a function that nothing at module level calls (peft's BOFT
kernel, built the first time the feature is used, with a fallback when it cannot be).
"""

from __future__ import annotations

import re

_DEF = re.compile(r"^([ \t]*)(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)", re.MULTILINE)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def enclosing_function(text: str, pos: int) -> str | None:
    """The name of the outermost ``def``/``class`` that contains ``pos``; None at module level."""
    start = text.rfind("\n", 0, pos) + 1
    line = text[start : text.find("\n", pos) if text.find("\n", pos) >= 0 else len(text)]
    depth = _indent(line)
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


def _block_of(lines: list[str], index: int, keyword: str) -> int | None:
    """The line index of the nearest enclosing ``keyword`` block (``try``) around ``lines[index]``,
    within the same function; None when there is none."""
    depth = _indent(lines[index])
    for i in range(index - 1, -1, -1):
        line = lines[i]
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        here = _indent(line)
        if here < depth:
            stripped = line.strip()
            if stripped.startswith(keyword) and stripped.rstrip(":").strip() == keyword:
                return i
            if _DEF.match(line):
                return None
            depth = here
    return None


def has_fallback(text: str, pos: int) -> bool:
    """Whether the statement at ``pos`` sits in a ``try`` whose ``except`` carries on without
    raising (transformers' ``try: CDLL("libcudart.so") except OSError: return 0, 0``): a probe
    that degrades, not a binding that fails without the library."""
    lines = text.split("\n")  # not splitlines(): its other separators would shift the index
    index = text.count("\n", 0, pos)
    opened = _block_of(lines, index, "try")
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
    """Whether the ``load(`` call at ``pos`` runs when the module is imported."""
    function = enclosing_function(text, pos)
    return function is None or _called_at_module_level(text, function)
