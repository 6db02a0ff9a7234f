"""HSA_OVERRIDE_GFX_VERSION as the runtime reads it: the value's syntax and which variable applies
to which KFD node.

libhsakmt (``libhsakmt/src/topology.c``) reads, for each GPU node, ``HSA_OVERRIDE_GFX_VERSION_<node>``
first and else the global ``HSA_OVERRIDE_GFX_VERSION`` (node ids are KFD topology ids, CPU nodes
included: on a one-socket box the first GPU is node 1), then
``sscanf(value, "%u.%u.%u%c", ...) != 3 || major > 63 || minor > 255 || step > 255`` makes the
value invalid ("HSA_OVERRIDE_GFX_VERSION %s is invalid") and the topology fails to load. The
functions here follow that to the letter, so a value is reported as the runtime treats it.
Stdlib only, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

GLOBAL = "HSA_OVERRIDE_GFX_VERSION"
#: the per-node form: HSA_OVERRIDE_GFX_VERSION_1 (a KFD node id, decimal)
PER_NODE_RE = re.compile(r"^HSA_OVERRIDE_GFX_VERSION_([0-9]+)$")
#: C isspace(): what scanf's %u skips before a number
_C_SPACE = " \t\n\v\f\r"
#: libhsakmt's limits on the three fields (topology.c: major > 63 || minor > 255 || step > 255)
_LIMITS = (63, 255, 255)


def per_node_name(node: int) -> str:
    return f"{GLOBAL}_{node}"


def applying(variables: Mapping[str, str | None], node: int) -> tuple[str, str] | None:
    """(variable name, value) of the override the runtime applies to KFD node ``node``: the
    per-node one when set, else the global one; None when neither is set."""
    for name in (per_node_name(node), GLOBAL):
        value = variables.get(name)
        if value is not None:
            return name, value
    return None


def set_overrides(variables: Mapping[str, str | None]) -> dict[str, str]:
    """Every override variable that is set, global and per node: {name: value}."""
    return {
        name: value
        for name, value in variables.items()
        if value is not None and (name == GLOBAL or PER_NODE_RE.match(name))
    }


def _scan_unsigned(text: str, pos: int) -> tuple[int, int] | None:
    """C ``%u`` at ``pos``: skip white space, an optional sign, then decimal digits (at least one).

    Returns (value modulo 2**32 as scanf stores it, the position after it); None when no number.
    """
    while pos < len(text) and text[pos] in _C_SPACE:
        pos += 1
    sign = 1
    if pos < len(text) and text[pos] in "+-":
        sign = -1 if text[pos] == "-" else 1
        pos += 1
    start = pos
    while pos < len(text) and text[pos] in "0123456789":
        pos += 1
    if pos == start:
        return None
    return (sign * int(text[start:pos])) % 2**32, pos


def scan_override(value: str, variable: str = GLOBAL) -> tuple[int, int, int]:
    """(major, minor, stepping) of an HSA_OVERRIDE_GFX_VERSION value, read as libhsakmt reads it.

    ``sscanf(value, "%u.%u.%u%c")`` must return 3: white space before a number is skipped, but
    anything after the stepping (a trailing space, the newline or CR of a CRLF ``.env`` file)
    fills the ``%c`` and the runtime rejects the value; then major <= 63, minor and stepping <= 255.
    Raises ValueError with the reason, naming the value as written.
    """
    shown = f"{variable}={value!r}"
    fields: list[int] = []
    pos = 0
    for index in range(3):
        scanned = _scan_unsigned(value, pos)
        if scanned is None:
            raise ValueError(f"{shown} is not major.minor.stepping (three decimal numbers)")
        number, pos = scanned
        fields.append(number)
        if index < 2:
            if pos >= len(value) or value[pos] != ".":
                raise ValueError(f"{shown} is not major.minor.stepping (three decimal numbers)")
            pos += 1
    if pos < len(value):
        raise ValueError(
            f"{shown} has {value[pos:]!r} after the stepping: the runtime reads '%u.%u.%u%c' and rejects "
            "anything after the third number (a trailing space, or the CR/LF of a .env file)"
        )
    if any(f > limit for f, limit in zip(fields, _LIMITS, strict=True)):
        raise ValueError(f"{shown} is out of range (the runtime allows major <= 63, minor and stepping <= 255)")
    return fields[0], fields[1], fields[2]
