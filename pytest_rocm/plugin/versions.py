"""Sizes and versions as the markers read them, and the markers that read them: ``rocm_version``,
``rocm_torch_version``, ``rocm_min_vram`` and ``rocm_requires`` (each a spec with its parser and decision, listed
in :data:`pytest_rocm.plugin.marks.SPECS`).

A build counts as its release (``2.7.0.dev20250306+rocm6.3`` and ``2.10.0a0+rocm7.10.0a20251120``
count as 2.7.0 and 2.10.0), so ``torch_version(">=2.7")`` holds on a 2.7 nightly. A specifier that
itself names a pre-release (``">=2.7.0.dev20250301"``) compares the full public version instead,
so nightlies can be told apart. packaging is imported inside the functions that need it: a suite
using no marker of ours should not pay for importing it (benchmarks/bench_plugin_overhead.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_rocm._values import parse_size
from pytest_rocm.env.model import Device
from pytest_rocm.env.render import format_size
from pytest_rocm.plugin.device_choice import DeviceChoice, device_fact, runtime_version
from pytest_rocm.plugin.markspec import RUN, Context, Decision, MarkerSpec
from pytest_rocm.report.outcomes import not_installed_reason

if TYPE_CHECKING:
    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version


def parse_specifier(spec: Any) -> SpecifierSet:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"bad version specifier {spec!r}: expected a string like '>=6.1,<6.3'")
    try:
        return SpecifierSet(spec)
    except InvalidSpecifier:
        hint = (
            f" (did you mean '>={spec.strip()}' or '=={spec.strip()}.*'?)"
            if _leading_version(spec) == spec.strip()
            else ""
        )
        raise ValueError(f"bad version specifier {spec!r}{hint}") from None


_LEADING_RE = re.compile(r"^\s*v?([0-9]+(?:\.[0-9]+)*)")


def _leading_version(text: str) -> str | None:
    m = _LEADING_RE.match(text)
    return m.group(1) if m else None


def parse_version(text: str) -> Version | None:
    """A version from what builds report: PEP 440, else its leading numbers (hip ``6.2.41134-65d174c3e``)."""
    from packaging.version import InvalidVersion, Version

    try:
        return Version(text)
    except InvalidVersion:
        lead = _leading_version(text)
        return Version(lead) if lead else None


def satisfies(spec: SpecifierSet, version: str) -> bool:
    """Whether ``version`` satisfies ``spec``, counting nightlies/pre-releases by their release
    unless the specifier itself names a pre-release (see the module docstring)."""
    from packaging.version import Version

    parsed = parse_version(version)
    if parsed is None:
        return False
    if any(Version(s.version.rstrip(".*")).is_prerelease for s in spec if _is_version(s.version)):
        return spec.contains(Version(parsed.public), prereleases=True)
    return spec.contains(Version(parsed.base_version), prereleases=True)


def _is_version(text: str) -> bool:
    from packaging.version import InvalidVersion, Version

    try:
        Version(text.rstrip(".*"))
        return True
    except InvalidVersion:
        return False


class LibraryLookup:
    """Version lookup for ``requires``: a recorded environment's libraries when it lists the
    distribution (decisions follow the recording), else this machine's package metadata.
    :meth:`where` says which of the two answered, so a reason never passes a recording's
    "not installed" off as this machine's."""

    def __init__(
        self,
        recorded: dict[str, str | None] | None,
        installed: Callable[[str], str | None],
        source: str | None = None,
    ) -> None:
        from packaging.utils import canonicalize_name

        self._canonical = canonicalize_name
        self._table = {canonicalize_name(k): v for k, v in (recorded or {}).items()}
        self._installed = installed
        self._source = source

    def __call__(self, dist: str) -> str | None:
        key = self._canonical(dist)
        if key in self._table:
            return self._table[key]
        return self._installed(dist)

    def where(self, dist: str) -> str:
        """``in the recorded environment mi210.json (here: 0.50.2)`` or "" for this machine."""
        if self._canonical(dist) not in self._table:
            return ""
        here = self._installed(dist)
        return f"in the recorded environment {self._source or ''}".rstrip() + (
            f" (installed here: {here})" if here else " (not installed here either)"
        )


def library_lookup(
    recorded: dict[str, str | None] | None, installed: Callable[[str], str | None], source: str | None = None
) -> LibraryLookup:
    """See :class:`LibraryLookup`; ``source`` names the recording (``--rocm-env`` FILE)."""
    return LibraryLookup(recorded, installed, source)


# -- the markers ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class VersionSpec:
    """``rocm_version(spec)``, ``rocm_torch_version(spec)``: the PEP 440 specifier and its text."""

    specifier: SpecifierSet
    text: str


@dataclass(frozen=True)
class MemorySize:
    """``rocm_min_vram(size)``, in bytes."""

    size: int


@dataclass(frozen=True)
class Required:
    """``rocm_requires(spec)``: a distribution and the versions that count (PEP 508)."""

    requirement: Requirement


def _parse_version(spec: str) -> VersionSpec:
    return VersionSpec(parse_specifier(spec), spec.strip())


def _version_decider(what: str) -> Callable[[VersionSpec, Context], Decision]:
    def decide(args: VersionSpec, ctx: Context) -> Decision:
        spec, spec_text = args.specifier, args.text
        version, missing = runtime_version(ctx.choice, what.lower())
        if version is None:
            return Decision(skip=f"needs {what} {spec_text}, {missing}")
        if not satisfies(spec, version):
            return Decision(skip=f"needs {what} {spec_text}, this is {version}")
        return RUN

    return decide


ROCM_VERSION = MarkerSpec(
    "rocm_version",
    _parse_version,
    _version_decider("ROCm"),
    "run only where the ROCm version satisfies a PEP 440 specifier ('>=6.1,<6.3').",
)
TORCH_VERSION = MarkerSpec(
    "rocm_torch_version",
    _parse_version,
    _version_decider("torch"),
    "run only where the torch version satisfies a PEP 440 specifier; nightlies count as their release.",
    short="torch_version",
)


def _parse_min_vram(size: int | str) -> MemorySize:
    return MemorySize(parse_size(size))


def _allocatable(choice: DeviceChoice, d: Device) -> tuple[int | None, str]:
    """(bytes the device can allocate, how that was judged). An APU's reported memory is its BIOS
    carve-out or its GTT pool depending on kernel and ROCm; HIP also allocates from GTT (the system
    memory the kernel lets the GPU map, ``mem_info_gtt_total``), so an APU counts the larger."""
    from pytest_rocm.doctor.facts import apu_gfxs

    gfx = d.hardware_gfx or d.gfx
    if gfx not in apu_gfxs():
        return d.total_memory, ""
    pools = [g.gtt for g in choice.env.system.gpus if g.gfx == gfx and g.gtt]
    if len(pools) != 1 or (d.total_memory or 0) >= pools[0]:  # two such APUs: which is which is unknown
        return d.total_memory, ""
    return pools[0], " (an APU: its GTT pool of system memory)"


def _decide_min_vram(args: MemorySize, ctx: Context) -> Decision:
    choice, size = ctx.choice, args.size
    d = choice.device
    needs = f"needs {format_size(size)} of GPU memory"
    if d is None:
        return Decision(skip=f"{needs}, {choice.no_device}")
    memory, how = _allocatable(choice, d)
    if memory is None and choice.plan:  # no recording: the memory of the gfx's products decides
        from pytest_rocm.plugin.plan import min_vram_verdict

        verdict = min_vram_verdict(choice.plan, size, needs, format_size)
        if verdict is not None:
            return RUN if not verdict else Decision(skip=verdict)
    if memory is None:
        return Decision(skip=f"{needs}, {device_fact(choice)} with unknown memory")
    if memory < size:
        where = "the plan's recorded device" if choice.plan else f"device {d.index}"
        return Decision(skip=f"{needs}, {where} has {format_size(memory)}{how}")
    return RUN


MIN_VRAM = MarkerSpec(
    "rocm_min_vram",
    _parse_min_vram,
    _decide_min_vram,
    "run only where the device has at least that much memory ('16GiB' or bytes).",
    short="min_vram",
)


def _parse_requires(spec: str) -> Required:
    if not isinstance(spec, str):
        raise ValueError(f"bad requirement {spec!r}: expected a string like 'bitsandbytes>=0.43'")
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        req = Requirement(spec)
    except InvalidRequirement as exc:
        raise ValueError(f"bad requirement {spec!r}: {exc}") from None
    return Required(req)


def _decide_requires(args: Required, ctx: Context) -> Decision:
    req = args.requirement
    if req.marker is not None and not req.marker.evaluate():
        return RUN  # the requirement does not apply on this platform
    installed = ctx.version_of(req.name)
    where_of = getattr(ctx.version_of, "where", None)
    where = where_of(req.name) if where_of else ""
    if installed is None:
        return Decision(skip=not_installed_reason(req.name, f"needs {req}" + (f"; {where}" if where else "")))
    if req.specifier and not satisfies(req.specifier, installed):
        return Decision(skip=f"needs {req}, this is {req.name} {installed}" + (f" {where}" if where else ""))
    return RUN


REQUIRES = MarkerSpec(
    "rocm_requires",
    _parse_requires,
    _decide_requires,
    "run only where a distribution is installed at that version "
    "('bitsandbytes>=0.43'); absent is the outcome not-installed.",
    needs_env=False,
    short="requires",
)
