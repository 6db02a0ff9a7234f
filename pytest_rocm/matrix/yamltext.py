"""A small YAML writer for the manifests ``--emit k8s`` prints (block style, every string quoted
as JSON, which YAML reads as a double-quoted scalar; scripts as literal blocks). No dependency:
the command line must not need PyYAML. Stdlib only."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_rocm.matrix.grammar import hidden_character
from pytest_rocm.report.escape import terminal_line

_PLAIN_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_./-]*")
#: words YAML 1.1 readers take for booleans or null: quoted even as keys
_SPECIAL = {"y", "n", "yes", "no", "true", "false", "on", "off", "null"}


def _key(key: object) -> str:
    text = str(key)
    return text if _PLAIN_KEY.fullmatch(text) and text.lower() not in _SPECIAL else json.dumps(text)


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    return json.dumps(str(value))


def _literal_ok(text: str) -> bool:
    """A script reads best as a literal block; used only where YAML keeps it byte for byte (one
    final newline, no trailing blanks or tabs, a first line that does not start indented) and
    where every character is one YAML shows as itself: a CR, NEL or U+2028 would be a line break
    to a YAML reader (the next line, unindented, a key of the document), a control character is
    not allowed in a block at all. Anything else is a double-quoted scalar, escaped as JSON."""
    if not text.endswith("\n") or text.endswith("\n\n") or text.startswith(" "):
        return False
    if any(hidden_character(line) for line in text[:-1].split("\n")):
        return False
    return all(line == line.rstrip() for line in text[:-1].split("\n"))


def _lines(value: Any, indent: int) -> list[str]:
    pad = " " * indent
    out: list[str] = []
    if isinstance(value, Mapping):
        for key, item in value.items():
            name = _key(key)
            if isinstance(item, (Mapping, list, tuple)) and item:
                out.append(f"{pad}{name}:")
                out += _lines(item, indent + 2)
            elif isinstance(item, str) and "\n" in item and _literal_ok(item):
                out.append(f"{pad}{name}: |")
                out += [f"{pad}  {line}" if line else "" for line in item[:-1].split("\n")]
            else:
                out.append(
                    f"{pad}{name}: {_empty(item) if isinstance(item, (Mapping, list, tuple)) else _scalar(item)}"
                )
    elif isinstance(value, Sequence) and not isinstance(value, str):
        for item in value:
            if isinstance(item, (Mapping, list, tuple)) and item:
                nested = _lines(item, indent + 2)
                out.append(f"{pad}- {nested[0].lstrip()}")
                out += nested[1:]
            else:
                out.append(f"{pad}- {_empty(item) if isinstance(item, (Mapping, list, tuple)) else _scalar(item)}")
    return out


def _empty(value: Any) -> str:
    return "{}" if isinstance(value, Mapping) else "[]"


def dump_all(documents: Sequence[Mapping[str, Any]], header: Sequence[str] = ()) -> str:
    """Several documents, ``---`` between them, ``# header`` lines first."""
    parts = ["\n".join(f"# {terminal_line(line)}" if line else "#" for line in header)] if header else []
    parts += ["---\n" + "\n".join(_lines(doc, 0)) for doc in documents]
    return "\n".join(parts) + "\n"
