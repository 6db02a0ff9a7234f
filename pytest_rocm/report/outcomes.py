"""The outcomes of the compatibility report: their names, how one test's phase reports map to
one (``outcome_of``), how the table groups them (``GOOD``, ``BAD``, ``SEVERITY``, ``SUMMARY``),
and the one convention that ties skips to ``not-installed``. The one module that classifies.

A test skipped because a library is absent is the outcome ``not-installed``, not ``skipped``:
the report recognises it by the reason's prefix, so anything that skips for that cause (the
``requires`` marker, a suite's own check) must build its reason with :func:`not_installed_reason`
(or skip with ``pytest_rocm.skip_not_installed``: the skip needs pytest, which report/ never imports).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal, get_args

# the user_properties keys tests hand data through, named in report.properties; imported from here
# too (pytest_rocm.INFO_PROPERTY and PARITY_PROPERTY are this module's)
from pytest_rocm.report.properties import INFO_PROPERTY, PARITY_PROPERTY, PERF_PROPERTY

__all__ = ["INFO_PROPERTY", "PARITY_PROPERTY", "PERF_PROPERTY"]  # and every name defined here

#: what happened to one test (docs/report.md, "outcome")
Outcome = Literal[
    "passed",
    "failed",
    "error",
    "skipped",
    "xfailed",
    "xpassed",
    "not-installed",
    "crashed",
    "timeout",
    "not-run",  # collected, never run: the run stopped first (worker-restart limit, Ctrl-C, -x)
]
#: the same, as a tuple in this order (the order of a report's ``summary``)
OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)

#: outcomes that mean "works here", "does not work here", "a known failure" (xfailed: the run is
#: green, the test neither works nor breaks it); the rest (skips) mean "not tested here". What a
#: change between two runs means is ``report.judgement``'s, for the table and the gate alike.
GOOD: tuple[Outcome, ...] = ("passed", "xpassed")
BAD: tuple[Outcome, ...] = ("failed", "error", "crashed", "timeout")
EXPECTED: tuple[Outcome, ...] = ("xfailed",)
#: when one feature has several tests in one report, the cell shows the worst
SEVERITY: tuple[Outcome, ...] = (
    "crashed",
    "timeout",
    "error",
    "failed",
    "xfailed",
    "xpassed",
    "passed",
    "not-installed",
    "skipped",
    "not-run",
)
#: the summary's columns and the outcomes each counts
SUMMARY: tuple[tuple[str, tuple[Outcome, ...]], ...] = (
    ("passed", GOOD),
    ("xfailed", EXPECTED),
    ("failed", ("failed", "error")),
    ("crashed", ("crashed", "timeout")),
    ("not-installed", ("not-installed",)),
    ("skipped", ("skipped", "not-run")),
)

NOT_INSTALLED_PREFIX = "not installed: "


def not_installed_reason(dist: str, detail: str = "") -> str:
    """``not installed: bitsandbytes (needs >=0.43)``"""
    return f"{NOT_INSTALLED_PREFIX}{dist}" + (f" ({detail})" if detail else "")


def is_not_installed(reason: str | None) -> bool:
    if not reason:
        return False
    # pytest prefixes skip reasons with "Skipped: " in some places
    text = reason.removeprefix("Skipped: ")
    return text.startswith(NOT_INSTALLED_PREFIX)


MAX_REASON = 400
#: a hang: a failure whose message is ``Timeout (>Ns) <who>[: detail]``, the words pytest-timeout
#: fails with (``Timeout (>2.0s) from pytest-timeout.``). A suite's own watchdog reports a hang by
#: failing with a message of that shape (``pytest.fail("Timeout (>144s) from the distributed
#: watchdog: rank 1")``); the reason recorded is the part before the detail. Only the message
#: itself counts (a line's start, or after ``Failed: ``), not the words inside another error.
_TIMEOUT_RE = re.compile(r"(?m)(?:^|Failed: )(Timeout \(>[0-9.]+s\) [^:\n]*?)\.?(?::|$)")
_XDIST_CRASH_RE = re.compile(r"worker '?[\w-]+'? crashed while running")


# -- outcome of one test from its phase reports -----------------------------------------------
def _longrepr_text(report: Any) -> str:
    longrepr = getattr(report, "longrepr", None)
    if longrepr is None:
        return ""
    if isinstance(longrepr, (tuple, list)) and len(longrepr) == 3:  # skip: (path, line, reason)
        return str(longrepr[2])
    return str(longrepr)


def reason_of(report: Any) -> str:
    """A one-line reason: the skip reason, or the exception's message line."""
    longrepr = getattr(report, "longrepr", None)
    crash = getattr(longrepr, "reprcrash", None)
    text = getattr(crash, "message", None) if crash is not None else None
    if not text:
        lines = [line.strip() for line in _longrepr_text(report).splitlines() if line.strip()]
        text = lines[-1] if lines else ""
    return bounded(text.removeprefix("Skipped: "))


def bounded(text: str, limit: int = MAX_REASON) -> str:
    """``text`` in at most ``limit`` characters, cut after its last whole line that fits (a cut
    inside a row of a table leaves half a row that reads as a figure) and marked with ``…``; a
    first line longer than the limit is cut inside it."""
    if len(text) <= limit:
        return text
    end = text.rfind("\n", 0, limit - 1)
    return text[:end] + "\n…" if end > 0 else text[: limit - 1] + "…"


def _skip_outcome(report: Any) -> tuple[Outcome, str | None]:
    if hasattr(report, "wasxfail"):
        return "xfailed", report.wasxfail or None
    reason = reason_of(report)
    return ("not-installed" if is_not_installed(reason) else "skipped"), reason or None


def _failure_outcome(report: Any, fallback: Outcome) -> tuple[Outcome, str | None]:
    text = _longrepr_text(report)
    match = _TIMEOUT_RE.search(text)
    if match:
        return "timeout", match.group(1)
    if "[XPASS(strict)]" in text:
        return "xpassed", text.strip() or None
    if _XDIST_CRASH_RE.search(text):
        return "crashed", reason_of(report)
    return fallback, reason_of(report) or None


def outcome_of(
    phases: Sequence[Any], elapsed: float | None = None, timeout: float | None = None, died: str | None = None
) -> tuple[Outcome, str | None]:
    """Map one test's phase reports (setup, call, teardown, or xdist's crash report) to an outcome.

    A worker that died while its test ran longer than the timeout was killed by pytest-timeout's
    thread method (which ends the process): that is ``timeout``, any other death ``crashed``.
    ``died``: how the worker ended (``killed by SIGSEGV (signal 11)``, ``report.deaths``), added
    to the reason.
    """
    if len(phases) == 3:  # most tests of a big suite: setup, call and teardown passed, no xfail
        setup, call, teardown = phases
        if (
            setup.outcome == call.outcome == teardown.outcome == "passed"
            and call.when == "call"
            and "wasxfail" not in getattr(call, "__dict__", ())  # hasattr raises inside when absent: costly
            and setup.when == "setup"
            and teardown.when == "teardown"
        ):
            return "passed", None
    by_when = {p.when: p for p in phases}  # the last report of each phase
    crash = by_when.get("???")
    if crash is not None:
        how = f": {died}" if died else ""
        # the controller sees the start a little late: allow a small margin below the timeout
        if timeout and elapsed is not None and elapsed >= timeout - max(0.5, 0.05 * timeout):
            return "timeout", f"worker killed after {elapsed:.1f}s: over the {timeout:g}s timeout{how}"
        return "crashed", (reason_of(crash) or "worker crashed") + how
    setup, call, teardown = by_when.get("setup"), by_when.get("call"), by_when.get("teardown")
    if setup is not None and setup.failed:
        return _failure_outcome(setup, "error")
    if setup is not None and setup.skipped:
        return _skip_outcome(setup)
    if call is not None:
        if call.skipped:
            return _skip_outcome(call)
        if call.failed:
            return _failure_outcome(call, "failed")
        if hasattr(call, "wasxfail"):
            return "xpassed", call.wasxfail or None
    if teardown is not None and teardown.failed:
        return _failure_outcome(teardown, "error")
    if call is None:  # interrupted before the test body ran
        return "error", "test did not run to completion"
    return "passed", None
