"""``rocm-compat diff``'s text: each section's count, then every entry with the node id to run
again (``report.diff`` decides what the sections hold; this module only words them).
"""

from __future__ import annotations

from pytest_rocm.report.diff import BrokenRecord, Change, Diff
from pytest_rocm.report.growth import growth_figure
from pytest_rocm.report.load import metric
from pytest_rocm.report.outcomes import GOOD

PASSING = GOOD


#: how many entries of a section the text lists before "... and N more" (``--show-all``: all)
SHOW_LIMIT = 20


def render_text(
    diff: Diff,
    base_label: str,
    candidate_label: str,
    factor: float,
    max_slowdown: float | None = None,
    limit: int | None = SHOW_LIMIT,
) -> str:
    """The diff in words: each section's count, then every entry with the node id to run again
    (``limit`` entries a section, then how many more; None: all)."""
    lines = [f"BASE      {base_label}", f"CANDIDATE {candidate_label}", ""]
    if diff.selection:  # first: every count below depends on it
        lines.insert(0, selection_line(diff))
    lines[0:0] = [f"NOTE: {note}" for note in diff.notes]

    def listed(entries: list[tuple[str, str | None]]) -> None:
        shown = entries if limit is None else entries[:limit]
        for text, nodeid in shown:
            lines.append(f"  {text}")
            if nodeid and nodeid not in text:  # to run exactly that test again
                lines.append(f"    {nodeid}")
        if len(shown) < len(entries):
            lines.append(f"  ... and {len(entries) - len(shown)} more (--show-all lists them)")

    def section(title: str, items: list[Change]) -> None:
        lines.append(f"{title}: {len(items)}")
        entries = []
        for c in items:
            first = c.reason.strip().splitlines()[0] if c.reason and c.reason.strip() else ""
            why = f"  -- {first}" if first and c.candidate not in PASSING else ""  # one line: the node id follows
            entries.append((f"{c.feature}: {c.base or 'absent'} -> {c.candidate or 'missing'}{why}", c.nodeid))
        listed(entries)

    section("regressions", diff.regressions)
    lines.append(f"parity records that broke (ok in BASE, not ok in CANDIDATE): {len(diff.broken_records)}")
    listed([(broken_text(b), b.nodeid) for b in diff.broken_records])
    section("new failing tests", diff.new_failures)
    section("fixes", diff.fixes)
    section("new skips", diff.new_skips)
    lines.append(f"parity errors grown more than {factor:g}x: {len(diff.grown_errors)}")
    listed(
        [
            (
                f"{g.feature} {g.dtype}{f' {g.name}' if g.name else ''}: {g.base:.2e} -> {g.candidate:.2e}"
                f" ({growth_figure(g.factor)})",
                diff.nodeids.get(g.feature),
            )
            for g in diff.grown_errors
        ]
    )
    if not diff.speed_compared and not diff.slowdowns and not diff.noisy:
        lines.append(speed_not_compared(diff))
    elif diff.slowdowns or diff.noisy or max_slowdown is not None:
        over = f" more than {max_slowdown:g}x" if max_slowdown is not None else ""
        lines.append(f"slowdowns{over}: {len(diff.slowdowns)}{partly_compared(diff)}")
        listed(
            [
                (
                    f"{s.feature}: {_ms(s.base_s)} -> {_ms(s.candidate_s)} ({s.factor:.2f}x slower, noise ±{s.noise:.0%})"
                    if s.comparable
                    # BASE's time is 0 or not finite: no ratio, and no pass either
                    else f"{s.feature}: {s.base_s!r} s -> {_ms(s.candidate_s)} (not comparable: base time is 0 or not finite)",
                    diff.nodeids.get(s.feature),
                )
                for s in diff.slowdowns
            ]
        )
        if diff.noisy:
            lines.append(
                f"noisy (slower, but within the recorded spread or timed on a busy machine): {len(diff.noisy)}"
            )
            listed(
                [
                    (
                        f"{s.feature}: {_ms(s.base_s)} -> {_ms(s.candidate_s)} ({s.factor:.2f}x, spread ±{s.noise:.0%}"
                        + (
                            f", busy machine: waited for a core {s.busy:.0%} of the time)"
                            if s.busy is not None
                            else ")"
                        ),
                        diff.nodeids.get(s.feature),
                    )
                    for s in diff.noisy
                ]
            )
    lines.append(f"new tests in the candidate: {len(diff.new_tests)}")
    listed([(f"{c.feature}: {c.candidate}", c.nodeid) for c in diff.new_tests])
    return "\n".join(lines) + "\n"


def speed_not_compared(diff: Diff) -> str:
    """``slowdowns: speed not compared: no row measured in both reports (12 rows could have been;
    measured: BASE 0, CANDIDATE 0)``: never "0 slowdowns" when nothing was timed."""
    return (
        f"slowdowns: speed not compared: no row measured in both reports ({diff.speed_comparable}"
        f" {'row' if diff.speed_comparable == 1 else 'rows'} could have been; measured: BASE {diff.measured_base},"
        f" CANDIDATE {diff.measured_candidate})"
    )


def partly_compared(diff: Diff) -> str:
    """`` (compared the 2 rows measured in both; measured: BASE 10, CANDIDATE 2)`` where a report
    measured rows the other did not: those were not compared, and the count says so."""
    if diff.speed_compared >= max(diff.measured_base, diff.measured_candidate):
        return ""
    rows = "row" if diff.speed_compared == 1 else "rows"
    return (
        f" (compared the {diff.speed_compared} {rows} measured in both; measured: BASE {diff.measured_base},"
        f" CANDIDATE {diff.measured_candidate})"
    )


def broken_text(broken: BrokenRecord) -> str:
    """``tests/t::test_x bfloat16 gelu.grad[0]: ok -> not ok (error 2.1e-03 -> 9.4e-03)``: which
    record of which test (a second record of the same dtype and name: ``#2``)."""
    which = " ".join(p for p in (broken.dtype, broken.name, f"#{broken.index + 1}" if broken.index else "") if p)
    if broken.candidate is None:
        return f"{broken.feature} {which}: ok -> not recorded (the test failed before recording it)"
    was, now = metric(broken.base), metric(broken.candidate)
    figures = f" (error {was:.1e} -> {now:.1e})" if was is not None and now is not None else ""
    return f"{broken.feature} {which}: ok -> not ok{figures}"


def selection_line(diff: Diff) -> str:
    """``NOT COMPARABLE AS A WHOLE: CANDIDATE ran a subset (-k 'add'): compared the tests both ran,
    397 not selected in one of them (--strict-selection compares all)``."""
    if diff.strict_selection:
        return f"NOT COMPARABLE AS A WHOLE: {diff.selection}: compared as if complete (--strict-selection)"
    return (
        f"NOT COMPARABLE AS A WHOLE: {diff.selection}: compared the tests both ran,"
        f" {len(diff.not_selected)} not selected in one of them (--strict-selection compares all)"
    )


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms"
