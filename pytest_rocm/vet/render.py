"""vet's output: the JSON document and the readable text."""

from __future__ import annotations

from typing import Any

from pytest_rocm.vet import ggml
from pytest_rocm.vet.result import ScanResult
from pytest_rocm.vet.rules import Finding
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
    backends = ggml.to_json(result.ggml)
    hip_step = ggml.next_step(backends)
    return {
        "schema": SCHEMA,
        "target": target.spec,
        "name": target.name,
        "version": target.version,
        "origin": target.origin,
        "class": verdict.klass,
        "verdict": verdict.title,
        "at_least": verdict.at_least or None,
        "reason": verdict.reason,
        "confidence": verdict.confidence,
        "confidence_why": verdict.confidence_why,
        "evidence": [f.to_json() for f in verdict.evidence],
        "contrary": [f.to_json() for f in verdict.contrary],
        "contrary_notes": verdict.contrary_notes,
        "caveats": verdict.caveats + ([cpu_only] if (cpu_only := ggml.caveat(backends)) else []),
        "next_steps": verdict.next_steps + ([hip_step] if hip_step else []),
        "findings": [f.to_json() for f in ordered(result.findings)],
        "counts": dict(sorted(result.counts.items())),
        "not_counted": dict(sorted(result.mentions.items())),
        "files_scanned": result.files,
        "files_not_read": result.not_read,
        "not_read": result.not_read_examples,
        "seconds": round(result.seconds, 3),
        "gfx_targets": {path: targets for path, targets in sorted(result.gfx_targets.items())},
        "gfx_notes": dict(sorted(result.gfx_notes.items())),
        "build_backends": backends,
        "live": live,
    }


def text(doc: dict[str, Any], per_rule: int = 3) -> str:
    out: list[str] = []
    version = f" {doc['version']}" if doc["version"] else ""
    out.append(
        f"rocm-compat vet: {doc['name']}{version} ({_ORIGIN.get(doc['origin'], doc['origin'])}, "
        f"{doc['files_scanned'] - doc['files_not_read']} files read in {doc['seconds']:.1f} s)"
    )
    if doc["files_not_read"]:
        shown = ", ".join(doc["not_read"]) + (", ..." if doc["files_not_read"] > len(doc["not_read"]) else "")
        out.append(f"  not read ({doc['files_not_read']}: no rule reads their kind): {shown}")
    out.append("")
    shown = f"at least class {doc['class']}" if doc.get("at_least") else f"class {doc['class']}"
    out.append(f"{shown}: {doc['verdict']}")
    out.append(f"  why: {doc['reason']}")
    out.append(f"  confidence: {doc['confidence']} ({doc['confidence_why']})")
    for title, key in (("deciding evidence", "evidence"), ("against it", "contrary")):
        if doc[key]:
            out.append(f"  {title}:")
            for f in doc[key]:
                out.append(f"    {f['rule']:<28} {_where(f)}  {f['text']}")
    if doc["contrary_notes"]:
        out.append("  note:")
        out += [f"    - {line}" for line in doc["contrary_notes"]]
    if doc.get("build_backends"):
        out.append(f"  GGML backends: {ggml.phrase(doc['build_backends'])}")
    if doc["gfx_targets"]:
        out.append("  AMD targets in its binaries:")
        for path, targets in doc["gfx_targets"].items():
            why = doc["gfx_notes"].get(path)  # what could not be read, and how to read it (zstandard)
            out.append(f"    {path}: {', '.join(targets) or 'unknown'}" + (f" ({why})" if why else ""))
    for title, key in (("caveats", "caveats"), ("next steps", "next_steps")):
        if doc[key]:
            out.append(f"  {title}:")
            out += [f"    - {line}" for line in doc[key]]
    # what decides: no context, in the package's runtime code or build (tests and examples are a caveat)
    counted = [f for f in doc["findings"] if not f["context"] and f.get("place", "runtime") in ("runtime", "build")]
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
                out.append(f"            {_where(f)}  {f['text']}")
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
        if "sandbox" in live:
            where = live["sandbox"] or "NO SANDBOX (--unsafe-run): it ran with your files and rights"
            out.append(f"  sandbox: {where}")
            dropped = live.get("env_dropped") or []
            if dropped:
                out.append(f"  environment: {len(dropped)} variable(s) not passed on: {', '.join(dropped)}")
        for rec in live["records"]:
            reason = f"  {rec['reason']}" if rec.get("reason") else ""
            out.append(f"  {rec['outcome']:<13} {rec['feature']} ({rec['duration']:.2f} s){reason}")
    return "\n".join(out)


def _where(f: dict[str, Any]) -> str:
    """``path:line [place]``: where a finding is, and which part of the package that is."""
    where = f"{f['path']}:{f['line']}" if f["line"] else f["path"]
    return f"{where} [{f['place']}]" if f.get("place") else where


def _cell(value: object) -> str:
    return str(value if value is not None else "-").replace("|", "\\|").replace("\n", " ")


def stack_table(doc: dict[str, Any], markdown: bool = False) -> str:
    """The stack document as one table: Markdown, or aligned text."""
    theirs = "--gpu" if doc.get("gpus_from") == "--gpu" else "this machine"
    head = ["package", "version", "class", "confidence", "deciding evidence", "based on", "gfx targets", theirs]
    rows = [
        [
            r["package"],
            r["version"],
            _class_cell(r),
            r["confidence"],
            r["reason"]
            + (f" (note: {r['contrary'][0]})" if r.get("contrary") else "")
            + (f" [{r['note']}]" if r["note"] and r["class"] is not None else ""),
            r.get("basis"),
            _targets_cell(r),
            r.get("gpus"),
        ]
        for r in doc["packages"]
    ]
    first = f"{len(rows)} packages; {_gpus_phrase(doc)}; {_verdict_phrase(doc)}"
    extra = _stack_notes(doc)
    if markdown:
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
        return "\n".join([f"**rocm-compat vet**: {first}", *extra, "", *out])
    cells = [[_cell(c) for c in row] for row in rows]
    widths = [min(40, max([len(h)] + [len(c[i]) for c in cells])) for i, h in enumerate(head[:4])]
    out = [f"rocm-compat vet: {first}", *extra, ""]
    out.append("  ".join(h.ljust(w) for h, w in zip(head[:4], widths, strict=True)) + "  deciding evidence")
    indent = " " * (sum(widths) + 8)
    for c, r in zip(cells, doc["packages"], strict=True):
        line = "  ".join(v.ljust(w) for v, w in zip(c[:4], widths, strict=True)) + "  " + c[4]
        if r["class"] == 3:
            line += f"\n{indent}  based on: {c[5]}"
            if c[6] != "-":
                line += f"\n{indent}  gfx: {c[6]} ({c[7]})"
        out.append(line)
    return "\n".join(out)


def _class_cell(row: dict[str, Any]) -> str:
    """``4``, ``?`` (not vetted), ``>=1`` (a partial read: the class is a floor)."""
    if row["class"] is None:
        return "?"
    return f">={row['class']}" if row.get("at_least") else str(row["class"])


def _gpus_phrase(doc: dict[str, Any]) -> str:
    """Whose GPUs the gfx column compares with: this machine's, or the ones ``--gpu`` named."""
    gpus = ", ".join(doc["machine_gpus"])
    if doc.get("gpus_from") == "--gpu":
        return f"compared with {gpus} (--gpu, not this machine)"
    return f"this machine's GPUs: {gpus or 'none found'}"


def _verdict_phrase(doc: dict[str, Any]) -> str:
    verdict = f"class 4 (CUDA-only): {', '.join(doc['class_4'])}" if doc["class_4"] else "no class 4 package"
    unvetted = doc.get("unvetted") or []
    if unvetted:  # "no class 4 package" alone would read as safe: these were never looked at
        verdict += f"; {len(unvetted)} not vetted: {', '.join(unvetted)}"
    partial = doc.get("partial") or []
    if partial:  # read in part: the class shown is a floor
        verdict += f"; {len(partial)} not fully vetted (partial read): {', '.join(partial)}"
    return verdict


def _stack_notes(doc: dict[str, Any]) -> list[str]:
    """Lines under the first: a PyTorch build that uses no GPU, lines skipped for this platform."""
    notes = []
    if doc.get("cpu_only_torch"):
        notes.append(f"{doc['cpu_only_torch']} is a CPU build of PyTorch: nothing in this stack will use the GPU")
    skipped = doc.get("skipped") or []
    if skipped:
        shown = "; ".join(skipped[:3]) + (f"; and {len(skipped) - 3} more" if len(skipped) > 3 else "")
        notes.append(f"{len(skipped)} requirement line(s) not for this platform (marker false here): {shown}")
    return notes


def _targets_cell(row: dict[str, Any]) -> str | None:
    """The gfx targets, per variant when the binaries come in variants (``rocm64: gfx90a ...``)."""
    by_variant: dict[str, list[str]] = row.get("gfx_variants") or {}
    if not by_variant:
        return ", ".join(row.get("gfx_targets") or []) or None
    common = set.intersection(*(set(t) for t in by_variant.values()))
    groups: dict[tuple[str, ...], list[str]] = {}  # the targets beyond the common ones -> variants
    for variant, targets in by_variant.items():
        groups.setdefault(tuple(t for t in targets if t not in common), []).append(variant)
    shown = [f"every variant ({len(by_variant)}): " + ", ".join(t for t in row["gfx_targets"] if t in common)]
    shown += [f"{', '.join(vs)}: + {', '.join(extra)}" for extra, vs in groups.items() if extra]
    return "; ".join(shown)
