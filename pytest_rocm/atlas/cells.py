"""The atlas index's cells and notes: which run a cell stands for (the most complete of its
combination, named, with the latest beside it when that is another) and what the index warns of."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from html import escape

from pytest_rocm.atlas.model import FAIL, PASS, Atlas, Run, shown_runs, state_of, version_key

#: the outcomes that make an index cell red (xfailed: a failure the suite expects, amber)
HARD_FAILURES = frozenset({"failed", "error", "crashed", "timeout"})


def _e(text: object) -> str:
    return escape(str(text), quote=True)


def counts_of(atlas: Atlas, wanted: set[int]) -> dict[int, Counter[str]]:
    """Per run of ``wanted``: its rows by state (pass, fail, skip) and its hard failures."""
    counts: dict[int, Counter[str]] = {index: Counter() for index in wanted}
    for results in atlas.rows.values():
        for result in results:
            if result.run in counts:
                counts[result.run][state_of(result.outcome)] += 1
                counts[result.run]["hard"] += result.outcome in HARD_FAILURES
    return counts


def _tally(run: Run, c: Counter[str]) -> tuple[str, str]:
    """(the class, ``5/8 passed``) of a run's rows: red for a real failure, amber for an expected one
    (xfailed) only, as in the cells; skips not counted."""
    judged = c[PASS] + c[FAIL]
    cls = "failed" if c["hard"] else "xfailed" if c[FAIL] else "passed" if judged else "skipped"
    return cls, f"{c[PASS]}/{judged} passed"


def index_cell(runs: Sequence[Run], counts: dict[int, Counter[str]]) -> str:
    """An index cell: the most complete run of the combination, named (label, date, what it ran),
    and the latest run under it where that is another one (``latest: 5/8 passed, ...``)."""
    shown, latest = shown_runs(runs)
    cls, said = _tally(shown, counts[shown.index])
    machines = len({r.where for r in runs})
    text = (
        f'<td class="{cls}" title="{_e(shown.label)}, {_e(shown.day)}, {_e(shown.scope)}, {_e(shown.source)}">{said}'
        f"<br><small>{_e(shown.label)}, {_e(shown.day)} ({_e(shown.scope)})"
        f"<br>{len(runs)} run(s) on {machines} machine(s)</small>"
    )
    if latest is not None:
        late_cls, late_said = _tally(latest, counts[latest.index])
        text += (
            f'<br><small class="{late_cls}" title="{_e(latest.label)}, {_e(latest.day)}, {_e(latest.scope)}, {_e(latest.source)}">'
            f"latest: {late_said}, {_e(latest.label)}, {_e(latest.day)} ({_e(latest.scope)})</small>"
        )
    return text + "</td>"


def notes_of(atlas: Atlas) -> list[str]:
    """The index's notes: reports of different pytest-rocm versions (only where the versions they
    record differ: a report that records none is said apart, not counted as another version), and
    files not read."""
    notes = []
    tools = sorted({r.tool for r in atlas.runs if r.tool}, key=version_key)
    if len(tools) > 1:
        notes.append(
            f"reports written by different pytest-rocm versions ({', '.join(tools)}): rows may be named or judged differently"
        )
    unrecorded = sum(1 for r in atlas.runs if not r.tool)
    if unrecorded and tools:
        notes.append(
            f"{unrecorded} report(s) do not record the pytest-rocm version that wrote them (see runs): "
            "their rows may be named or judged differently"
        )
    if atlas.unread:
        notes.append(f"{len(atlas.unread)} file(s) not read (see runs)")
    return notes
