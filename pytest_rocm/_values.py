"""What makes a value given by a user acceptable, written once for both front ends: the pytest
plugin's options (``plugin/options``, ``plugin/numbers``: a ValueError becomes a usage error that
names the option and its source) and the ``rocm-compat`` commands (``cli/argtypes``: argparse's
one-line usage error).

Each check returns the problem in words (or None), so each front end words the failure its own way
around the same text. Stdlib only: every layer may import this module.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

#: a whole number in ASCII digits (``int('٣')`` is 3 in Python: not a number a user typed)
INT_RE = re.compile(r"[+-]?[0-9]+", re.ASCII)
#: a decimal number in ASCII digits (``float`` also takes ``nan``, ``inf`` and ``'٣'``)
FLOAT_RE = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?", re.ASCII)


def path_problem(text: str) -> str | None:
    """Why ``text`` names no file: empty (``''`` would silently mean the current folder) or a NUL."""
    if not text.strip():
        return "an empty path names no file"
    if "\x00" in text:
        return "a path cannot contain a NUL character"
    return None


def label_problem(text: str) -> str | None:
    """Why ``text`` is no report label: empty, or a control character (a newline breaks tables)."""
    if not text.strip():
        return "an empty label names nothing"
    if any(unicodedata.category(c).startswith("C") for c in text):
        return "a label cannot contain control characters (newlines, tabs...)"
    return None


#: a size in bytes as a user writes it (``rocm_min_vram``, ``--rocm-workload-max-memory``)
_UNITS = {
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}
_SIZE_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*)\s*$")


def parse_size(value: Any) -> int:
    """``"16GiB"`` / ``"512 MiB"`` / ``"16GB"`` (decimal) / ``17179869184`` -> bytes."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"bad size {value!r}: give bytes (int) or a string like '16GiB'")
    if isinstance(value, int):
        if value <= 0:
            raise ValueError(f"bad size {value!r}: must be positive")
        return value
    m = _SIZE_RE.match(value)
    unit = m.group(2).lower() if m else ""
    if not m or (unit not in _UNITS and unit != ""):
        raise ValueError(f"bad size {value!r}: use bytes or a number with one of B, KB, MB, GB, TB, KiB, MiB, GiB, TiB")
    size = int(float(m.group(1)) * _UNITS.get(unit, 1))
    if size <= 0:
        raise ValueError(f"bad size {value!r}: must be positive")
    return size
