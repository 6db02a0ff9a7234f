"""The doctor's outputs: the one-line summary, the full text of ``rocm-compat doctor`` and the
error table of docs/doctor.md.

Every line about a check is its one-line form (``Check.line``), so the pytest header and
``rocm-compat env`` print exactly what the doctor prints. Pure: reading the machine is
``doctor.probe``'s.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from pytest_rocm._resources import load_json
from pytest_rocm.doctor.checks import Check, CheckStatus, problems
from pytest_rocm.report.escape import markdown_cell, terminal_line

#: how the summary names each problem status
SUMMARY_LABELS: tuple[tuple[CheckStatus, str], ...] = (("fail", "failing"), ("warn", "warnings"))


def _groups(found: list[Check]) -> str:
    """``failing: gfx-in-build, driver; warnings: igpu``"""
    groups = []
    for status, label in SUMMARY_LABELS:
        ids = [c.id for c in found if c.status == status]
        if ids:
            groups.append(f"{label}: {', '.join(ids)}")
    return "; ".join(groups)


def doctor_command(env_file: str | None = None) -> str:
    """The command that diagnoses what the caller diagnosed: a recorded environment's own, never
    this machine's in its place."""
    return f"rocm-compat doctor --env {terminal_line(shlex.quote(env_file))}" if env_file else "rocm-compat doctor"


def summary_line(checks: list[Check], env_file: str | None = None) -> str | None:
    """The pytest header's last doctor line when something is wrong (None when all is well): the
    problems, and the command that prints their fixes (``--env FILE`` for a recorded environment)."""
    found = problems(checks)
    if not found:
        return None
    noun = "problem" if len(found) == 1 else "problems"
    return f"rocm doctor: {len(found)} {noun} ({_groups(found)}), run `{doctor_command(env_file)}`"


def first_fix(checks: list[Check]) -> Check | None:
    """The problem to fix first: the first failing check with a fix, else the first warning with one."""
    found = problems(checks)
    return next((c for c in found if c.status == "fail" and c.fix), None) or next((c for c in found if c.fix), None)


def verdict_line(checks: list[Check], env_file: str | None = None) -> str:
    """The last line of ``rocm-compat doctor``: the verdict and the first fix, so the reader of the
    last line knows what to do (never "run rocm-compat doctor", which is what they just ran)."""
    where = f" (the recorded environment {terminal_line(env_file)})" if env_file else ""
    found = problems(checks)
    if not found:
        return f"rocm doctor{where}: ready, no problems found"
    verdict = "not ready" if any(c.status == "fail" for c in found) else "usable, with warnings"
    line = f"rocm doctor{where}: {verdict} ({_groups(found)})"
    fix = first_fix(checks)
    return line + (f"; first fix ({fix.id}): {fix.fix}" if fix else "; no fix is known: see the evidence above")


def render_text(checks: list[Check], env_file: str | None = None) -> str:
    """``rocm-compat doctor``: every check's one-line form, the fix under each problem, then the
    verdict and the first fix (``verdict_line``)."""
    lines = []
    for c in checks:
        lines.append(c.line)
        if c.fix and c.is_problem:
            lines.append(f"       fix: {c.fix}")
    lines.append("")
    lines.append(verdict_line(checks, env_file))
    return "\n".join(lines)


def known_errors() -> list[dict[str, Any]]:
    return list(load_json("known_errors.json")["errors"])


def _code(text: str) -> str:
    """``text`` as a Markdown code span that shows it exactly (greppable): a text with backticks
    gets a longer fence, pipes are escaped (one row stays one row)."""
    runs = [len(r) for r in re.findall(r"`+", text)]
    fence = "`" * (max(runs, default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or runs else ""
    return f"{fence}{pad}{text.replace('|', chr(92) + '|')}{pad}{fence}"


def errors_table() -> str:
    """The "common errors" table of docs/doctor.md, generated from the same data ``--explain``
    uses: one row per error text a user can grep a log for, its causes, its fixes (each with the
    gfx or ROCm it applies to) and the check that catches the cause."""
    from pytest_rocm.doctor.explain import bundled

    rows = ["| error | cause | fix | doctor check |", "| --- | --- | --- | --- |"]
    by_message: dict[str, list[Any]] = {}
    for e in bundled():
        by_message.setdefault(e.message, []).append(e)
    for message, entries in by_message.items():
        checks = list(dict.fromkeys(f"`{e.check}`" if e.check else "(library suites)" for e in entries))
        causes = list(dict.fromkeys(e.cause for e in entries))
        fixes = [(f"{x.condition()}: " if x.conditional else "") + x.worded(None) for e in entries for x in e.fixes]
        cells = [" — ".join(causes), " — ".join(dict.fromkeys(fixes)), ", ".join(checks)]
        rows.append(f"| {_code(message)} | " + " | ".join(markdown_cell(c) for c in cells) + " |")
    return "\n".join(rows)
