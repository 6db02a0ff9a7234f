"""Outcome names of the compatibility report and the one convention that ties skips to them.

A test skipped because a library is absent is the outcome ``not-installed``, not ``skipped``:
the report recognises it by the reason's prefix, so anything that skips for that cause (the
``requires`` marker, a suite's own check) must build its reason with :func:`not_installed_reason`.
"""

from __future__ import annotations

from importlib import metadata
from typing import NoReturn

OUTCOMES: tuple[str, ...] = (
    "passed",
    "failed",
    "error",
    "skipped",
    "xfailed",
    "xpassed",
    "not-installed",
    "crashed",
    "timeout",
)

NOT_INSTALLED_PREFIX = "not installed: "

#: user_properties keys through which tests hand data to the report
PARITY_PROPERTY = "rocm_parity"  # value: list of parity record dicts (DESIGN.md report schema)
INFO_PROPERTY = "rocm_info"  # value: dict of facts (library version, backend that ran...)


def not_installed_reason(dist: str, detail: str = "") -> str:
    """``not installed: bitsandbytes (needs >=0.43)``"""
    return f"{NOT_INSTALLED_PREFIX}{dist}" + (f" ({detail})" if detail else "")


def is_not_installed(reason: str | None) -> bool:
    if not reason:
        return False
    # pytest prefixes skip reasons with "Skipped: " in some places
    text = reason.removeprefix("Skipped: ")
    return text.startswith(NOT_INSTALLED_PREFIX)


def distribution_version(dist: str) -> str | None:
    """Installed version of a distribution from its metadata (never imports it)."""
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def skip_not_installed(dist: str, detail: str = "") -> NoReturn:
    import pytest

    pytest.skip(not_installed_reason(dist, detail))
