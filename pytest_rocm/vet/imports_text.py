"""The imports a Python file runs when it is imported, read from its lines: the edges of
:mod:`modules`' import graph.

Every Python file of a target is read this way, so it must be cheap: parsing torch's 2,300 files
with :mod:`ast` takes about 30 s on a loaded 2-core machine, reading their import lines well
under one. (:mod:`reach` keeps the exact reading for the lines a rule matched.) The reading:

- an ``import``/``from`` statement (parenthesised names across lines included) runs on import
  unless a ``def`` encloses it, or ``if __name__ == "__main__":`` / ``if TYPE_CHECKING:``;
  class bodies and ``if``/``with``/``for`` blocks run;
- it is *guarded* when it sits in the body of a ``try`` none of whose ``except`` blocks
  contains a ``raise`` (it carries on without the module);
- lines inside triple-quoted strings are not statements;
- ``importlib.import_module("pkg.cuda")`` (or ``__import__``) with a literal name counts as an
  import wherever it is, in a ``def`` too: a package that picks a backend module at run time
  names what it may load; a name built at run time (an f-string) is not known;
- not followed: imports in a function module-level code calls.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_IMPORT = re.compile(r"(?:import|from)\s")
#: a module named by a literal at run time: ``importlib.import_module("pkg.cuda")``
_DYNAMIC = re.compile(r"\b(?:import_module|__import__)\s*\(\s*[\"'](\.*)([\w.]+)[\"']")
_BLOCK = re.compile(r"(async\s+def|def|class|try|except|finally|else|elif|if|with|for|while|match|case)\b")
_NEVER_RUNS = re.compile(
    r"if\s+(?:__name__\s*==\s*[\"']__main__[\"']|[\"']__main__[\"']\s*==\s*__name__|(?:typing\.)?TYPE_CHECKING\s*:)"
)
_LAZY = re.compile(r"\b_LazyModule\b|\blazy_loader\b|\blazy\.attach\b|^def __getattr__\s*\(", re.MULTILINE)
_TRIPLE = re.compile(r"\"\"\"|'''")


@dataclass
class _Block:
    indent: int
    kind: str  # "def", "never" (main / TYPE_CHECKING), "try", "except", "other"
    try_id: int = -1  # for a try and its handlers: which try


def _statements(text: str) -> list[tuple[int, str]]:
    """(indent, statement) of each logical line outside triple-quoted strings; bracketed
    continuation lines joined to their first line."""
    out: list[tuple[int, str]] = []
    in_string: str | None = None
    pending: list[str] = []
    pending_indent = 0
    depth = 0
    for raw in text.splitlines():
        line = raw.split("#", 1)[0] if "#" in raw and "'" not in raw and '"' not in raw else raw
        if in_string is not None:
            if line.count(in_string) % 2:
                in_string = None
            continue
        stripped = line.strip()
        if not stripped:
            continue
        quotes = _TRIPLE.findall(line)
        if quotes and len(quotes) % 2:
            in_string = quotes[-1]
        if depth == 0:
            pending_indent = len(line) - len(line.lstrip())
        pending.append(stripped)
        depth = max(0, depth + stripped.count("(") + stripped.count("[") - stripped.count(")") - stripped.count("]"))
        if depth == 0 and not stripped.endswith("\\"):
            out.append((pending_indent, " ".join(pending)))
            pending = []
    return out


def _absolute(module: str, is_package: bool, level: int, name: str) -> str | None:
    """The module a (relative) ``from`` import names, seen from ``module``."""
    if not level:
        return name or None
    parts = module.split(".") if is_package else module.split(".")[:-1]
    if level - 1 > len(parts):
        return None
    base = parts[: len(parts) - (level - 1)]
    return ".".join([*base, name] if name else base) or None


def _targets(statement: str, module: str, is_package: bool) -> list[str]:
    """The modules one import statement names (``from a import b`` names ``a`` and ``a.b``)."""
    statement = statement.replace("(", " ").replace(")", " ").rstrip(";")
    if statement.startswith("import "):
        return [p.split(" as ")[0].strip() for p in statement[7:].split(",") if p.strip()]
    m = re.match(r"from\s+(\.*)([\w.]*)\s+import\s+(.*)$", statement)
    if m is None:
        return []
    base = _absolute(module, is_package, len(m.group(1)), m.group(2))
    if base is None:
        return []
    names = [p.split(" as ")[0].strip() for p in m.group(3).split(",")]
    return [base] + [f"{base}.{n}" for n in names if n and n != "*" and n.isidentifier()]


def module_imports(text: str, module: str, is_package: bool) -> tuple[list[tuple[str, bool]], bool]:
    """The modules importing ``module`` imports, each with whether a ``try`` that carries on
    guards it, and whether the module loads attributes lazily (``__getattr__``, ``_LazyModule``)."""
    stack: list[_Block] = []
    raising: set[int] = set()  # tries with a handler that raises
    pending: list[tuple[str, list[int]]] = []  # target, the tries whose body holds it
    tries = 0
    last_try: dict[int, int] = {}  # indent -> the latest try there (its handlers follow it)
    for indent, statement in _statements(text):
        while stack and stack[-1].indent >= indent:
            stack.pop()
        handler = next((b for b in reversed(stack) if b.kind == "except"), None)
        if handler is not None and re.match(r"raise\b", statement):
            raising.add(handler.try_id)
        if _IMPORT.match(statement):
            if not any(b.kind in ("def", "never") for b in stack):
                guards = [b.try_id for b in stack if b.kind == "try"]
                pending += [(t, guards) for t in _targets(statement, module, is_package)]
            continue
        for dots, name in _DYNAMIC.findall(statement):  # anywhere, a def too: it names what it loads
            target = _absolute(module, is_package, len(dots), name)
            if target is not None:
                pending.append((target, [b.try_id for b in stack if b.kind == "try"]))
        block = _BLOCK.match(statement)
        if block is None or not statement.endswith(":"):
            continue
        word = block.group(1)
        if word == "try":
            tries += 1
            last_try[indent] = tries
            stack.append(_Block(indent, "try", tries))
        elif word in ("except", "finally"):
            stack.append(_Block(indent, "except", last_try.get(indent, -1)))
        elif word.endswith("def"):
            stack.append(_Block(indent, "def"))
        elif _NEVER_RUNS.match(statement):
            stack.append(_Block(indent, "never"))
        else:
            stack.append(_Block(indent, "other"))
    edges = [(t, any(g not in raising for g in guards)) for t, guards in pending]
    return edges, bool(_LAZY.search(text))
