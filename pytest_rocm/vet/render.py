"""vet's output: the JSON document and the readable text."""

from __future__ import annotations

from typing import Any

from pytest_rocm.vet.rules import Finding
from pytest_rocm.vet.scan import ScanResult
from pytest_rocm.vet.target import Target
from pytest_rocm.vet.verdict import Verdict

SCHEMA = "pytest-rocm/vet/1"
_ORIGIN = {
    "installed": "installed distribution",
    "wheel": "wheel",
    "sdist": "source archive",
    "folder": "source folder",
}
_SEVERITY = {"error": 0, "warning": 1, "info": 2}


def ordered(findings: list[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (_SEVERITY.get(f.severity, 9), f.rule, f.path, f.line or 0))


def document(target: Target, result: ScanResult, verdict: Verdict, live: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "target": target.spec,
        "name": target.name,
        "version": target.version,
        "origin": target.origin,
        "class": verdict.klass,
        "verdict": verdict.title,
        "reason": verdict.reason,
        "evidence": [f.to_json() for f in verdict.evidence],
        "caveats": verdict.caveats,
        "next_steps": verdict.next_steps,
        "findings": [f.to_json() for f in ordered(result.findings)],
        "counts": dict(sorted(result.counts.items())),
        "not_counted": dict(sorted(result.mentions.items())),
        "files_scanned": result.files,
        "seconds": round(result.seconds, 3),
        "live": live,
    }


def text(doc: dict[str, Any], per_rule: int = 3) -> str:
    out: list[str] = []
    version = f" {doc['version']}" if doc["version"] else ""
    out.append(
        f"rocm-compat vet: {doc['name']}{version} ({_ORIGIN.get(doc['origin'], doc['origin'])}, "
        f"{doc['files_scanned']} files read in {doc['seconds']:.1f} s)"
    )
    out.append("")
    out.append(f"class {doc['class']}: {doc['verdict']}")
    out.append(f"  why: {doc['reason']}")
    if doc["evidence"]:
        out.append("  deciding evidence:")
        for f in doc["evidence"]:
            where = f"{f['path']}:{f['line']}" if f["line"] else f["path"]
            out.append(f"    {f['rule']:<28} {where}  {f['text']}")
    for title, key in (("caveats", "caveats"), ("next steps", "next_steps")):
        if doc[key]:
            out.append(f"  {title}:")
            out += [f"    - {line}" for line in doc[key]]
    counted = [f for f in doc["findings"] if not f["context"]]
    if counted:
        out.append("")
        out.append("findings (by rule; --json lists them all):")
        by_rule: dict[str, list[dict[str, Any]]] = {}
        for f in counted:
            by_rule.setdefault(f["rule"], []).append(f)
        for rule, items in by_rule.items():
            total = doc["counts"].get(rule, len(items))
            out.append(f"  {items[0]['severity']:<7} {rule} ({total}): {items[0]['message']}")
            for f in items[:per_rule]:
                where = f"{f['path']}:{f['line']}" if f["line"] else f["path"]
                out.append(f"            {where}  {f['text']}")
            if total > per_rule:
                out.append(f"            ... {total - per_rule} more")
    if doc["not_counted"]:
        n = sum(doc["not_counted"].values())
        out.append(
            f"  info    {n} match(es) in comments, docstrings or optional extras, not counted "
            f"({', '.join(sorted(doc['not_counted']))})"
        )
    live = doc.get("live")
    if live:
        out.append("")
        out.append(f"live check ({live['check']}" + (f": {live['suite']}" if live.get("suite") else "") + "):")
        for rec in live["records"]:
            reason = f"  {rec['reason']}" if rec.get("reason") else ""
            out.append(f"  {rec['outcome']:<13} {rec['feature']} ({rec['duration']:.2f} s){reason}")
    return "\n".join(out)
