"""A cell that did not pass, in one line: what failed and by how much, not the exception's text.

The table shows this line in the cell; the whole recorded reason sits behind a click (HTML) or in
the "Failure details" section (Markdown). Pure and stdlib only.

- a parity failure: its worst failing record, ``fp16 1.0e-02 > tol 9.8e-04, 237/512 off``;
  non-finite output: ``fp16 non-finite where the reference is finite, 3/512 off``;
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
from typing import TYPE_CHECKING, Any

from pytest_rocm.parity.tolerances import short_dtype
from pytest_rocm.report.load import metric

if TYPE_CHECKING:
    from pytest_rocm.report.table import Cell

#: how long the one line may be (the whole reason is behind it)
ONE_LINE_CHARS = 90
_SIGNAL = re.compile(r"killed by (SIG[A-Z0-9]+)")
_EXIT = re.compile(r"\bexit status (-?\d+)")
_TIMEOUT = re.compile(r"over the ([\d.]+s) timeout|Timeout \(([^)]*)\)")
#: ``pkg.mod.ClassName:`` at the start of a message: the dotted path is noise in a cell
_CLASS_PATH = re.compile(r"^(?:[A-Za-z_]\w*\.)+([A-Za-z_]\w*)(?=: |:$|$)")


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        return float(value)
    except ValueError:
        return None


def _tolerance(record: Mapping[str, Any]) -> tuple[str, float] | None:
    """("tol", normwise_tol) for a normwise figure with a bound, else ("rtol", rtol)."""
    normwise_tol = _number(record.get("normwise_tol")) if record.get("normwise") is not None else None
    if normwise_tol:
        return "tol", normwise_tol
    rtol = _number(record.get("rtol"))
    return ("rtol", rtol) if rtol is not None else None


def _badness(record: Mapping[str, Any]) -> float:
    """How far past its tolerance a failing record is (non-finite the worst of all)."""
    value, tol = metric(record), _tolerance(record)
    if value is None or not math.isfinite(value) or record.get("kind") == "non-finite":
        return math.inf
    return value / tol[1] if tol and tol[1] > 0 else value


def worst_failing(parity: Sequence[Any]) -> dict[str, Any] | None:
    """The parity record that failed worst (``ok`` false, with a figure), None when none did."""
    failing = [r for r in parity if isinstance(r, dict) and r.get("ok") is False and metric(r) is not None]
    return max(failing, key=_badness) if failing else None


def parity_line(record: Mapping[str, Any]) -> str:
    """``fp16 1.0e-02 > tol 9.8e-04, 237/512 off`` (``name`` first when the record has one)."""
    dtype = short_dtype(str(record.get("dtype", "?")))
    value, tol = metric(record), _tolerance(record)
    n_bad, numel = record.get("n_bad"), record.get("numel")
    off = f", {n_bad}/{numel} off" if isinstance(n_bad, int) and isinstance(numel, int) and n_bad else ""
    if value is None or not math.isfinite(value) or record.get("kind") == "non-finite":
        return f"{dtype} non-finite where the reference is finite{off}"
    bound = f" > {tol[0]} {tol[1]:.1e}" if tol else ""
    return f"{dtype} {value:.1e}{bound}{off}"


def first_line(reason: str | None) -> str:
    """The reason's first non-empty line without an exception's module path, whitespace folded."""
    lines = [line.strip() for line in (reason or "").removeprefix("Skipped: ").splitlines() if line.strip()]
    text = " ".join(lines[0].split()) if lines else ""
    return _CLASS_PATH.sub(r"\1", text)


def cut(text: str, limit: int = ONE_LINE_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def one_line(cell: Cell, limit: int = ONE_LINE_CHARS) -> str:
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
