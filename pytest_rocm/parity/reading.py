"""Reading one parity record: its figure, the bound it is shown against and what failed.

The one reader of a record (``Comparison.record()``'s dict, as a report holds it, or a test's own
``record_property("rocm_parity", ...)``): the table's cells and notes, the one-line cell, the HTML
page, the growth rule of ``rocm-compat diff`` and the failure message of ``assert_parity`` all ask
it, so no two of them read one record two ways. Pure and stdlib only.

- :func:`figure`: the one number rule. A figure is an int or float (never a bool) or one of the
  words report/1 writes for what JSON cannot hold (``"inf"``, ``"-inf"``, ``"nan"``); anything
  else (another string, a bool, a list) is no figure.
- :func:`error_of`: the record's headline error (normwise where measured, else max_rel).
- :func:`shown_tolerance`: the bound that headline figure is shown against.
- :func:`breaches`: each criterion the record failed, with its own figure and its own bound.
- :func:`read_parity`: all of it at once (:class:`ParityReading`).

The criteria (docs/parity.md): in ``absolute`` and ``cpu-relative`` mode a record fails
**elementwise** (an element beyond ``atol + rtol*|ref| + normwise*rms(ref)``, or the CPU run's
floor): its figure is the worst element's ``|got - expected|``, its bound that element's bound
(``worst_bound``; reports before it did not record it). In ``model`` mode it fails **normwise**
(``normwise > normwise_tol``) and/or **elementwise** (``max_abs > max_abs_bound``). Integer (and
zero-tolerance) outputs fail **exact**; inf/nan where the reference disagrees **non-finite**; the
kinds without a figure (structure, dtype, nondeterministic, vacuous) fail as themselves.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

#: the words report/1 writes for figures JSON cannot hold (``report.records.jsonable``)
FIGURE_WORDS: dict[str, float] = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}

Criterion = Literal[
    "elementwise",
    "normwise",
    "exact",
    "non-finite",
    "structure",
    "dtype",
    "nondeterministic",
    "vacuous",
    "unknown",  # failed, and the record does not say by which criterion (a test's own record)
]
#: failure kinds without a figure of their own: the record's ``detail`` says what happened
_WORDED_KINDS = ("structure", "dtype", "nondeterministic", "vacuous")


def figure(value: Any) -> float | None:
    """The one number rule of a parity record's figures and bounds (see the module's docstring)."""
    kind = type(value)
    if kind is float:
        return value  # type: ignore[no-any-return]
    if kind is int:
        return float(value)
    if kind is str:
        return FIGURE_WORDS.get(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):  # numpy's float64 and kin
        return float(value)
    return None


def count(value: Any) -> int | None:
    """A count (``n_bad``, ``numel``): an int >= 0, never a bool."""
    return value if type(value) is int and value >= 0 else None


def error_of(record: Mapping[str, Any]) -> float | None:
    """The record's headline error: the normwise relative error where measured, else the
    elementwise max_rel; None when it has neither."""
    value = figure(record.get("normwise"))
    return value if value is not None else figure(record.get("max_rel"))


def shown_tolerance(record: Mapping[str, Any]) -> tuple[str, float] | None:
    """The bound the headline figure is shown against: ``("tol", normwise_tol)`` for a normwise
    figure with a bound (a ``normwise_tol`` of 0 is no bound: exact comparisons), else
    ``("rtol", rtol)``; None when neither was recorded."""
    if figure(record.get("normwise")) is not None:
        normwise_tol = figure(record.get("normwise_tol"))
        if normwise_tol:
            return "tol", normwise_tol
    rtol = figure(record.get("rtol"))
    return ("rtol", rtol) if rtol is not None else None


@dataclass(frozen=True)
class Breach:
    """One criterion a record failed: its own figure and its own bound (None: not recorded)."""

    criterion: Criterion
    value: float | None = None
    bound: float | None = None

    @property
    def ratio(self) -> float:
        """How far past its bound (inf for a breach without figures or past a bound of 0)."""
        if self.value is None or not math.isfinite(self.value):
            return math.inf
        if self.bound is None:
            return self.value
        return self.value / self.bound if self.bound > 0 else math.inf


def _worst_error(record: Mapping[str, Any]) -> float | None:
    got, expected = figure(record.get("worst_got")), figure(record.get("worst_expected"))
    if got is None or expected is None:
        return figure(record.get("max_abs"))
    return abs(got - expected)


def _non_finite(record: Mapping[str, Any]) -> bool:
    if record.get("kind") == "non-finite":
        return True
    values = [figure(record.get(key)) for key in ("max_abs", "normwise")]
    return any(v is not None and not math.isfinite(v) for v in values)


def breaches(record: Mapping[str, Any]) -> tuple[Breach, ...]:
    """Each criterion a failed record (``ok`` false) failed, the worst first; () for one that did not fail."""
    if record.get("ok") is not False:
        return ()
    kind = record.get("kind")
    if kind in _WORDED_KINDS:
        return (Breach(kind),)
    if _non_finite(record):
        return (Breach("non-finite"),)
    found: list[Breach] = []
    n_bad = count(record.get("n_bad"))
    if record.get("mode") == "model":
        normwise, bound = figure(record.get("normwise")), figure(record.get("normwise_tol"))
        if normwise is not None and bound is not None and normwise > bound:
            found.append(Breach("normwise", normwise, bound))
        if n_bad:
            found.append(Breach("elementwise", figure(record.get("max_abs")), figure(record.get("max_abs_bound"))))
    elif n_bad:
        tolerances = [figure(record.get(key)) for key in ("rtol", "atol", "normwise_tol")]
        if tolerances == [0.0, 0.0, 0.0] and figure(record.get("cpu_max_abs")) is None:
            found.append(Breach("exact", _worst_error(record), 0.0))
        else:
            found.append(Breach("elementwise", _worst_error(record), figure(record.get("worst_bound"))))
    if not found:
        return (Breach("unknown", error_of(record), None),)
    return tuple(sorted(found, key=lambda b: -b.ratio if not math.isnan(b.ratio) else -math.inf))


@dataclass(frozen=True)
class ParityReading:
    """One record, read: what every view of it shows (``read_parity``)."""

    dtype: str
    name: str | None
    ok: bool | None
    #: the headline error (:func:`error_of`) and the bound it is shown against (:func:`shown_tolerance`)
    error: float | None
    tolerance: tuple[str, float] | None
    n_bad: int | None
    numel: int | None
    #: what failed, the worst first (:func:`breaches`); () when the record did not fail
    failed: tuple[Breach, ...]
    detail: str


def read_parity(record: Mapping[str, Any]) -> ParityReading:
    """Read one parity record whole (see the module's docstring for each part's rule)."""
    name, detail = record.get("name"), record.get("detail")
    ok = record.get("ok")
    return ParityReading(
        dtype=str(record.get("dtype", "?")),
        name=name if isinstance(name, str) else None,
        ok=ok if isinstance(ok, bool) else None,
        error=error_of(record),
        tolerance=shown_tolerance(record),
        n_bad=count(record.get("n_bad")),
        numel=count(record.get("numel")),
        failed=breaches(record),
        detail=detail if isinstance(detail, str) else "",
    )


def _default_number(value: float) -> str:
    return f"{value:.1e}"


def describe(reading: ParityReading, number: Any = _default_number) -> str:
    """What failed, in words, without the dtype: ``elementwise |err| 1.0e+00 > 3.6e-03, 1/2048 off``
    (``normwise 5.2e-03 > 1.9e-03``, ``exact: 2/2048 differ``, ``non-finite where the reference is
    finite, 3/512 off``, ``dtype: <detail>``); the worst criterion first, each with its own figure
    and bound. ``number``: how a figure is written (the cell: ``1.0e+00``; the message: ``.3g``)."""
    off = f", {reading.n_bad}/{reading.numel} off" if reading.n_bad and reading.numel is not None else ""
    parts = []
    for breach in reading.failed:
        value = "?" if breach.value is None else number(breach.value)
        if breach.criterion in _WORDED_KINDS:
            first = reading.detail.strip().splitlines()[0] if reading.detail.strip() else ""
            first = first.removeprefix(f"{breach.criterion}: ")  # a vacuous detail names its kind already
            parts.append(f"{breach.criterion}: {first}" if first else breach.criterion)
        elif breach.criterion == "non-finite":
            disagree = "disagree on inf/nan" in reading.detail
            parts.append(
                ("disagrees with the reference on inf/nan" if disagree else "non-finite where the reference is finite")
                + off
            )
        elif breach.criterion == "exact":
            of = f"/{reading.numel}" if reading.numel is not None else ""
            parts.append(f"exact: {reading.n_bad}{of} differ (worst |err| {value})")
        elif breach.criterion == "unknown":
            tol = f" ({reading.tolerance[0]} {number(reading.tolerance[1])})" if reading.tolerance else ""
            parts.append(f"{value}{tol}, criterion not recorded{off}")
        else:
            if breach.bound is None:
                bound = " (bound not recorded)"
            elif breach.value is not None and breach.value > breach.bound:
                bound = f" > {number(breach.bound)}"
            else:  # a record that says it failed with figures that do not show it: both, no ">"
                bound = f", bound {number(breach.bound)}"
            what = "|err|" if breach.criterion == "elementwise" else "error"
            parts.append(
                f"{breach.criterion} {what} {value}{bound}" + (off if breach.criterion == "elementwise" else "")
            )
    return "; ".join(parts)
