"""Outcome names of the compatibility report and the one convention that ties skips to them.

A test skipped because a library is absent is the outcome ``not-installed``, not ``skipped``:
the report recognises it by the reason's prefix, so anything that skips for that cause (the
``requires`` marker, a suite's own check) must build its reason with :func:`not_installed_reason`
(or skip with ``pytest_rocm.skip_not_installed``: the skip needs pytest, which report/ never imports).
"""

from __future__ import annotations

from typing import Literal, get_args

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

NOT_INSTALLED_PREFIX = "not installed: "

#: user_properties keys through which tests hand data to the report
PARITY_PROPERTY = "rocm_parity"  # value: list of parity record dicts (docs/design.md, report/1)
INFO_PROPERTY = "rocm_info"  # value: dict of facts (library version, backend that ran...)
PERF_PROPERTY = "rocm_perf"  # value: one perf record dict (pytest_rocm.perf.stats, docs/perf.md)


def not_installed_reason(dist: str, detail: str = "") -> str:
    """``not installed: bitsandbytes (needs >=0.43)``"""
    return f"{NOT_INSTALLED_PREFIX}{dist}" + (f" ({detail})" if detail else "")


def is_not_installed(reason: str | None) -> bool:
    if not reason:
        return False
    # pytest prefixes skip reasons with "Skipped: " in some places
    text = reason.removeprefix("Skipped: ")
    return text.startswith(NOT_INSTALLED_PREFIX)
