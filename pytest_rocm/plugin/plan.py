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
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from packaging.version import InvalidVersion, Version

from pytest_rocm.report.outcomes import NOT_INSTALLED_PREFIX, is_not_installed

if TYPE_CHECKING:
    from pytest_rocm.env.seam import Seam
    from pytest_rocm.matrix import Combo

#: the tail of a skip reason that means "this test was decided and would run" (test it, not the whole text)
PLAN_TAG = "(plan)"
#: how many skip reasons the summary lists one by one (the rest are counted together)
SHOWN_REASONS = 8
#: in :func:`architectures_here`: this machine has an NVIDIA GPU (its sm_ is not read without torch)
NVIDIA_HERE = "nvidia"
NVIDIA_GPUS = "/proc/driver/nvidia/gpus"


def architectures_here(seam: Seam | None = None) -> frozenset[str]:
    """The GPU architectures this machine's kernel shows (the KFD topology's gfx, ``nvidia`` for an
    NVIDIA driver's GPUs), read through the seam without torch: whether a recorded device is here."""
    from pytest_rocm.env.seam import Seam
    from pytest_rocm.env.system import read_kfd_gpus

    seam = seam or Seam()
    found = {g.gfx for g in read_kfd_gpus(seam, []) if g.gfx}
    try:
        if seam.is_dir(NVIDIA_GPUS) and seam.listdir(NVIDIA_GPUS):
            found.add(NVIDIA_HERE)
    except OSError:
        pass
    return frozenset(found)


@functools.cache
def product_memory(gfx: str) -> dict[str, int]:
    """The products of ``gfx`` and their memory in bytes (``data/vram.json``, AMD's table); {} unknown."""
    from pytest_rocm._resources import load_json

    sizes: dict[str, int] = load_json("vram.json")["gfx"].get(gfx, {})
    return {name: int(gib) << 30 for name, gib in sizes.items()}


def min_vram_verdict(gfx: str, size: int, needs: str, format_size: Callable[[int], str]) -> str | None:
    """How a plan with no recorded memory decides ``rocm_min_vram(size)`` from the memory of the
    gfx's products: ``""`` (run: every product has enough), a skip reason (none has, or only some
    have: which), or None (no product known: the caller says the memory is unknown)."""
    products = product_memory(gfx)
    if not products:
        return None
    listed = sorted(products.items(), key=lambda kv: -kv[1])
    fit = [f"{name} {format_size(n)}" for name, n in listed if n >= size]
    short = [f"{name} {format_size(n)}" for name, n in listed if n < size]
    if not short:
        return ""
    if not fit:
        return f"{needs}; no {gfx} product has that much ({', '.join(short)})"
    return (
        f"{needs}: would run on {gfx} if the device has ≥ {format_size(size)}: {', '.join(fit)}; "
        f"not on {', '.join(short)} (--rocm-env=FILE decides on a recorded machine's memory)"
    )


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


def missing_package(reason: str) -> str:
    """``not installed: bitsandbytes (needs bitsandbytes>=0.45; ...)`` -> ``not installed:
    bitsandbytes``: the summary counts skips per missing package, never one "not installed" for all."""
    rest = reason.removeprefix(NOT_INSTALLED_PREFIX).strip()
    name = rest.split(" ", 1)[0].split("(", 1)[0].rstrip(":;,") if rest else ""
    return f"{NOT_INSTALLED_PREFIX}{name}" if name else NOT_INSTALLED_PREFIX.strip().rstrip(":")


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
            self.skips[missing_package(text) if is_not_installed(text) else text] += 1
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
