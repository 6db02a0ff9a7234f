"""The numbers other plugins take that a run of the suites depends on, checked as numbers.

pytest-timeout's seconds (``--timeout``, ``PYTEST_TIMEOUT``, ini ``timeout``): it takes ``nan``
and ``-5`` as "no timeout" (the hang protection of a run silently off), fails on ``inf`` with an
INTERNALERROR, and reads '٣' as 3 (``float``); the report tells a hang from a crash by this value.
pytest's ``--maxfail`` and pytest-xdist's ``-n`` and ``--max-worker-restart`` are parsed with
``int``, which takes other scripts' digits too: their command-line text must be ASCII.
A bad value is a usage error naming its source, as for the plugin's own options.
"""

from __future__ import annotations

import math
import os
from typing import Any

import pytest

from pytest_rocm._values import FLOAT_RE


def parse_seconds(text: Any) -> float:
    """pytest-timeout's seconds: a finite number >= 0 (0 disables it); ValueError otherwise.
    pytest-timeout itself takes ``nan`` and ``-5`` as "no timeout" (a hang protection silently
    off) and fails on ``inf`` with an INTERNALERROR."""
    value = str(text).strip()
    if not FLOAT_RE.fullmatch(value):
        try:
            finite = math.isfinite(float(value))
        except ValueError:
            finite = True
        if not finite:
            raise ValueError("expected a finite number of seconds, 0 (no timeout) to 1e9")
        raise ValueError("expected a number of seconds in ASCII digits (0: no timeout)")
    seconds = float(value)
    if not math.isfinite(seconds) or seconds < 0 or seconds > 10**9:
        raise ValueError("expected a finite number of seconds, 0 (no timeout) to 1e9")
    return seconds


def _command_line_text(config: pytest.Config, flag: str, parsed: Any) -> Any:
    """The text given for ``flag`` on the command line (pytest-timeout parses it with ``float``,
    which takes '٣' for 3.0), else the parsed value."""
    if parsed is None:
        return None
    args = [str(a) for a in config.invocation_params.args]
    text: Any = parsed
    for i, arg in enumerate(args):
        if arg == flag and i + 1 < len(args):
            text = args[i + 1]
        elif arg.startswith(flag + "="):
            text = arg[len(flag) + 1 :]
    return text


#: options whose text must be ASCII (``int`` parses them; '٣' would be taken for 3)
ASCII_NUMBER_FLAGS = ("--maxfail", "-n", "--numprocesses", "--max-worker-restart", "--timeout")


def check_ascii_numbers(config: pytest.Config) -> None:
    """The command line's numeric options of pytest and its plugins: ASCII text only."""
    args = [str(a) for a in config.invocation_params.args]
    for i, arg in enumerate(args):
        for flag in ASCII_NUMBER_FLAGS:
            if arg == flag and i + 1 < len(args):
                text = args[i + 1]
            elif arg.startswith(flag + "=") and flag.startswith("--"):
                text = arg[len(flag) + 1 :]
            else:
                continue
            if not text.isascii():
                raise pytest.UsageError(f"{flag}={text!r}: expected a number in ASCII digits")


def check_timeout(config: pytest.Config) -> None:
    """Validate pytest-timeout's ``--timeout`` / ``PYTEST_TIMEOUT`` / ini ``timeout`` (its own
    precedence), when it is installed: the report tells a hang from a crash by it."""
    from pytest_rocm.plugin.inivalues import ini_file_name, ini_text

    try:
        ini = ini_text(config, "timeout")  # a TOML number there: one line saying to quote it
    except ValueError:  # no such ini value: pytest-timeout is not loaded
        return
    candidates = (  # pytest-timeout's precedence: command line, variable, ini
        (_command_line_text(config, "--timeout", config.getoption("timeout", None)), "--timeout"),
        (os.environ.get("PYTEST_TIMEOUT"), "PYTEST_TIMEOUT"),
        (ini, f"timeout in {ini_file_name(config)}"),
    )
    value, source = next(((v, s) for v, s in candidates if v is not None), (None, ""))
    if value is None:
        return
    try:
        parse_seconds(value)
    except ValueError as exc:
        raise pytest.UsageError(f"{source}={value!r}: {exc}") from None
