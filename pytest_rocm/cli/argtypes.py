"""argparse ``type=`` functions for numbers that must be numbers: ASCII digits only (``int('٣')``
is 3 in Python), finite (``float('nan')`` compares false with everything, so a NaN bound lets
everything through), and within a range. A bad value is argparse's one-line usage error
(``rocm-compat diff: error: argument --floor: -1 is not ≥ 0``), exit status 2.

Every rocm-compat command takes its numeric options through these (``vet`` included).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

from pytest_rocm._values import FLOAT_RE, INT_RE, label_problem, path_problem


def parse_float(text: str) -> float:
    """A finite decimal number in ASCII (``1e-6``, ``0.5``); ValueError naming the text otherwise."""
    if not FLOAT_RE.fullmatch(text):
        raise ValueError(f"{text!r} is not a number (ASCII digits, e.g. 0.5 or 1e-6)")
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text!r} is not a finite number")
    return value


def parse_int(text: str) -> int:
    """A whole number in ASCII digits; ValueError naming the text otherwise."""
    if not INT_RE.fullmatch(text):
        raise ValueError(f"{text!r} is not a whole number (ASCII digits)")
    return int(text)


def _bounded(parse: Callable[[str], float], low: float, inclusive: bool, what: str) -> Callable[[str], float]:
    def convert(text: str) -> float:
        try:
            value = parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        if value < low or (value == low and not inclusive):
            bound = f"at least {low:g}" if inclusive else f"greater than {low:g}"
            raise argparse.ArgumentTypeError(f"{text!r}: {what} must be {bound}")
        return value

    return convert


def non_negative_float(what: str = "the value") -> Callable[[str], float]:
    """``type=`` for a finite float ≥ 0 (``--floor``)."""
    return _bounded(parse_float, 0.0, True, what)


def positive_float(what: str = "the value") -> Callable[[str], float]:
    """``type=`` for a finite float > 0 (``--factor``, ``--timeout``, ``--suite-timeout``)."""
    return _bounded(parse_float, 0.0, False, what)


def non_negative_int(what: str = "the value") -> Callable[[str], int]:
    """``type=`` for a whole number ≥ 0 (``--show``)."""
    convert = _bounded(parse_int, 0, True, what)
    return lambda text: int(convert(text))


def positive_int(what: str = "the value") -> Callable[[str], int]:
    """``type=`` for a whole number ≥ 1 (``--max-rows``)."""
    convert = _bounded(parse_int, 1, True, what)
    return lambda text: int(convert(text))


def path_text(text: str) -> str:
    """``type=`` for a path: not empty (``''`` would silently mean the current folder), no NUL."""
    problem = path_problem(text)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem if not text.strip() else f"{text!r}: {problem}")
    return text


def label_text(text: str) -> str:
    """``type=`` for a report label: not empty, no control characters (a newline breaks tables)."""
    problem = label_problem(text)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem if not text.strip() else f"{text!r}: {problem}")
    return text
