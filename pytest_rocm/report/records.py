"""The compatibility report (schema ``pytest-rocm/report/1``): its shape and its records.

Pure functions over pytest's TestReport objects (or anything with the same attributes), so the
hooks in ``plugin/report`` stay thin and everything here is testable without running pytest.
Writing the files (the sidecar, the final JSON) is ``report.files``; reading them back
(validation, sidecars) is ``report.load``.

Why this module is long: it is the one definition of a report/1 record, its TypedDicts and the
mapping from pytest's phase reports and user properties to it; split, the format's two halves
would drift apart.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, TypedDict, cast

from pytest_rocm.env.model import Environment
from pytest_rocm.report.features import (
    DEFAULT_DEVICE_TOKENS,
    SUITE_FOLDERS,
    feature_of,
    row_facts,
    suite_of,
)
from pytest_rocm.report.outcomes import OUTCOMES, Outcome, outcome_of
from pytest_rocm.report.properties import (
    ACCELERATOR_PROPERTY,
    FEATURE_PROPERTY,
    INFO_PROPERTY,
    PARITY_PROPERTY,
    PERF_PROPERTY,
    TIMEOUT_PROPERTY,
)

if TYPE_CHECKING:  # the type only: report/ does not import parity/
    from pytest_rocm.parity.result import FailureKind

SCHEMA = "pytest-rocm/report/1"
SIDECAR_SCHEMA = "pytest-rocm/report-sidecar/1"
#: a sidecar line that is not a result names its kind under this key; the one kind is
#: ``environment``: the header fields known only after the run began (detected in a child process)
SIDECAR_LINE_KIND = "sidecar"
SIDECAR_ENVIRONMENT = "environment"
#: in a serial run, once after collection: the tests in the order they will run (``tests``: node
#: ids; ``marked``: node id -> its ``rocm_feature`` marker's name; ``device_ids``: the session's
#: tokens), so a process that dies leaves the name of its test: the first one without a result
#: (``report.deaths``). One line per run, not one per test (a line per test cost ~40 us each).
SIDECAR_COLLECTED = "collected"
#: the last line of a sidecar the run kept after it ended in order (its final report could not
#: be written): the collected tests without a result never ran, none of them crashed
SIDECAR_FINISHED = "finished"
#: a sidecar of an earlier version names the test that starts now (``nodeid``, ``feature``,
#: ``suite``) in a line of this kind before each test; still read
SIDECAR_RUNNING = "running"
__all__ = [  # re-exported: named in report.features and report.properties
    "ACCELERATOR_PROPERTY",
    "FEATURE_PROPERTY",
    "SUITE_FOLDERS",
    "TIMEOUT_PROPERTY",
    "feature_of",
    "suite_of",
]


# -- the shape of a report (docs/design.md, report/1) -------------------------------------------
class ParityRecord(TypedDict, total=False):
    """One comparison of a test's parity records. ``dtype, max_abs, max_rel, normwise, rtol, atol,
    ok`` are the contract; ``parity.result.Comparison.record`` adds the rest, and a test's own
    ``record_property("rocm_parity", ...)`` may hold fewer keys or others. Non-finite numbers are
    the strings ``"inf"``/``"nan"``."""

    dtype: str
    max_abs: float | str | None
    max_rel: float | str | None
    normwise: float | str | None
    rtol: float | None
    atol: float | None
    ok: bool
    name: str
    kind: FailureKind | None
    n_bad: int
    mode: str
    normwise_tol: float | None
    numel: int


class _RecordKeys(TypedDict):
    nodeid: str
    feature: str
    suite: str
    outcome: Outcome
    reason: str | None
    parity: list[ParityRecord]


class ResultRecord(_RecordKeys, total=False):
    """One test's record (``build_record``; ``report.load`` guarantees the keys above these)."""

    duration: float
    info: dict[str, Any]
    #: how many times the test ran (pytest-rerunfailures); absent: once
    attempts: int
    #: whether it used the accelerator (allocated on it); absent: not measured
    accelerator: bool
    perf: dict[str, Any]  #: how fast it ran (``perf.stats.PerfRecord``, docs/perf.md); absent: not measured
    #: the device a normalised ``[device]`` token stood for (``cpu``, ``cuda``): which half of a
    #: device-parametrized test this is; absent: the row name has no device token
    device_variant: str


class _DocumentKeys(TypedDict):
    schema: str
    label: str
    environment: dict[str, Any]  # environment/1 (``Environment.to_dict``), ``{}`` when unknown
    results: list[ResultRecord]
    summary: dict[str, int]  # each outcome's count, and "total"


class ReportDocument(_DocumentKeys, total=False):
    """A report (``assemble``; ``report.load`` returns one, validated). Readers ignore keys they do
    not know; these are the ones this package writes beside the required ones."""

    created: str
    device: str | None
    scale: str | None
    interrupted: bool
    dropped_partial_line: bool


# -- records ------------------------------------------------------------------------------------
def _properties(phases: Sequence[Any]) -> Sequence[Any]:
    """The test's user_properties: in-process all phases share item.user_properties; under xdist
    each phase carries a copy taken when it ended. Properties only grow, so the longest list has
    them all. (No copies: this runs once per test, and every container it makes is garbage-collector
    work; the caller skips entries that are not (key, value) pairs.)"""
    longest: Sequence[Any] = ()
    for phase in phases:
        found = getattr(phase, "user_properties", None) or ()
        if len(found) > len(longest):
            longest = found
    return longest


def jsonable(value: Any) -> Any:
    """Strict-JSON form: non-finite floats as strings ("inf", "nan"), unknown objects as str."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "item"):  # numpy / torch scalars
        try:
            return jsonable(value.item())
        except (TypeError, ValueError):
            pass
    return str(value)


def build_record(
    nodeid: str,
    phases: Sequence[Any],
    elapsed: float | None = None,
    timeout: float | None = None,
    device_tokens: Iterable[str] = DEFAULT_DEVICE_TOKENS,
    attempts: int = 1,
    died: str | None = None,
) -> ResultRecord:
    """The report record of one test from the phase reports of its last attempt (``died``: how
    the xdist worker that ran it ended, when it crashed)."""
    parity: list[Any] = []
    info: dict[str, Any] = {}
    marker_feature = None
    accelerator: bool | None = None
    perf = None
    for entry in _properties(phases):
        if not isinstance(entry, (tuple, list)) or len(entry) != 2:
            continue
        key, value = entry
        if key == PARITY_PROPERTY:
            parity.extend(value if isinstance(value, (list, tuple)) else [value])
        elif key == INFO_PROPERTY and isinstance(value, dict):
            info.update(value)
        elif key == FEATURE_PROPERTY:
            marker_feature = str(value)
        elif key == ACCELERATOR_PROPERTY:
            accelerator = bool(value)
        elif key == PERF_PROPERTY and isinstance(value, dict):
            perf = jsonable(value)
        elif key == TIMEOUT_PROPERTY and isinstance(value, (int, float)) and value > 0:
            timeout = float(value)  # the test's own timeout marker overrides the session's
    outcome, reason = outcome_of(phases, elapsed, timeout, died)
    duration = 0.0
    body_ran = False  # the probe answers for every test; one whose setup did not pass gets none
    for phase in phases:
        duration += float(getattr(phase, "duration", 0) or 0)
        body_ran = body_ran or getattr(phase, "when", None) == "call"
    if outcome in ("crashed", "timeout") and elapsed is not None:
        duration = max(duration, elapsed)
    feature, suite, variant = row_facts(nodeid, marker_feature, device_tokens)
    record: ResultRecord = {
        "nodeid": nodeid,
        "feature": feature,
        "suite": suite,
        "outcome": outcome,
        "reason": reason,
        "duration": round(duration, 6),
        "parity": jsonable(parity) if parity else [],
        "info": jsonable(info) if info else {},
    }
    if variant is not None:
        record["device_variant"] = variant
    if attempts > 1:
        record["attempts"] = attempts
    if accelerator is not None and body_ran:
        record["accelerator"] = accelerator
    if perf is not None:
        record["perf"] = perf
    return record


def summarize(results: Iterable[ResultRecord]) -> dict[str, int]:
    summary: dict[str, int] = dict.fromkeys(OUTCOMES, 0)
    total = 0
    for record in results:
        summary[record["outcome"]] = summary.get(record["outcome"], 0) + 1
        total += 1
    summary["total"] = total
    return summary


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def not_run_record(nodeid: str, reason: str, device_tokens: Iterable[str] = DEFAULT_DEVICE_TOKENS) -> ResultRecord:
    """The record of a collected test that never ran (the run stopped first): ``not-run``.
    ``device_tokens`` are the session's (``--rocm-device-ids``), as :func:`build_record` gets them:
    a test's row must not depend on whether it ran."""
    feature, suite, variant = row_facts(nodeid, None, device_tokens)
    record: ResultRecord = {
        "nodeid": nodeid,
        "feature": feature,
        "suite": suite,
        "outcome": "not-run",
        "reason": reason,
        "duration": 0.0,
        "parity": [],
        "info": {},
    }
    if variant is not None:
        record["device_variant"] = variant
    return record


def assemble(
    label: str,
    environment: dict[str, Any],
    results: list[ResultRecord],
    created: str | None = None,
    summary: dict[str, int] | None = None,
    **extra: Any,
) -> ReportDocument:
    """The final report document of docs/design.md (``extra``: ``device``, ``scale``, ``interrupted``...).
    ``summary``: the results' counts when they are kept elsewhere (``report.encoded``; ``results`` empty)."""
    report: dict[str, Any] = {"schema": SCHEMA, "label": label, "created": created or now_iso()}
    report["environment"] = environment
    report.update(extra)  # before the results: a reader of the file sees them first
    report["results"] = results
    report["summary"] = summary if summary is not None else summarize(results)
    return cast("ReportDocument", report)


def scale_of(document: ReportDocument) -> str | None:
    """The report's scale profile (``"ci"``/``"full"``, ``--rocm-scale``); None in reports older than it."""
    value = document.get("scale")
    return value if isinstance(value, str) and value else None


def default_label(env: Environment, device: str | None = None) -> str:
    """``rocm torch2.6.0 rocm6.2.4 gfx1100`` / ``cpu torch2.13.0``: the column of this run. The one
    default label: the plugin, ``rocm-compat run`` and the nox sessions (which pass no label) all
    use it, so one machine is one column whoever ran it."""
    on_cpu = device == "cpu" or not env.devices or env.backend == "cpu"
    backend = "cpu" if on_cpu else env.backend
    parts: list[str] = [backend]
    if env.torch:
        parts.append("torch" + env.torch.split("+", 1)[0])
    if on_cpu:
        return " ".join(parts)
    if backend == "rocm" and env.rocm:
        parts.append("rocm" + env.rocm)
    if backend == "cuda" and env.cuda:
        parts.append("cuda" + env.cuda)
    index = (
        int(device.split(":", 1)[1])
        if device and ":" in device and re.fullmatch("[0-9]+", device.split(":", 1)[1])
        else None
    )
    chosen = next((d for d in env.devices if d.index == index), env.devices[0])
    parts.append(chosen.gfx or chosen.arch)
    return " ".join(parts)


def slug(label: str) -> str:
    """A file name for a label: ``rocm-torch2.6.0-rocm6.2.4-gfx1100``."""
    return re.sub(r"[^A-Za-z0-9._+-]+", "-", label).strip("-.") or "report"
