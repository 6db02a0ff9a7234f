"""``rocm-compat repro``'s logic: which rows of a report failed on their numbers, one standalone
script per failed call (the template with a literal spec), and ``ISSUE.md``. Pure (no torch, no files).

A script's only varying part is one ``SPEC = {...}`` line: ``repr()`` of the spec that
``repro.spec.read_spec`` checked (plain dicts, lists, strings, ints, finite floats, bools, None),
proven a literal by ``ast.literal_eval`` before it is written: a report's text never becomes code.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.resources
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_rocm.parity.reading import describe, read_parity
from pytest_rocm.repro.spec import SpecError, read_spec

#: the template's line the spec replaces
SPEC_LINE = "SPEC: dict[str, Any] = {}  # rocm-compat repro: SPEC\n"
#: the template's line a corpus row's script has the corpus part at, and where that part starts
CORPUS_LINE = "# rocm-compat repro: CORPUS\n"
CORPUS_PART = "# rocm-compat repro: CORPUS PART\n"
#: where a script lands, and its file name's length at most
MAX_STEM = 80


@dataclass
class Script:
    """One failed call of one row, rebuilt: ``file`` is its name in the output directory."""

    nodeid: str
    file: str
    source: str
    op: str
    #: dtype -> what the report recorded for it (``parity.reading.describe``)
    figures: dict[str, str]


@dataclass
class Refused:
    """A row (or one call of it) that cannot be rebuilt, and why."""

    nodeid: str
    why: str


@dataclass
class Plan:
    scripts: list[Script] = field(default_factory=list)
    refused: list[Refused] = field(default_factory=list)


def failed_calls(result: Mapping[str, Any]) -> list[tuple[Any, list[Mapping[str, Any]]]]:
    """A row's failed parity checks: (the spec or None, the failed records of that check). A call's
    spec is on its first failed record (``ParityResult.records``); the failed records after it, up
    to the next spec, are the same call's."""
    calls: list[tuple[Any, list[Mapping[str, Any]]]] = []
    for record in result.get("parity") or []:
        if not isinstance(record, Mapping) or record.get("ok") is not False:
            continue
        if "repro" in record or not calls:
            calls.append((record.get("repro"), [record]))
        else:
            calls[-1][1].append(record)
    return calls


def _stem(nodeid: str) -> str:
    """A file name for a node id: its readable part, and a hash of the whole so two never collide."""
    readable = re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid.rsplit("/", 1)[-1]).strip("._-")[: MAX_STEM - 12]
    digest = hashlib.sha256(nodeid.encode()).hexdigest()[:8]
    return f"repro_{readable}_{digest}" if readable else f"repro_{digest}"


def _figures(records: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    found: dict[str, list[str]] = {}
    for record in records:
        reading = read_parity(record)
        output = f"{reading.name}: " if reading.name else ""
        found.setdefault(reading.dtype, []).append(output + describe(reading))
    return {dtype: "; ".join(parts)[:400] for dtype, parts in found.items()}


def script_source(spec: Mapping[str, Any], title: str, device: str, figures: Mapping[str, str], template: str) -> str:
    """The script: ``template`` with its SPEC line replaced by the checked spec as a literal."""
    data = dict(read_spec(spec))
    data |= {"title": str(title)[:300], "device": device, "recorded": {str(k): str(v) for k, v in figures.items()}}
    literal = repr(data)
    if ast.literal_eval(literal) != data:  # the proof that the line is data: a literal that reads back
        raise SpecError("the spec does not read back as a Python literal")
    if template.count(SPEC_LINE) != 1 or template.count(CORPUS_LINE) != 1:
        raise RuntimeError("the reproducer template has lost its SPEC or CORPUS line")
    part = ""
    if "corpus" in data:  # the sample is rebuilt from torch's own database: the part that does it
        text = _resource("template_corpus.py")
        part = text[text.index(CORPUS_PART) :]
    return template.replace(SPEC_LINE, f"SPEC: dict[str, Any] = {literal}\n").replace(CORPUS_LINE, part)


def corpus_name(corpus: Mapping[str, Any]) -> str:
    """``OpInfo exp (variant default, float16, sample s1 of torch 2.13.0)``: what names a corpus row's sample."""
    kind = "OpInfo" if corpus["db"] == "opinfo" else "ModuleInfo"
    return (
        f"{kind} {corpus['name']} (variant {corpus['variant']}, {corpus['dtype']}, sample {corpus['sample']}"
        f" of torch {corpus['torch']})"
    )


def _resource(name: str) -> str:
    return importlib.resources.files("pytest_rocm.repro").joinpath(name).read_text(encoding="utf-8")


def template_text() -> str:
    return _resource("template.py")


def plan(report: Mapping[str, Any], rows: Sequence[str], device: str) -> Plan:
    """The scripts for ``rows`` (every row with a failed parity check when empty) and the refusals.
    A named row that is not in the report, or has no failed parity check, is refused with why."""
    out = Plan()
    results = [r for r in report.get("results") or [] if isinstance(r, Mapping) and isinstance(r.get("nodeid"), str)]
    by_id = {r["nodeid"]: r for r in results}
    wanted = list(rows) or [r["nodeid"] for r in results if failed_calls(r)]
    template = template_text()
    torch_version = (report.get("environment") or {}).get("torch")
    for nodeid in wanted:
        result = by_id.get(nodeid)
        if result is None:
            out.refused.append(Refused(nodeid, "no such row in the report"))
            continue
        calls = failed_calls(result)
        if not calls:
            out.refused.append(Refused(nodeid, "no failed parity check in this row (not a numbers failure)"))
            continue
        stem = _stem(nodeid)
        for n, (spec, records) in enumerate(calls):
            if spec is None:
                why = "the report recorded no reproducer spec (a test's own record, or a report from before repro)"
                out.refused.append(Refused(nodeid, why))
                continue
            figures = _figures(records)
            name = read_parity(records[0]).name or "op"
            try:
                checked = read_spec(spec)
                corpus = checked.get("corpus")
                op = corpus_name(corpus) if corpus else str(checked["op"])
                title = f"reproducer of {nodeid} ({corpus_name(corpus) if corpus else name}); made by torch"
                source = script_source(checked, f"{title} {torch_version or '(unknown)'}", device, figures, template)
            except SpecError as exc:
                out.refused.append(Refused(nodeid, str(exc)))
                continue
            file = f"{stem}.py" if n == 0 else f"{stem}_{n + 1}.py"
            out.scripts.append(Script(nodeid, file, source, op, figures))
    return out
