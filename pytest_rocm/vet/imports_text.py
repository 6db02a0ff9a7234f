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
- only the lines that can matter are looked at (found by one regular expression: imports, the
  compound statements that enclose them, ``raise``): a line-by-line loop over torch's 46 MB of
  Python cost 27 s;
- ``importlib.import_module("pkg.cuda")`` (or ``__import__``) with a literal name counts as an
  import wherever it is, in a ``def`` too: a package that picks a backend module at run time
  names what it may load; a name built at run time (an f-string) is not known;
- not followed: imports in a function module-level code calls.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

_IMPORT = re.compile(r"(?:import|from)\s")
#: a module named by a literal at run time: ``importlib.import_module("pkg.cuda")``
_DYNAMIC = re.compile(r"\b(?:import_module|__import__)\s*\(\s*[\"'](\.*)([\w.]+)[\"']")
_BLOCK = re.compile(r"(async\s+def|def|class|try|except|finally|else|elif|if|with|for|while|match|case)\b")
_NEVER_RUNS = re.compile(
    r"if\s+(?:__name__\s*==\s*[\"']__main__[\"']|[\"']__main__[\"']\s*==\s*__name__|(?:typing\.)?TYPE_CHECKING\s*:)"
)
#: words of a module that loads its attributes lazily (substring tests: a regular expression of
#: alternatives starting with \b cost 11 s over torch's files)
_LAZY_WORDS = ("_LazyModule", "lazy_loader", "lazy.attach", "\ndef __getattr__(")
_TRIPLE = re.compile(r"\"\"\"|'''")


@dataclass
class _Block:
    indent: int
    kind: str  # "def", "never" (main / TYPE_CHECKING), "try", "except", "other"
    try_id: int = -1  # for a try and its handlers: which try


#: the lines that matter: imports, the compound statements that enclose them, raises in handlers
_CANDIDATE = re.compile(
    r"^([ \t]*)((?:import|from|async[ \t]+def|def|class|try|except|finally|else|elif|if|with|for|while|match|"
    r"case|raise)\b.*)$",
    re.MULTILINE,
)


def _string_spans(text: str) -> list[tuple[int, int]]:
    """Where triple-quoted strings are (paired in order): lines inside them are not statements."""
    marks = [m.start() for m in _TRIPLE.finditer(text)] if ('"""' in text or "'''" in text) else []
    return [(marks[i], marks[i + 1]) for i in range(0, len(marks) - 1, 2)]


def _statements(text: str) -> list[tuple[int, str]]:
    """(indent, statement) of each line that can matter, outside triple-quoted strings; an
    import's parenthesised names across lines joined to it. Only these lines are looked at (the
    file is not read line by line): an import's enclosing blocks all open on such lines."""
    spans = _string_spans(text)
    starts = [a for a, _ in spans]
    out: list[tuple[int, str]] = []
    for m in _CANDIDATE.finditer(text):
        i = bisect.bisect_right(starts, m.start()) - 1
        if i >= 0 and spans[i][0] < m.start() < spans[i][1]:
            continue
        statement = m.group(2)
        if statement.startswith(("import", "from")) and "(" in statement and ")" not in statement:
            close = text.find(")", m.end())
            statement = " ".join(text[m.start(2) : close + 1 if close >= 0 else m.end()].split())
        elif "#" in statement and "'" not in statement and '"' not in statement:
            statement = statement.split("#", 1)[0].rstrip()
        out.append((len(m.group(1).expandtabs()), statement))
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
        block = _BLOCK.match(statement)
        if block is None:  # a one-line "if x: y" opens a block too: harmless, the next line closes it
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
    for dots, name in _DYNAMIC.findall(text):  # anywhere, a def too: it names what it may load
        target = _absolute(module, is_package, len(dots), name)
        if target is not None:
            pending.append((target, []))
    edges = [(t, any(g not in raising for g in guards)) for t, guards in pending]
    return edges, any(word in text for word in _LAZY_WORDS) or text.startswith("def __getattr__(")
