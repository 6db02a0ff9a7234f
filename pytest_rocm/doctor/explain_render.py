"""What ``rocm-compat doctor --explain`` prints: each known error found, as text for a terminal
(every quoted line escaped: report/escape.py) or as JSON. The finding itself is doctor.explain's."""

from __future__ import annotations

from typing import Any

from pytest_rocm.doctor.explain import Finding
from pytest_rocm.report.escape import terminal_line


def _fix_lines(finding: Finding) -> list[str]:
    lines = []
    for fix, applies in finding.fixes:
        label = (
            "fix" if not fix.conditional else (f"fix ({fix.condition()})" if applies else f"fix, if {fix.condition()}")
        )
        lines.append(f"  {label}: {fix.worded(finding.gfx)}" + (f" [{fix.source}]" if fix.source else ""))
    return lines or ["  fix: none known"]


def render(findings: list[Finding], lines: int, rocm: str | None) -> str:
    """The text of ``--explain``: each known error with the line it was seen on, its cause, the
    fixes that apply (a fix whose condition is unknown says it), the check and the recorded lines'
    URLs; the last line says how many were found. Every quoted text is escaped for the terminal."""
    out = []
    for f in findings:
        facts = ", ".join(x for x in (f.gfx, f"ROCm {rocm}" if rocm else "") if x)
        more = f" (and {f.count - 1} more line{'s' if f.count > 2 else ''})" if f.count > 1 else ""
        out.append(f"line {f.line_no}{more}: {f.error.id}: {f.error.category}" + (f" [{facts}]" if facts else ""))
        out.append(f"    {f.line}")
        out.append(f"  cause: {f.error.cause}")
        out.extend(_fix_lines(f))
        if f.error.check:
            out.append(f"  doctor check: {f.error.check} (rocm-compat doctor runs it on this machine)")
        out.append(f"  recorded: {', '.join(dict.fromkeys(src for _, src in f.error.samples))}")
    noun = "line" if lines == 1 else "lines"
    if findings:
        n = len(findings)
        out.append(f"rocm-compat doctor --explain: {n} known error{'s' if n != 1 else ''} in {lines} {noun}")
    else:
        out.append(
            f"rocm-compat doctor --explain: no known error in {lines} {noun} "
            "(rocm-compat doctor --errors-table lists the known ones)"
        )
    return "\n".join(terminal_line(line) for line in out)


def to_dicts(findings: list[Finding], rocm: str | None) -> list[dict[str, Any]]:
    """The findings as JSON objects (the quoted line escaped like the text's)."""
    return [
        {
            "id": f.error.id,
            "line_no": f.line_no,
            "count": f.count,
            "line": terminal_line(f.line),
            "gfx": f.gfx,
            "rocm": rocm,
            "cause": f.error.cause,
            "fixes": [
                {"fix": x.worded(f.gfx), "when": x.condition() or None, "applies": v, "source": x.source}
                for x, v in f.fixes
            ],
            "check": f.error.check,
            "recorded": list(dict.fromkeys(src for _, src in f.error.samples)),
        }
        for f in findings
    ]
