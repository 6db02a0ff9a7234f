"""The row of a module that failed to collect (``report.records`` holds the rows of tests).

A test module that fails to import is the typical ROCm failure (``hipErrorNoBinaryForGpu`` at
import, a CUDA-only extension): without a row it would vanish from the report, and with
``--continue-on-collection-errors`` the table would say "works everywhere". A test whose plugin
marker is bad is a collection error too (the core plugin reports it); it gets a row the same way.
"""

from __future__ import annotations

from collections.abc import Iterable

from pytest_rocm.report.features import DEFAULT_DEVICE_TOKENS, collection_feature, feature_of, suite_of
from pytest_rocm.report.outcomes import MAX_REASON
from pytest_rocm.report.records import ResultRecord


def collection_reason(text: str) -> str | None:
    """The error's own line in pytest's collection error text: the last ``E   `` line (the
    exception, below the traceback), else the first line."""
    lines = [line for line in text.splitlines() if line.strip()]
    errors = [line[1:].strip() for line in lines if line.startswith("E ")]
    reason = errors[-1] if errors else (lines[0].strip() if lines else "")
    return reason[:MAX_REASON] or None


def collection_record(nodeid: str, text: str, device_tokens: Iterable[str] = DEFAULT_DEVICE_TOKENS) -> ResultRecord:
    """A failed collection as a row: outcome ``error``, the module (its path, ``.py`` dropped) as
    the feature, the error's line in pytest's error ``text`` as the reason, ``info.collection`` true."""
    feature = feature_of(nodeid, None, device_tokens) if "::" in nodeid else collection_feature(nodeid)
    return {
        "nodeid": nodeid,
        "feature": feature,
        "suite": suite_of(nodeid),
        "outcome": "error",
        "reason": collection_reason(text) or "collection failed",
        "parity": [],
        "info": {"collection": True},
    }
