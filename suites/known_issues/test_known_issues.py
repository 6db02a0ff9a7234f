"""One row per public ROCm bug report (suites/known_issues/cases.py): fails where the bug is present.

Rows: ``known_issues/<case id>[<dtype>]``. Every row carries the report's URL, where it was seen and
what fixed it as ``rocm_info["issue"]`` (recorded before any skip, so skipped rows show it too).
"""

from __future__ import annotations

import os
import time

import pytest

from pytest_rocm import INFO_PROPERTY, PARITY_PROPERTY, not_installed_reason

torch = pytest.importorskip("torch", reason=not_installed_reason("torch"))

from .cases import CASES, Case  # noqa: E402
from .isolated import fail_as_timeout, run_isolated  # noqa: E402
from .repro import reproduce, skip_reason  # noqa: E402

#: PYTEST_ROCM_KNOWN_ISSUES_TIMEOUT caps every row's timeout marker (gpu_run.sh sets it to its per-test
#: limit; the plugin's own hang test uses it)
TIMEOUT_CAP_S = float(os.environ.get("PYTEST_ROCM_KNOWN_ISSUES_TIMEOUT", "inf"))


def _timeout(case: Case) -> float:
    return min(case.timeout_s, TIMEOUT_CAP_S)


def _child_timeout(case: Case) -> float:
    """The child of an isolated row stops short of the row's timeout marker, so the row itself kills
    and reports a hang before pytest-timeout steps in."""
    return _timeout(case) - min(15.0, 0.25 * _timeout(case))


def _rows() -> list:
    return [
        pytest.param(
            case,
            dtype,
            id=f"{case.id}-{dtype}",
            marks=[pytest.mark.rocm_feature(case.feature(dtype)), pytest.mark.timeout(_timeout(case))],
        )
        for case in CASES
        for dtype in case.dtypes
    ]


@pytest.mark.parametrize(("case", "dtype"), _rows())
def test_known_issue(case: Case, dtype: str, rocm_device, rocm_scale: str, record_property) -> None:
    started = time.monotonic()
    record_property(INFO_PROPERTY, {"issue": case.issue()})
    needs = skip_reason(case, rocm_device)
    if needs:
        pytest.skip(needs)
    if case.isolate:
        outcome = run_isolated(case, dtype, str(rocm_device), rocm_scale, _child_timeout(case))
        failure, skip = outcome.get("failure"), outcome.get("skip")
        records, info = outcome.get("records") or [], outcome.get("info") or {}
    else:
        result = reproduce(case, dtype, rocm_device, rocm_scale)
        failure, skip, records, info = result.failure, result.skip, result.records, result.info
    if info:
        record_property(INFO_PROPERTY, info)
    if records:
        record_property(PARITY_PROPERTY, records)
    if skip:
        pytest.skip(skip)
    if failure and case.isolate and outcome.get("hung"):
        fail_as_timeout(started, failure)  # a hang is a timeout, not a plain failure
    if failure:
        pytest.fail(failure, pytrace=False)
