"""The numbers other plugins take that a run of the suites depends on, checked as numbers.

pytest-timeout's seconds (a ``timeout`` marker, ``--timeout``, ``PYTEST_TIMEOUT``, ini ``timeout``):
the report tells a hang from a crash by them, so :func:`timeout_setting` reads them with
pytest-timeout's own precedence, the one place the plugin does. The session's value is checked
as a number (pytest-timeout takes ``nan`` and ``-5`` as "no timeout", the hang protection of a run
silently off, and fails on ``inf`` with an INTERNALERROR); a bad one is a usage error naming its
source, as for the plugin's own options. Other plugins' options (``-n``, ``--maxfail``) are
theirs to parse: the plugin does not read pytest's command line again.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
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


@dataclass(frozen=True)
class TimeoutSetting:
    """pytest-timeout's timeout for a test or the session: the value as given and where from."""

    value: Any  # None: no timeout set anywhere
    source: str  # "marker", "--timeout", "PYTEST_TIMEOUT", "timeout in tox.ini", "default"

    @property
    def seconds(self) -> float | None:
        """The seconds, None for no timeout (0, unset) or a value pytest-timeout reports itself."""
        try:
            seconds = float(self.value) if self.value is not None else 0.0
        except (TypeError, ValueError):
            return None
        return seconds if math.isfinite(seconds) and seconds > 0 else None


def _marker_value(marker: pytest.Mark) -> Any:
    """``@pytest.mark.timeout(S)`` / ``timeout(timeout=S)``: None when the marker sets no seconds
    (``timeout(method="thread")``), so the session's value applies, as in pytest-timeout."""
    return marker.args[0] if marker.args else marker.kwargs.get("timeout")


def timeout_setting(config: pytest.Config, marker: pytest.Mark | None = None) -> TimeoutSetting:
    """pytest-timeout's timeout with its own precedence: the test's ``timeout`` marker, then
    ``--timeout``, the ``PYTEST_TIMEOUT`` variable, the ini ``timeout``, else none (the default).
    Without pytest-timeout loaded there is no timeout (its option, variable and ini mean nothing)."""
    if marker is not None and _marker_value(marker) is not None:
        return TimeoutSetting(_marker_value(marker), "marker")
    try:
        ini = _timeout_ini(config)
    except ValueError:  # no such ini value: pytest-timeout is not loaded
        return TimeoutSetting(None, "default")
    where = config.inipath.name if config.inipath else "ini file"
    candidates = (
        (config.getoption("timeout", None), "--timeout"),
        (os.environ.get("PYTEST_TIMEOUT"), "PYTEST_TIMEOUT"),
        (ini or None, f"timeout in {where}"),  # "" (unset) as pytest-timeout reads it
    )
    return next((TimeoutSetting(v, s) for v, s in candidates if v is not None), TimeoutSetting(None, "default"))


def _timeout_ini(config: pytest.Config) -> Any:
    """pytest-timeout's ini ``timeout`` as pytest gives it: its value is pytest's and pytest-timeout's
    to read, so a TOML value pytest refuses is pytest's one-line message, not read again here."""
    try:
        return config.getini("timeout")
    except TypeError as exc:  # pytest 9.0 and 9.1 refuse a TOML number with a TypeError (9.2: UsageError)
        raise pytest.UsageError(str(exc)) from None


def check_timeout(config: pytest.Config) -> None:
    """Validate pytest-timeout's session timeout, when it is loaded: the report tells a hang from
    a crash by it. Its text is pytest-timeout's to parse (``--timeout`` arrives as a float)."""
    setting = timeout_setting(config)
    if setting.value is None:
        return
    try:
        parse_seconds(setting.value)
    except ValueError as exc:
        raise pytest.UsageError(f"{setting.source}={setting.value!r}: {exc}") from None
