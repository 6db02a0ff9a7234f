"""A fleet's reports as one data set: runs (which machine, when, with what) and, per row, what each
run measured. What the atlas pages show is computed here, torch-free and I/O-free.

- a **run** is one report: its column label, run date (``created``), machine (id, host when
  named), tool version, and the environment facts the index is keyed by: the gfx of the device
  under test (``cpu`` for a CPU baseline), the ROCm and torch versions;
- a **combination** is what a run ran, without the machine: ``rocm torch2.6.0 rocm6.2.4``;
- a row's **history** on a gfx is its outcomes in date order; collapsed to its changes it says
  when the row was first seen failing, when it broke after passing, and in which run (combination,
  date) it was fixed.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from packaging.version import InvalidVersion, Version

from pytest_rocm.report.fleet import machine_of, tool_version_of
from pytest_rocm.report.outcomes import BAD, EXPECTED, GOOD
from pytest_rocm.report.selection import subset_text

#: a row's state in the history: passing, failing, or not judged (skipped, not installed, not run)
PASS, FAIL, SKIP = "pass", "fail", "skip"


def state_of(outcome: str) -> str:
    # xfailed is judged (a known failure; its cell is coloured as such): outcomes.BAD no longer holds it
    return PASS if outcome in GOOD else FAIL if outcome in BAD or outcome in EXPECTED else SKIP


@dataclass(frozen=True)
class Run:
    index: int
    source: str
    label: str
    date: str
    machine: str
    host: str | None
    tool: str | None
    gfx: str
    rocm: str
    torch: str
    backend: str
    #: a run stopped early or killed (its report says so; a sidecar is always one): partial results
    interrupted: bool = False
    #: how many results the report holds (what was run: a 10-test project is not the full suite)
    rows: int = 0
    #: how the run narrowed its suite (``-k 'add', 12 deselected``); None for a whole-suite run
    subset: str | None = None

    @property
    def combination(self) -> str:
        """``rocm torch2.6.0 rocm6.2.4`` (the run without its machine and gfx)."""
        parts = [self.backend, f"torch{self.torch}" if self.torch else "torch?"]
        if self.rocm:
            parts.append(f"rocm{self.rocm}")
        return " ".join(parts)

    @property
    def day(self) -> str:
        return self.date[:10] if self.date else "undated"

    @property
    def where(self) -> str:
        return f"{self.machine} ({self.host})" if self.host else self.machine

    @property
    def completeness(self) -> tuple[bool, bool, int, int]:
        """Orders the runs of one index cell, most complete last: a finished run before an
        interrupted one, a whole-suite run before a subset, more rows before fewer, then the later."""
        return (not self.interrupted, self.subset is None, self.rows, self.index)

    @property
    def scope(self) -> str:
        """``1,024 rows``, ``10 rows, subset: -k 'add'``, ``12 rows, interrupted``: what the run was."""
        said = [f"{self.rows:,} row{'s' if self.rows != 1 else ''}"]
        if self.subset:
            said.append(f"subset: {self.subset}")
        if self.interrupted:
            said.append("interrupted")
        return ", ".join(said)


def version_key(text: str) -> tuple[int, Any]:
    """Versions in release order (2.6 before 2.10); text that is not a version after them."""
    try:
        return (0, Version(text))
    except InvalidVersion:
        return (1, text)


def combination_key(run: Run) -> tuple[Any, ...]:
    """Combinations in the order they came out: backend, then torch, then ROCm by version."""
    return (run.backend, version_key(run.torch), version_key(run.rocm))


@dataclass(frozen=True)
class Result:
    run: int
    outcome: str
    reason: str | None


@dataclass(frozen=True)
class Change:
    """One change of a row's state on a gfx: ``first seen`` (the first run), ``broke``, ``fixed``."""

    kind: str
    state: str
    run: int


@dataclass
class Atlas:
    runs: list[Run]
    #: (suite, feature) -> its results, in run (date) order
    rows: dict[tuple[str, str], list[Result]] = field(default_factory=dict)
    #: files that were not reports, or not valid ones: (file, why)
    unread: list[tuple[str, str]] = field(default_factory=list)

    def gfx_list(self) -> list[str]:
        return sorted({r.gfx for r in self.runs}, key=lambda g: (g == "cpu", g))

    def runs_on(self, gfx: str) -> list[Run]:
        return [r for r in self.runs if r.gfx == gfx]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


class RunError(ValueError):
    """A report whose run cannot be placed (a device string that names no device); one line."""


#: the device strings a report holds: ``cpu``, ``cuda`` / ``cuda:N`` (torch spells ROCm ``cuda``),
#: ``hip:N``; ASCII digits only (``cuda:²`` is a digit to str.isdigit, not to int())
_DEVICE = re.compile(r"(?:cuda|hip)(?::([0-9]+))?", re.ASCII)


def device_index(device: Any) -> int | None:
    """The index of the device under test (``cuda:1`` -> 1, ``cuda`` or none -> 0); None for the
    CPU; RunError for a device string that is not one of these."""
    if device is None:
        return 0
    if device == "cpu":
        return None
    found = _DEVICE.fullmatch(device) if isinstance(device, str) else None
    if found is None:
        raise RunError(f"device {device!r:.40} is not 'cpu', 'cuda' or 'cuda:N'")
    return int(found.group(1) or 0)


def run_of(index: int, source: str, document: Mapping[str, Any]) -> Run:
    """The run of a report; RunError when it cannot be placed (said as a report not read)."""
    env = document.get("environment") if isinstance(document.get("environment"), Mapping) else {}
    assert isinstance(env, Mapping)
    wanted = device_index(document.get("device"))
    devices = [d for d in env.get("devices") or [] if isinstance(d, Mapping)]
    on_cpu = wanted is None or not devices or env.get("backend") == "cpu"
    if on_cpu:
        gfx = "cpu"
    else:
        # the device the run tested; a report that lists other devices only names no gfx for it
        chosen = next((d for d in devices if d.get("index") == wanted), None)
        gfx = (_text(chosen.get("gfx")) or _text(chosen.get("arch")) if chosen else "") or "unknown"
    machine = machine_of(document)
    return Run(
        index=index,
        source=source,
        label=_text(document.get("label")),
        date=_text(document.get("created")),
        machine=str(machine["id"]),
        host=machine.get("host"),
        tool=tool_version_of(document),
        gfx=gfx,
        rocm="" if on_cpu else _text(env.get("rocm")),
        torch=_text(env.get("torch")).split("+", 1)[0],
        backend="cpu" if on_cpu else _text(env.get("backend")) or "rocm",
        interrupted=document.get("interrupted") is True,
        rows=len(document.get("results") or []),
        subset=subset_text(document),
    )


def build_atlas(documents: Iterable[tuple[str, Mapping[str, Any]]], unread: Sequence[tuple[str, str]] = ()) -> Atlas:
    """The atlas of ``(source, report)`` pairs, read one at a time and kept compact (a fleet's
    1,000 reports of 1,000 rows are a million results); runs in date order (then label, file)."""
    loaded: list[tuple[tuple[str, str, str], Run, list[tuple[str, str, str, str | None]]]] = []
    not_placed: list[tuple[str, str]] = []
    for source, document in documents:
        try:
            run = run_of(0, source, document)
        except RunError as exc:
            not_placed.append((source, f"{source}: {exc}"))
            continue
        results = []
        for record in document.get("results") or []:
            reason = record.get("reason")
            results.append(
                (
                    sys.intern(_text(record.get("suite"))),
                    sys.intern(_text(record.get("feature"))),
                    sys.intern(_text(record.get("outcome"))),
                    reason[:300] if isinstance(reason, str) else None,
                )
            )
        loaded.append(((run.date, run.label, source), run, results))
    loaded.sort(key=lambda item: item[0])
    atlas = Atlas(runs=[], unread=[*unread, *not_placed])
    for position, (_, run, results) in enumerate(loaded):
        atlas.runs.append(replace(run, index=position))
        for suite, feature, outcome, reason in results:
            atlas.rows.setdefault((suite, feature), []).append(Result(position, outcome, reason))
    return atlas


def shown_runs(runs: Sequence[Run]) -> tuple[Run, Run | None]:
    """The run an index cell shows, and the latest one when that is another: the most complete
    (:attr:`Run.completeness`), so a 10-test run of one project after the full suite does not
    stand for the combination; the later, smaller run is still shown beside it."""
    shown = max(runs, key=lambda r: r.completeness)
    latest = max(runs, key=lambda r: r.index)
    return shown, (latest if latest is not shown else None)


def changes(results: Sequence[Result]) -> list[Change]:
    """A row's history collapsed to its changes (skips neither break nor fix it): the first judged
    run, then every turn from passing to failing (``broke``) and back (``fixed``)."""
    out: list[Change] = []
    last: str | None = None
    for result in results:
        state = state_of(result.outcome)
        if state == SKIP:
            continue
        if last is None:
            out.append(Change("first seen", state, result.run))
        elif state != last:
            out.append(Change("fixed" if state == PASS else "broke", state, result.run))
        last = state
    return out


def latest_by(results: Sequence[Result], runs: Sequence[Run], key: str) -> dict[str, Result]:
    """The last result of a row per run attribute (``combination``, ``gfx``): what holds now."""
    latest: dict[str, Result] = {}
    for result in results:  # date order: a later one replaces an earlier one
        latest[getattr(runs[result.run], key)] = result
    return latest


def library_of(suite: str, feature: str) -> str:
    """The page a row is on: its library for ``libraries/<kind>/<library>/...`` rows, else its suite."""
    parts = feature.split("/")
    if suite == "libraries" and len(parts) >= 4:
        return parts[2]
    return suite or parts[0]
