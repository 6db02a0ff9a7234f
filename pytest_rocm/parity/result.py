"""What assert_parity returns and raises: ParityResult, ParityError, DtypeUnsupported.

Torch-free, so the fixture and the report can handle results without importing torch.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from pytest_rocm.parity.reading import describe, read_parity

#: failure kinds, most severe first (a result's kind is the most severe of its comparisons); a
#: parity record's ``kind`` in the report is one of these or null. ``dtype``: a run did not compute
#: in the dtype under test; ``nondeterministic``: two reference runs of the same input differ.
FailureKind = Literal["structure", "dtype", "nondeterministic", "non-finite", "mismatch", "vacuous"]
KINDS: tuple[FailureKind, ...] = get_args(FailureKind)


@dataclass
class Comparison:
    """One output (or gradient) of one dtype's run, against the reference."""

    dtype: str
    name: str
    mode: str
    ok: bool
    kind: FailureKind | None  # None when ok; one of KINDS otherwise ("vacuous" also when allowed)
    max_abs: float | None = None
    max_rel: float | None = None
    normwise: float | None = None
    n_bad: int = 0
    numel: int = 0
    rtol: float | None = None
    atol: float | None = None
    normwise_tol: float | None = None
    #: (index, got, expected) of the worst element: the most out of bound, else the largest error
    worst: tuple[tuple[int, ...], float, float] | None = None
    detail: str = ""
    #: cpu-relative mode: the CPU same-dtype run's error and the factor it may be exceeded by
    cpu_max_abs: float | None = None
    cpu_factor: float | None = None
    #: model mode: the yardstick's normwise error and the factor it may be exceeded by
    cpu_normwise: float | None = None
    cpu_normwise_factor: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        """The report's parity record: the docs/design.md schema fields first, then ours."""
        rec: dict[str, Any] = {
            "dtype": self.dtype,
            "max_abs": self.max_abs,
            "max_rel": self.max_rel,
            "normwise": self.normwise,
            "rtol": self.rtol,
            "atol": self.atol,
            "ok": self.ok,
            "name": self.name,
            "kind": self.kind,
            "n_bad": self.n_bad,
            "mode": self.mode,
            "normwise_tol": self.normwise_tol,
            "numel": self.numel,
        }
        if self.worst is not None:
            rec["worst_index"] = list(self.worst[0])
            rec["worst_got"] = self.worst[1]
            rec["worst_expected"] = self.worst[2]
        if self.cpu_max_abs is not None:
            rec["cpu_max_abs"] = self.cpu_max_abs
            rec["cpu_factor"] = self.cpu_factor
        if self.cpu_normwise is not None:
            rec["cpu_normwise"] = self.cpu_normwise
            rec["cpu_normwise_factor"] = self.cpu_normwise_factor
        if self.detail:
            rec["detail"] = self.detail
        rec.update(self.extra)
        return rec


@dataclass
class ParityResult:
    """Every comparison of one assert_parity call: one per (dtype, output or gradient)."""

    name: str
    mode: str
    device: str
    dtypes: tuple[str, ...]
    comparisons: list[Comparison] = field(default_factory=list)
    #: dtypes the op does not implement on the device: dtype -> the error text
    unsupported: dict[str, str] = field(default_factory=dict)
    #: a failed call's reproducer spec (``parity.callspec``): on its first failed record in the report
    repro: dict[str, Any] | None = None
    #: how to build ``repro`` where building it costs a run of the caller's function (a traced
    #: lambda): built by ``records(with_repro=True)``, the report's call, never for a run that
    #: writes no report
    repro_of: Callable[[], dict[str, Any]] | None = field(default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.comparisons)

    @property
    def failures(self) -> list[Comparison]:
        return [c for c in self.comparisons if not c.ok]

    @property
    def kind(self) -> FailureKind | None:
        """The most severe failure kind, None when everything passed."""
        kinds = {c.kind for c in self.failures}
        return next((k for k in KINDS if k in kinds), None)

    def for_dtype(self, dtype: str) -> list[Comparison]:
        return [c for c in self.comparisons if c.dtype == dtype]

    def __getitem__(self, dtype: str) -> Comparison:
        """The first output's comparison for ``dtype`` (``result["float16"].max_abs``)."""
        found = self.for_dtype(dtype)
        if not found:
            raise KeyError(f"no comparison for dtype {dtype!r} (have {sorted({c.dtype for c in self.comparisons})})")
        return found[0]

    def records(self, with_repro: bool = False) -> list[dict[str, Any]]:
        """Each comparison's report record; the first failed one carries the reproducer spec where
        one was made (``with_repro``: build it now if it is built on request, ``repro_of``)."""
        records = [c.record() for c in self.comparisons]
        if self.repro is None and with_repro and self.repro_of is not None:
            self.repro, self.repro_of = self.repro_of(), None
        if self.repro is not None:  # once per call, on its first failure: the spec covers every dtype
            first = next((r for r in records if r["ok"] is False), None)
            if first is not None:
                first["repro"] = self.repro
        return records

    def table(self) -> str:
        return format_table(self)


class ParityError(AssertionError):
    """Numbers differ from the reference. ``.kind``: structure, non-finite, mismatch or vacuous."""

    def __init__(self, message: str, kind: FailureKind, result: ParityResult | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.result = result


class DtypeUnsupported(Exception):
    """The op is not implemented for a dtype on the device (``"addmm" not implemented for 'Half'``).

    Not a failure of the numbers, and not a skip by itself: plain assert_parity raises it so a caller
    decides; the ``parity`` fixture turns it into ``pytest.skip`` naming op, dtype and backend.
    Raised only when every dtype that did run passed (otherwise ParityError wins).
    """

    def __init__(
        self, message: str, op: str, dtypes: dict[str, str], backend: str, result: ParityResult | None = None
    ) -> None:
        super().__init__(message)
        self.op = op
        self.dtypes = dtypes
        self.backend = backend
        self.result = result


#: what torch says when an op has no kernel for a dtype on a device, rather than a bug: the one
#: rule (``no_kernel_for_dtype``). ``"addmm_impl_cpu_" not implemented for 'Half'``, ``Unsupported
#: dtype BFloat16``, ``Low precision dtypes not supported``, ``... only supports float``. Not
#: ``expected scalar type Float but found Half``: that is mixed dtypes in one run, often the caller's
#: (kind ``dtype`` when the probe sees it).
NO_KERNEL_FOR_DTYPE = re.compile(
    r"not implemented for '\w+'"
    r"|(?:not supported|unsupported)\b.*\b(?:float16|bfloat16|half|bf16|fp16|float64|double)\b"
    r"|\b(?:float16|bfloat16|half|bf16|fp16|float64|double)\b.*\b(?:not supported|unsupported)"
    r"|low precision dtypes? (?:is |are )?not supported"
    r"|\bonly supports? (?:float|double|fp32)\b",
    re.IGNORECASE,
)


def no_kernel_for_dtype(text: str) -> bool:
    """Whether an error's text says the op has no kernel for the dtype (:data:`NO_KERNEL_FOR_DTYPE`)."""
    return NO_KERNEL_FOR_DTYPE.search(text) is not None


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return f"{value:.3g}"


def _worst(c: Comparison) -> str:
    if c.worst is None:
        return "-"
    index, got, expected = c.worst
    return f"[{','.join(map(str, index))}] {_pair(got, expected)}"


def _pair(got: float, expected: float) -> str:
    """``3.2833 vs 3.28``: as many digits as it takes to show that two different values differ."""
    if got != expected and math.isfinite(got) and math.isfinite(expected):
        for digits in range(3, 10):
            a, b = f"{got:.{digits}g}", f"{expected:.{digits}g}"
            if a != b:
                return f"{a} vs {b}"
    return f"{_num(got)} vs {_num(expected)}"


def format_table(result: ParityResult) -> str:
    """A compact fixed-width table, one line per comparison, failures marked."""
    header = (
        "dtype",
        "output",
        "status",
        "max_abs",
        "max_rel",
        "normwise",
        "n_bad",
        "worst [index] got vs expected",
        "tolerance rtol/atol/normwise",
    )
    rows = [header]
    for c in result.comparisons:
        status = "ok" if c.ok and c.kind is None else (c.kind or "ok") + ("" if not c.ok else " (allowed)")
        tol = f"{_num(c.rtol)}/{_num(c.atol)}/{_num(c.normwise_tol)}"
        if c.cpu_normwise is not None:
            tol = (
                f"normwise<={_num(c.normwise_tol)} ({_num(c.cpu_normwise_factor)}x {_num(c.cpu_normwise)}), "
                f"|err|<={_num(c.extra.get('max_abs_bound'))} ({_num(c.cpu_factor)}x {_num(c.cpu_max_abs)})"
            )
        elif c.cpu_max_abs is not None:
            tol += f" or <={_num(c.cpu_factor)}x cpu {_num(c.cpu_max_abs)}"
        rows.append(
            (
                c.dtype,
                c.name,
                status,
                _num(c.max_abs),
                _num(c.max_rel),
                _num(c.normwise),
                f"{c.n_bad}/{c.numel}",
                _worst(c),
                tol,
            )
        )
    for dtype, text in result.unsupported.items():
        rows.append((dtype, result.name, "unsupported", "-", "-", "-", "-", "-", text[:60]))
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(header))]
    lines = ["  ".join(str(cell).ljust(w) for cell, w in zip(r, widths, strict=False)).rstrip() for r in rows]
    by_note: dict[tuple[str, str], list[str]] = {}
    for c in result.comparisons:
        if c.detail and not c.ok:
            by_note.setdefault((c.name, c.detail), []).append(c.dtype)
    notes = [f"{'/'.join(dtypes)} {name}: {detail}" for (name, detail), dtypes in by_note.items()]
    return "\n".join(lines + notes)


#: how many failed comparisons the message's first line names (the table below has every one)
FIRST_LINE_FAILURES = 3
#: dtypes whose own rounding an op's cancellation can push past the absolute tolerance on any device
_LOSSY_DTYPES = ("float16", "bfloat16")


def _number3(value: float) -> str:
    return f"{value:.3g}"


def what_failed(result: ParityResult) -> str:
    """``float16: elementwise |err| 1 > 0.00363, 1/2048 off``: each failed comparison (at most
    :data:`FIRST_LINE_FAILURES`, then how many more) with the criterion that failed, its own figure
    and bound (``parity.reading``, the reader the report's cells use)."""
    parts = []
    for c in result.failures[:FIRST_LINE_FAILURES]:
        output = f" {c.name}" if c.name != result.name else ""
        parts.append(f"{c.dtype}{output}: {describe(read_parity(c.record()), _number3)}")
    more = len(result.failures) - FIRST_LINE_FAILURES
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def _lossy_hint(result: ParityResult) -> str:
    """On the CPU in absolute mode, a low-precision dtype that misses its tolerance is the CPU
    baseline itself failing: the dtype is lossy for this op, which a device cannot be blamed for."""
    lossy = sorted({c.dtype for c in result.failures if c.kind == "mismatch" and c.dtype in _LOSSY_DTYPES})
    if result.mode != "absolute" or not lossy or not result.device.startswith("cpu"):
        return ""
    if any(c.dtype not in _LOSSY_DTYPES for c in result.failures):
        return ""  # float32 failed too: the code is wrong, not only the dtype's rounding
    dtypes = "/".join(lossy)
    return (
        f"\nThis ran on the CPU, the baseline itself: a {dtypes} miss here is often the dtype, not a device "
        '(cancellation: a small result of large terms keeps their rounding error). mode="cpu-relative" '
        f'judges a device against the CPU\'s own {dtypes} run: it separates "this dtype is lossy" from '
        '"this device is wrong".'
    )


def failure_message(result: ParityResult, advice: bool = True) -> str:
    """The ParityError's text: a first line that names what failed (a report keeps the first
    400 characters, a diff the first line), the table of every comparison, then hints on how to
    call ``assert_parity`` (``advice``; not for a caller that has no such call: a workload replay)."""
    kinds = sorted({c.kind for c in result.failures if c.kind}, key=KINDS.index)
    head = f"parity {', '.join(kinds)}: {result.name} on {result.device} (mode {result.mode}, reference float64 on cpu)"
    if result.mode == "model":
        head += "; yardstick: the reference with every result rounded to the dtype"
    if result.failures:
        head += f": {what_failed(result)}"
    return head + "\n" + result.table() + (_lossy_hint(result) if advice else "")


# -- who hears of a finished result -----------------------------------------------------------------
#: Called with every result assert_parity finishes (passed, failed or unsupported). The pytest plugin
#: listens while a test runs, so a direct ``assert_parity`` call is in the report like the fixture's.
_LISTENERS: list[Callable[[ParityResult], None]] = []


def add_listener(listener: Callable[[ParityResult], None]) -> Callable[[], None]:
    """Hear of every finished result until the returned function is called."""
    _LISTENERS.append(listener)
    return lambda: _LISTENERS.remove(listener)


def announce(result: ParityResult | None) -> None:
    if result is not None:
        for listener in tuple(_LISTENERS):
            listener(result)
