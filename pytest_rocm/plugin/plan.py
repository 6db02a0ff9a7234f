"""Plans (``--rocm-gfx`` with no device here): the versions a plan assumes, the reason every test
that needs a device skips with, and the summary that counts what would run.

A plan never executes a test against the wrong hardware: each test that needs a device (a device
marker, or the ``rocm_device``/``parity`` fixtures) is decided by its markers as on that
architecture, then skipped with ``would run on gfx942 (plan)``. The summary says how many would
run there and how many would skip, by reason. Versions come from ``--rocm-plan-rocm``,
``--rocm-plan-torch`` or ``--rocm-plan-combo`` (a combination of ``matrix/combos.toml``). Pure but
for reading the bundled combos file; pytest only in the option's error type (raised by the caller).
"""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from packaging.version import InvalidVersion, Version

from pytest_rocm.report.outcomes import is_not_installed

if TYPE_CHECKING:
    from pytest_rocm.matrix import Combo

#: the tail of a skip reason that means "this test was decided and would run" (test it, not the whole text)
PLAN_TAG = "(plan)"
#: how many skip reasons the summary lists one by one (the rest are counted together)
SHOWN_REASONS = 8


def would_run(gfx: str, xfail: str | None = None, wheel_gap: str = "") -> str:
    """The skip reason of a test that would run on the plan's architecture; with ``wheel_gap`` (the
    planned wheel has no kernels for it) the test would not run there, and the reason says why."""
    if wheel_gap:
        return f"would fail on {gfx}: {wheel_gap}"
    if xfail:
        return f"would run on {gfx} {PLAN_TAG}, expected to fail there: {xfail}"
    return f"would run on {gfx} {PLAN_TAG}"


def parse_version_option(text: str) -> str:
    """``6.2`` -> ``6.2`` (a PEP 440 version, ASCII); ValueError otherwise."""
    value = str(text).strip()
    try:
        if not value.isascii():
            raise InvalidVersion(value)
        Version(value)
    except InvalidVersion:
        raise ValueError("expected a version such as 6.2 or 2.6.0") from None
    return value


@dataclass(frozen=True)
class PlanVersions:
    rocm: str | None = None
    torch: str | None = None
    #: where they came from, for reasons ("--rocm-plan-combo=torch2.6-rocm6.2.4")
    source: str = ""
    #: the combination they came from, whose wheel the plan installs
    combo: str | None = None


@functools.cache  # the option's check and the selection both ask: the file is read once
def _bundled_combos() -> tuple[Combo, ...]:
    from pytest_rocm._resources import default_combos_path
    from pytest_rocm.matrix import load_combos

    return tuple(load_combos(default_combos_path()))


def parse_combo_option(text: str) -> PlanVersions:
    """A combination name of the bundled ``matrix/combos.toml`` -> its ROCm and torch versions;
    ValueError naming the known ROCm ones otherwise."""
    from pytest_rocm.matrix import ComboError

    name = str(text).strip()
    try:
        combos = _bundled_combos()
    except ComboError as exc:
        raise ValueError(str(exc)) from None
    rocm = {c.name: c for c in combos if c.backend == "rocm"}
    if name not in rocm:
        raise ValueError(f"no ROCm combination of that name in matrix/combos.toml (known: {', '.join(rocm)})")
    combo = rocm[name]
    torch = combo.torch.split("==", 1)[1] if "==" in combo.torch else None
    return PlanVersions(rocm=combo.rocm, torch=torch, combo=name)


def wheel_gap(combo_name: str, gfx: str) -> str:
    """Why the combination's torch wheel cannot run on ``gfx`` (data/torch_wheels.json: the gfx each
    wheel is built for), or "" when it can or the table does not know the wheel."""
    combo = next(c for c in _bundled_combos() if c.name == combo_name)
    verdict = combo.kernels_for(gfx)
    if verdict == "no":
        return f"the {combo_name} wheel has no {gfx} kernels (hipErrorNoBinaryForGpu at the first kernel)"
    if verdict == "override":
        return (
            f"the {combo_name} wheel has no {gfx} kernels; only HSA_OVERRIDE_GFX_VERSION to a target it carries "
            "would run it"
        )
    return ""


@dataclass
class PlanTally:
    """What a plan decided, counted from the test reports (the xdist controller sees them all)."""

    gfx: str
    would_run: int = 0
    would_xfail: int = 0
    ran_here: int = 0
    skips: Counter[str] = field(default_factory=Counter)

    def add(self, outcome: str, reason: str | None) -> None:
        text = (reason or "").removeprefix("Skipped: ")
        if outcome == "skipped" and PLAN_TAG in text:
            if "expected to fail there" in text:
                self.would_xfail += 1
            else:
                self.would_run += 1
        elif outcome == "skipped":
            self.skips["not installed" if is_not_installed(text) else text] += 1
        else:
            self.ran_here += 1

    def lines(self) -> list[str]:
        skipped = sum(self.skips.values())
        head = f"plan for {self.gfx}: {self.would_run} test(s) would run there"
        head += f" ({self.would_xfail} more expected to fail)" if self.would_xfail else ""
        head += f", {skipped} would skip"
        head += f"; {self.ran_here} need no device and ran here" if self.ran_here else ""
        out = [head]
        for reason, n in self.skips.most_common(SHOWN_REASONS):
            out.append(f"  {n:5d} skip: {reason}")
        rest = self.skips.most_common()[SHOWN_REASONS:]
        if rest:
            out.append(f"  {sum(n for _, n in rest):5d} skip: {len(rest)} other reason(s)")
        return out
