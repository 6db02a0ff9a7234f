"""The doctor's outputs: the one-line summary, the full text of ``rocm-compat doctor`` and the
README's error table.

Every line about a check is its one-line form (``Check.line``), so the pytest header and
``rocm-compat env`` print exactly what the doctor prints. Pure: reading the machine is
``doctor.probe``'s.
"""

from __future__ import annotations

from typing import Any

from pytest_rocm._resources import load_json
from pytest_rocm.doctor.checks import Check, CheckStatus, problems

#: how the summary names each problem status
SUMMARY_LABELS: tuple[tuple[CheckStatus, str], ...] = (("fail", "failing"), ("warn", "warnings"))


def summary_line(checks: list[Check]) -> str | None:
    """The line that closes the doctor's output, and the header's doctor lines, when something is
    wrong; None when all is well."""
    found = problems(checks)
    if not found:
        return None
    noun = "problem" if len(found) == 1 else "problems"
    groups = []
    for status, label in SUMMARY_LABELS:
        ids = [c.id for c in found if c.status == status]
        if ids:
            groups.append(f"{label}: {', '.join(ids)}")
    return f"rocm doctor: {len(found)} {noun} ({'; '.join(groups)}), run `rocm-compat doctor`"


def render_text(checks: list[Check]) -> str:
    """``rocm-compat doctor``: every check's one-line form, the fix under each problem, the summary."""
    lines = []
    for c in checks:
        lines.append(c.line)
        if c.fix and c.is_problem:
            lines.append(f"       fix: {c.fix}")
    lines.append("")
    lines.append(summary_line(checks) or "rocm doctor: no problems found")
    return "\n".join(lines)


def known_errors() -> list[dict[str, Any]]:
    return list(load_json("known_errors.json")["errors"])


def errors_table() -> str:
    """The README's "common errors" table, generated from the same data doctor uses."""
    rows = ["| error | doctor check | fix |", "| --- | --- | --- |"]
    for e in known_errors():
        message = e["message"].replace("|", "\\|").replace("`", "'")
        check = f"`{e['check']}`" if e["check"] else "(library suites)"
        rows.append(f"| `{message}` | {check} | {e['fix'].replace('|', '/')} |")
    return "\n".join(rows)
