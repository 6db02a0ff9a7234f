"""The coverage map: per op, which values of which dimension some row exercised, and which none did.

Computed when the table is built (not stored in the report): every record may carry
``info["op"]`` and ``info["dims"]`` (``{dimension: value label}``, the boundary suite's rows and the
OpInfo/ModuleInfo corpus rows record them; a hand-written sweep may too). A row *exercised* its
values when it ran to a verdict (passed, failed, error...); a skipped row's values are listed as
skipped, not as checked. The values an op *could* have had come from the boundary catalogue
(``pytest_rocm.coverage.catalogue``, the full profile's values): a value no row tried is listed as
not checked, and a catalogue op no row reached at all is listed as not reached. For ops outside the
catalogue (the corpus's) only the values seen are known, so their "not checked" is what was
skipped.

Pure: report records in, a :class:`CoverageMap` out; ``markdown_section`` / ``html_section`` render it.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_rocm.coverage.catalogue import CATALOGUE
from pytest_rocm.coverage.catalogue_device import DEVICE_ROWS
from pytest_rocm.coverage.families import place

#: outcomes that mean the row ran to a verdict (its values were exercised)
RAN = ("passed", "xpassed", "failed", "error", "crashed", "timeout", "xfailed")
_DEVICE_FEATURES = frozenset(r.feature for r in DEVICE_ROWS)
#: record families whose op key is ``<prefix>/<op>`` (the corpus rows: ``opinfo/<op>[...]``)
CORPUS_PREFIXES = ("opinfo", "moduleinfo")


@dataclass
class OpCoverage:
    key: str
    #: the values each dimension could take (catalogue ops), else those seen
    values: dict[str, tuple[str, ...]]
    checked: dict[str, set[str]] = field(default_factory=dict)
    skipped: dict[str, set[str]] = field(default_factory=dict)
    rows_ran: int = 0
    rows_skipped: int = 0

    def not_checked(self, dim: str) -> list[str]:
        return [v for v in self.values.get(dim, ()) if v not in self.checked.get(dim, set())]


@dataclass
class CoverageMap:
    ops: list[OpCoverage]
    #: catalogue ops (``family/op``) no row of any report reached
    unreached: list[str]
    #: corpus ops (``opinfo/<op>``) the boundary generator does not vary: (key, why)
    not_varied: list[tuple[str, str]] = field(default_factory=list)
    #: device-profile rows no report ran (sizes a CPU cannot afford): (row, its memory cost)
    device_only: list[tuple[str, str]] = field(default_factory=list)


def op_key(record: Mapping[str, Any]) -> str | None:
    """``matmul/mm`` (a boundary row: ``info.family``/``info.op``), ``opinfo/add`` (a corpus row:
    ``info.corpus``, else its feature's prefix), else ``info.op``; None for a record without ``info.op``."""
    info = record.get("info") or {}
    op = info.get("op") if isinstance(info, dict) else None
    if not isinstance(op, str) or not op:
        return None
    family = info.get("family")
    if isinstance(family, str) and family:
        return f"{family}/{op}"
    corpus = info.get("corpus")
    prefix = corpus if corpus in CORPUS_PREFIXES else str(record.get("feature") or "").split("/", 1)[0]
    return f"{prefix}/{op}" if prefix in CORPUS_PREFIXES else op


def coverage_map(reports: Sequence[Mapping[str, Any]]) -> CoverageMap | None:
    """The map over every record of every report; None when no record carries ``info.dims``."""
    ops: dict[str, OpCoverage] = {}
    classes: dict[str, str] = {}
    any_dims = boundary = False
    ran_features: set[str] = set()
    for report in reports:
        for record in report.get("results") or []:
            if record.get("outcome") in RAN:
                ran_features.add(str(record.get("feature")))
            key = op_key(record)
            dims = (record.get("info") or {}).get("dims")
            if key is None or not isinstance(dims, dict):
                continue
            any_dims = True
            boundary = boundary or key in CATALOGUE
            if record.get("feature") in _DEVICE_FEATURES:  # listed on their own, not as catalogue values
                continue
            entry_class = (record.get("info") or {}).get("entry_class")
            if isinstance(entry_class, str):
                classes[key] = entry_class
            space = CATALOGUE.get(key)
            entry = ops.setdefault(key, OpCoverage(key, space.all_values() if space else {}))
            ran = record.get("outcome") in RAN
            entry.rows_ran += ran
            entry.rows_skipped += not ran
            target = entry.checked if ran else entry.skipped
            for dim, value in dims.items():
                target.setdefault(str(dim), set()).add(str(value))
                if space is None and str(value) not in entry.values.get(str(dim), ()):
                    entry.values[str(dim)] = (*entry.values.get(str(dim), ()), str(value))
    if not any_dims:
        return None
    reached = {k for k, e in ops.items() if e.rows_ran}
    unreached = [k for k in CATALOGUE if k not in reached]
    # only beside boundary rows: a table of hand-written sweeps or corpus rows does not list them
    device_only = [
        (r.feature, r.cost().text()) for r in DEVICE_ROWS if r.feature not in ran_features
    ] if boundary else []  # fmt: skip
    return CoverageMap(sorted(ops.values(), key=lambda e: e.key), unreached, _not_varied(ops, classes), device_only)


def _not_varied(ops: Mapping[str, OpCoverage], classes: Mapping[str, str]) -> list[tuple[str, str]]:
    """The corpus ops of the records that no catalogue op varies, each with why (coverage.families)."""
    out = []
    for key in sorted(ops):
        prefix, _, name = key.partition("/")
        if prefix not in CORPUS_PREFIXES:
            continue
        placement = place(prefix, name, classes.get(key, ""))
        if placement.varied_as is None:
            out.append((key, placement.why))
    return out


def _dims(entry: OpCoverage) -> list[str]:
    return list(dict.fromkeys([*entry.values, *entry.checked, *entry.skipped]))


def summary_line(cov: CoverageMap) -> str:
    values = sum(len(e.values.get(d, ())) for e in cov.ops for d in _dims(e))
    unchecked = sum(len(e.not_checked(d)) for e in cov.ops for d in _dims(e))
    return (
        f"{len(cov.ops)} ops with recorded dimensions; {values - unchecked} of {values} dimension values "
        f"checked, {unchecked} not checked; {len(cov.unreached)} ops of the boundary catalogue not reached"
        + (f"; {len(cov.not_varied)} corpus ops not varied by the generator" if cov.not_varied else "")
        + (f"; {len(cov.device_only)} device-profile rows not run." if cov.device_only else ".")
    )


_DEVICE_SUMMARY = (
    "<details><summary>Device profile only ({n} rows not run: sizes a CPU cannot afford; they run in "
    "<code>full</code> on a GPU with the memory, e.g. benchmarks/gpu_run.sh)</summary>"
)


def _esc(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_section(cov: CoverageMap) -> list[str]:
    """``## Coverage``: not-reached ops first, then per op and dimension the values checked and not."""
    out = ["", "## Coverage", "", summary_line(cov), ""]
    if cov.unreached:
        out += [f"**Not reached by any row** ({len(cov.unreached)}): " + ", ".join(cov.unreached), ""]
    if cov.not_varied:
        out += [
            f"<details><summary>Not varied by the boundary generator ({len(cov.not_varied)} corpus ops)</summary>",
            "",
            *(f"- {_esc(key)}: {_esc(why)}" for key, why in cov.not_varied),
            "",
            "</details>",
            "",
        ]
    if cov.device_only:
        out += [_DEVICE_SUMMARY.format(n=len(cov.device_only)), "", *(f"- {_esc(f)}: {c}" for f, c in cov.device_only)]
        out += ["", "</details>", ""]
    out += [
        "<details><summary>Per op and dimension: values checked / not checked</summary>",
        "",
        "| op | rows run | dimension | checked | not checked |",
        "|---|---:|---|---|---|",
    ]
    for entry in cov.ops:
        for dim in _dims(entry):
            checked = [v for v in entry.values.get(dim, ()) if v in entry.checked.get(dim, set())]
            missing = entry.not_checked(dim)
            skipped = [v for v in missing if v in entry.skipped.get(dim, set())]
            missing_text = ", ".join(f"{v} (skipped)" if v in skipped else v for v in missing)
            out.append(
                f"| {_esc(entry.key)} | {entry.rows_ran} | {_esc(dim)} | {_esc(', '.join(checked)) or '—'} "
                f"| {_esc(missing_text) or '—'} |"
            )
    out += ["", "</details>"]
    return out


def html_section(cov: CoverageMap) -> str:
    e = html.escape
    parts = [f"<h2>Coverage</h2><section id=coverage><p>{e(summary_line(cov))}</p>"]
    if cov.unreached:
        parts.append(
            f"<p><strong>Not reached by any row</strong> ({len(cov.unreached)}): {e(', '.join(cov.unreached))}</p>"
        )
    if cov.not_varied:
        items = "".join(f"<li>{e(key)}: {e(why)}</li>" for key, why in cov.not_varied)
        parts.append(
            f"<details><summary>Not varied by the boundary generator ({len(cov.not_varied)} corpus ops)</summary>"
            f"<ul>{items}</ul></details>"
        )
    if cov.device_only:
        items = "".join(f"<li>{e(f)}: {e(c)}</li>" for f, c in cov.device_only)
        parts.append(f"{_DEVICE_SUMMARY.format(n=len(cov.device_only))}<ul>{items}</ul></details>")
    parts.append(
        "<details><summary>Per op and dimension: values checked / not checked</summary><table>"
        "<thead><tr><th>op</th><th>rows run</th><th>dimension</th><th>checked</th><th>not checked</th></tr></thead><tbody>"
    )
    for entry in cov.ops:
        for dim in _dims(entry):
            checked = [v for v in entry.values.get(dim, ()) if v in entry.checked.get(dim, set())]
            missing = entry.not_checked(dim)
            cls = " class=unchecked" if missing else ""
            parts.append(
                f"<tr{cls}><td>{e(entry.key)}</td><td>{entry.rows_ran}</td><td>{e(dim)}</td>"
                f"<td>{e(', '.join(checked)) or '—'}</td><td>{e(', '.join(missing)) or '—'}</td></tr>"
            )
    parts.append("</tbody></table></details></section>")
    return "".join(parts)
