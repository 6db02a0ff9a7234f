"""A cell that did not pass, in one line: what failed and by how much, not the exception's text.

The table shows this line in the cell; the whole recorded reason sits behind a click (HTML) or in
the "Failure details" section (Markdown). Pure and stdlib only.

- a parity failure: its worst failing record and the criterion that failed, with that
  criterion's own figure and bound (``parity.reading``): ``fp16 elementwise |err| 1.0e+00 >
  3.6e-03, 1/2048 off``, ``fp16 normwise error 5.2e-03 > 1.9e-03``; non-finite output: ``fp16
  non-finite where the reference is finite, 3/512 off``;
- a crash: how the process ended, ``crashed: SIGSEGV`` (``crashed: exit status 3``);
- a timeout: ``timeout: over the 900s timeout``;
- anything else: the reason's first line without the exception's module path
  (``torch._dynamo.exc.BackendCompilerFailed: ...`` -> ``BackendCompilerFailed: ...``), cut to
  :data:`ONE_LINE_CHARS`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from pytest_rocm.parity.reading import breaches, describe, read_parity
from pytest_rocm.parity.tolerances import short_dtype

#: how long the one line may be (the whole reason is behind it)
ONE_LINE_CHARS = 90
_SIGNAL = re.compile(r"killed by (SIG[A-Z0-9]+)")
_EXIT = re.compile(r"\bexit status (-?\d+)")
_TIMEOUT = re.compile(r"over the ([\d.]+s) timeout|Timeout \(([^)]*)\)")
#: ``pkg.mod.ClassName:`` at the start of a message: the dotted path is noise in a cell
_CLASS_PATH = re.compile(r"^(?:[A-Za-z_]\w*\.)+([A-Za-z_]\w*)(?=: |:$|$)")


#: failures of these criteria rank above any figure's excess (the run proved nothing, or nothing finite)
_SEVERITY: dict[str, int] = {"structure": 5, "dtype": 4, "nondeterministic": 3, "non-finite": 2, "vacuous": 0}


def _badness(record: Mapping[str, Any]) -> tuple[int, float]:
    """How bad a failing record is: its worst criterion's severity, then how far past its bound."""
    failed = breaches(record)
    if not failed:
        return (-1, 0.0)
    ratio = failed[0].ratio
    return _SEVERITY.get(failed[0].criterion, 1), math.inf if math.isnan(ratio) else ratio


def is_failing(record: Any) -> bool:
    """A parity record that failed (``ok`` false), whatever it recorded beside."""
    return isinstance(record, dict) and record.get("ok") is False


def worst_failing(parity: Sequence[Any]) -> dict[str, Any] | None:
    """The parity record that failed worst (``ok`` false), None when none did."""
    failing = [r for r in parity if is_failing(r)]
    return max(failing, key=_badness) if failing else None


def parity_line(record: Mapping[str, Any], named: bool = False) -> str:
    """``fp16 elementwise |err| 1.0e+00 > 3.6e-03, 1/2048 off``: the dtype and what failed, each
    criterion with its own figure and bound (``parity.reading.describe``); ``named``: the output's
    name after the dtype (``fp16 gelu.grad[0]: ...``), for lists of several records."""
    reading = read_parity(record)
    dtype = short_dtype(reading.dtype)
    if named and reading.name:
        dtype += f" {reading.name}:"
    if not reading.failed:
        tol = f" ({reading.tolerance[0]} {reading.tolerance[1]:.1e})" if reading.tolerance else ""
        return f"{dtype} {reading.error:.1e}{tol}" if reading.error is not None else dtype
    return f"{dtype} {describe(reading)}"


#: how many failed records a note lists (the report holds every one)
NOTE_RECORDS = 20


def failure_lines(failed: Sequence[Mapping[str, Any]], limit: int = NOTE_RECORDS) -> list[str]:
    """One line per failed record, the worst first, each naming its output and criterion: what a
    cell's note and the HTML cell's details show, read from the records (never from the reason,
    which a report cuts)."""
    ranked = sorted(failed, key=_badness, reverse=True)
    lines = [parity_line(r, named=True) for r in ranked[:limit]]
    if len(ranked) > limit:
        lines.append(f"... and {len(ranked) - limit} more failed records (the report has every one)")
    return lines


def first_line(reason: str | None) -> str:
    """The reason's first non-empty line without an exception's module path, whitespace folded."""
    lines = [line.strip() for line in (reason or "").removeprefix("Skipped: ").splitlines() if line.strip()]
    text = " ".join(lines[0].split()) if lines else ""
    return _CLASS_PATH.sub(r"\1", text)


def cut(text: str, limit: int = ONE_LINE_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


class OneLineCell(Protocol):
    """What :func:`one_line` reads of a cell (the table's ``Cell`` is one): named here rather than
    imported from the table, which imports this module (no circle, not even for the type checker)."""

    @property
    def outcome(self) -> str: ...
    @property
    def reason(self) -> str | None: ...
    @property
    def failing(self) -> Mapping[str, Any] | None: ...
    def figure(self) -> str: ...


def one_line(cell: OneLineCell, limit: int = ONE_LINE_CHARS) -> str:
    """The cell's failure (or skip) in one line, outcome first: ``failed: fp16 1.0e-02 > tol ...``."""
    reason = cell.reason or ""
    if cell.outcome == "crashed":
        signal, status = _SIGNAL.search(reason), _EXIT.search(reason)
        how = signal.group(1) if signal else f"exit status {status.group(1)}" if status else ""
        if not how and ("process died" in reason or "crashed while running" in reason):
            how = "its process died (how is not recorded)"
        return cut(f"crashed: {how}" if how else "crashed", limit)
    if cell.outcome == "timeout":
        found = _TIMEOUT.search(reason)
        if found:
            return cut(f"timeout: over {found.group(1) or found.group(2).lstrip('>')}", limit)
    if cell.failing is not None and cell.outcome in ("failed", "error", "xfailed"):
        return cut(f"{cell.outcome}: {parity_line(cell.failing)}", limit)
    text = first_line(reason).removeprefix("not installed: ")
    line = f"{cell.outcome}: {text}" if text else cell.outcome
    figure = cell.figure()  # the parity figures, where the line has room for them
    return line + f" · {figure}" if figure and len(line) + 3 + len(figure) <= limit else cut(line, limit)
