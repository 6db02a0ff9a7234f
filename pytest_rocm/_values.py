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
