"""The plugin's markers, as a registry: each marker is its spec, its parser and its decision.

Each marker is a :class:`~pytest_rocm.plugin.markspec.MarkerSpec` defined right after its two
functions: ``parse`` (whose signature is the marker's) validates the arguments at collection and
normalises them; ``decide`` is a pure function of those arguments and a
:class:`~pytest_rocm.plugin.markspec.Context` (the :class:`~pytest_rocm.plugin.device_choice.DeviceChoice`
and a version lookup). The version and size markers (``rocm_version``, ``torch_version``,
``min_vram``, ``requires``) live beside their rules in :mod:`pytest_rocm.plugin.versions`.
:data:`SPECS` lists them all; :func:`evaluate` runs the ``decide`` of each of a test's markers, so
every rule is tested without pytest and without a GPU. Every skip reason names the observed fact:
``needs gfx942 (cdna3), device 0 is gfx1100 (rdna3)``.

Parsed markers are cached per test (:mod:`pytest_rocm.plugin.markcache`).

Why this module is long: it is the registry, each marker's parse and decide beside its spec and
the one ``evaluate``; the version and size markers already moved to ``plugin/versions``.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pytest_rocm.env import arch
from pytest_rocm.plugin import versions
from pytest_rocm.plugin.device_choice import DeviceChoice, describe_pattern, device_fact, matches_any
from pytest_rocm.plugin.markspec import RUN, Context, Decision, MarkerError, MarkerSpec, NoArgs, Parsed, VersionOf
from pytest_rocm.plugin.versions import library_lookup

__all__ = [
    "ALIASES",
    "ARCH_NAMES",
    "DEVICE_NAMES",
    "ENV_NAMES",
    "NAMES",
    "SPECS",
    "Context",
    "Decision",
    "MarkerError",
    "MarkerSpec",
    "Parsed",
    "active_names",
    "evaluate",
    "library_lookup",
    "owned_names",
    "parse_mark",
    "register",
    "register_aliases",
]


# -- each marker's arguments, parsed once at collection ---------------------------------------------
@dataclass(frozen=True)
class GpuCount:
    """``rocm_gpus(n)``"""

    n: int


@dataclass(frozen=True)
class GfxPatterns:
    """``rocm_gfx(*patterns)``: validated architecture patterns (gfx1100, gfx11*, rdna3)."""

    patterns: tuple[str, ...]


@dataclass(frozen=True)
class GfxExpectation:
    """``rocm_skip_gfx(*patterns, reason=)`` and ``rocm_xfail_gfx(*patterns, reason=, strict=)``;
    strict None: pytest's xfail_strict ini decides."""

    patterns: tuple[str, ...]
    reason: str = ""
    strict: bool | None = None


@dataclass(frozen=True)
class FeatureName:
    """``rocm_feature(name)``: the compatibility-table row."""

    name: str


@dataclass(frozen=True)
class ToleranceOverride:
    """``rocm_tolerance(dtype, rtol=, atol=, normwise=)``: the canonical dtype and the keys given."""

    dtype: str
    overrides: Mapping[str, float]


# -- gpu, gpus(n), rocm -------------------------------------------------------------------------
def _parse_nothing() -> NoArgs:
    return NoArgs()


def _needs_gpus(n: int, needs: str, choice: DeviceChoice) -> Decision:
    if choice.device is None:
        return Decision(skip=f"needs {needs}, {choice.no_device}")
    if len(choice.candidates) < n:
        where = f" matching {choice.gfx_filter}" if choice.gfx_filter and not choice.plan else ""
        found = f"the plan has {len(choice.candidates)}" if choice.plan else f"found {len(choice.candidates)}{where}"
        return Decision(skip=f"needs {needs}, {found}")
    return RUN


def _decide_gpu(args: NoArgs, ctx: Context) -> Decision:
    return _needs_gpus(1, "a GPU", ctx.choice)


GPU = MarkerSpec(
    "rocm_gpu",
    _parse_nothing,
    _decide_gpu,
    "run only where an accelerator (ROCm or CUDA device) is present.",
    short="gpu",
)


def _parse_gpus(n: int) -> GpuCount:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"bad GPU count {n!r}: expected a positive integer")
    return GpuCount(n)


def _decide_gpus(args: GpuCount, ctx: Context) -> Decision:
    n = args.n
    return _needs_gpus(n, f"{n} GPU{'s' if n > 1 else ''}", ctx.choice)


GPUS = MarkerSpec("rocm_gpus", _parse_gpus, _decide_gpus, "run only where n accelerators are present.", short="gpus")


def _decide_rocm(args: NoArgs, ctx: Context) -> Decision:
    choice = ctx.choice
    if choice.forced_cpu:
        return Decision(skip=f"needs the ROCm backend, {choice.no_device}")
    if choice.env.backend != "rocm" and choice.plan:
        return Decision(skip=f"needs the ROCm backend, the plan is for {choice.plan} (CUDA)")
    if choice.env.backend != "rocm":
        build = f"torch {choice.env.torch}" if choice.env.torch else "torch is not installed"
        return Decision(skip=f"needs the ROCm backend, this is {choice.env.backend} ({build})")
    return RUN


ROCM = MarkerSpec(
    "rocm_backend", _parse_nothing, _decide_rocm, "run only where the torch backend is ROCm (HIP).", short="rocm"
)


# -- gfx(*patterns), skip_gfx, xfail_gfx -----------------------------------------------------------
def _patterns(patterns: tuple[Any, ...]) -> tuple[str, ...]:
    if not patterns:
        raise ValueError("needs at least one architecture pattern")
    out = []
    for p in patterns:
        if not isinstance(p, str):
            raise ValueError(f"architecture pattern must be a string, got {p!r}")
        out.append(arch.validate_pattern(p))
    return tuple(out)


def _reason(reason: Any) -> str:
    if reason is not None and not isinstance(reason, str):
        raise ValueError(f"reason must be a string, got {reason!r}")
    return reason or ""


def _parse_gfx(*patterns: str) -> GfxPatterns:
    return GfxPatterns(_patterns(patterns))


def _decide_gfx(args: GfxPatterns, ctx: Context) -> Decision:
    choice = ctx.choice
    wanted = " or ".join(describe_pattern(x) for x in args.patterns)
    if choice.device is None:
        return Decision(skip=f"needs {wanted}, {choice.no_device}")
    if not matches_any(args.patterns, choice):
        return Decision(skip=f"needs {wanted}, {device_fact(choice)}")
    return RUN


GFX = MarkerSpec(
    "rocm_gfx",
    _parse_gfx,
    _decide_gfx,
    "run only where the device architecture matches one pattern: exact gfx1100, glob gfx11*, family rdna3.",
    short="gfx",
)


def _matched(patterns: tuple[str, ...], reason: str, choice: DeviceChoice) -> str | None:
    """The skip/xfail reason when the device matches a pattern, else None."""
    if not matches_any(patterns, choice):
        return None
    why = f"{', '.join(patterns)} matches: {device_fact(choice)}"
    return f"{reason} ({why})" if reason else why


def _parse_skip_gfx(*patterns: str, reason: str | None = None) -> GfxExpectation:
    return GfxExpectation(_patterns(patterns), _reason(reason))


def _decide_skip_gfx(args: GfxExpectation, ctx: Context) -> Decision:
    text = _matched(args.patterns, args.reason, ctx.choice)
    return Decision(skip=text) if text else RUN


SKIP_GFX = MarkerSpec(
    "rocm_skip_gfx",
    _parse_skip_gfx,
    _decide_skip_gfx,
    "skip where the device architecture matches (known broken).",
    short="skip_gfx",
)


def _parse_xfail_gfx(*patterns: str, reason: str | None = None, strict: bool | None = None) -> GfxExpectation:
    if strict is not None and not isinstance(strict, bool):
        raise ValueError(f"strict must be True or False, got {strict!r}")
    return GfxExpectation(_patterns(patterns), _reason(reason), strict)


def _decide_xfail_gfx(args: GfxExpectation, ctx: Context) -> Decision:
    text = _matched(args.patterns, args.reason, ctx.choice)
    return Decision(xfail=(text, args.strict)) if text else RUN  # strict None: pytest's xfail_strict


XFAIL_GFX = MarkerSpec(
    "rocm_xfail_gfx",
    _parse_xfail_gfx,
    _decide_xfail_gfx,
    "expect failure where the device architecture matches; strict defaults to the xfail_strict ini.",
    short="xfail_gfx",
)


# -- feature(name), tolerance(dtype, ...): decide nothing, read through markcache ----------------------
def _decide_nothing(args: object, ctx: Context) -> Decision:
    return RUN


def _parse_feature(name: str) -> FeatureName:
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"bad feature name {name!r}: expected a non-empty string")
    return FeatureName(name.strip())


FEATURE = MarkerSpec(
    "rocm_feature",
    _parse_feature,
    _decide_nothing,
    "name the compatibility-table row of this test.",
    needs_env=False,
    short="feature",
)


def _parse_tolerance(
    dtype: str, rtol: float | None = None, atol: float | None = None, normwise: float | None = None
) -> ToleranceOverride:
    # the table lives with parity (torch-free module); validated here with every other marker
    from pytest_rocm.parity.tolerances import parse_marker

    given = {k: v for k, v in (("rtol", rtol), ("atol", atol), ("normwise", normwise)) if v is not None}
    return ToleranceOverride(*parse_marker((dtype,), given))


TOLERANCE = MarkerSpec(
    "rocm_tolerance",
    _parse_tolerance,
    _decide_nothing,
    "parity tolerance for one dtype (float32, float16, bfloat16) "
    "in this test; overrides the default table, arguments of parity(...) override it.",
    needs_env=False,
    short="tolerance",
)


# -- the registry, in the order `pytest --markers` lists them ------------------------------------------
SPECS: dict[str, MarkerSpec[Any]] = {
    s.name: s
    for s in (
        GPU,
        GPUS,
        ROCM,
        GFX,
        SKIP_GFX,
        XFAIL_GFX,
        versions.ROCM_VERSION,
        versions.TORCH_VERSION,
        versions.MIN_VRAM,
        versions.REQUIRES,
        FEATURE,
        TOLERANCE,
    )
}
NAMES = frozenset(SPECS)
#: the markers that decide the architecture: decided before the others, so a skip says first
#: whether the architecture fits ("does this run on MI300X but not on a 7900?")
ARCH_NAMES = frozenset({"rocm_gfx", "rocm_skip_gfx", "rocm_xfail_gfx"})
#: the markers whose test needs a device: in a plan such a test is decided, never executed
DEVICE_NAMES = frozenset({"rocm_gpu", "rocm_gpus", "rocm_backend", "rocm_min_vram", "rocm_version", *ARCH_NAMES})
ENV_NAMES = frozenset(n for n, s in SPECS.items() if s.needs_env)
#: the first version's short names -> the canonical names they alias
ALIASES: dict[str, str] = {s.short: s.name for s in SPECS.values() if s.short}
#: how the plugin's own lines in the ``markers`` ini end, telling them from the project's
PLUGIN_TAG = "(pytest-rocm)"
#: the ini switch (and option) that turns the short aliases off
SWITCH = "rocm_short_markers"


def register(config: Any) -> None:
    """The canonical names, each with its signature and help (``pytest --markers``)."""
    for spec in SPECS.values():
        config.addinivalue_line("markers", f"{spec.signature}: {spec.help} {PLUGIN_TAG}")


def register_aliases(config: Any, shorts: Iterable[str]) -> None:
    for short in shorts:
        spec = SPECS[ALIASES[short]]
        line = f"{spec.signature_as(short)}: short alias of {spec.name}; off where the project registers"
        config.addinivalue_line("markers", f"{line} its own {short} marker, or with {SWITCH} = off {PLUGIN_TAG}")


def marker_name(line: str) -> str:
    """The name a ``markers`` ini line registers (``gpu(n): ...`` -> ``gpu``), as pytest reads it."""
    return line.split(":")[0].split("(")[0].strip()


def owned_names(lines: Iterable[str]) -> frozenset[str]:
    """The marker names the project (its ini, a conftest, another plugin) registers itself."""
    return frozenset(marker_name(line) for line in lines if not str(line).rstrip().endswith(PLUGIN_TAG))


def active_names(short_markers: bool, owned: Iterable[str]) -> dict[str, str]:
    """{name as written on a test: canonical name} of the markers the plugin acts on: every
    canonical name, and each short alias that is switched on and not the project's own."""
    names = {name: name for name in SPECS}
    if short_markers:
        taken = frozenset(owned)
        names.update({short: name for short, name in ALIASES.items() if short not in taken})
    return names


def parse_mark(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Parsed:
    """Validate one marker's arguments (``name`` canonical or an alias, as written); MarkerError
    naming the marker and the bad value. The result carries the canonical name."""
    spec = SPECS[ALIASES.get(name, name)]
    text = f"{name}({', '.join([repr(a) for a in args] + [f'{k}={v!r}' for k, v in kwargs.items()])})"
    # an alias a project uses with its own meaning but did not register: say how to step aside
    hint = f" (if {name} is your project's own marker, register it or set {SWITCH} = off)" if name in ALIASES else ""
    try:
        inspect.signature(spec.parse).bind(*args, **kwargs)
    except TypeError as exc:
        raise MarkerError(f"{text}: wrong arguments ({exc}); signature is {spec.signature_as(name)}{hint}") from None
    try:
        return Parsed(spec.name, spec.parse(*args, **kwargs), text)
    except ValueError as exc:
        raise MarkerError(f"{text}: {exc}{hint}") from None


def evaluate(parsed: Iterable[Parsed], choice: DeviceChoice | None, version_of: VersionOf) -> Decision:
    """Each marker's decision, the architecture markers first, then the others in marker order:
    the first skip wins; otherwise the first xfail; otherwise run. In a plan, a skip after
    ``rocm_gfx`` matched says so first (``fits gfx942 (cdna3); needs ROCm >=6.1, ...``). ``choice``
    may be None only when no marker needs the environment."""
    ctx = Context(choice, version_of)
    xfail = None
    arch_fits = False
    for p in sorted(parsed, key=lambda p: p.name not in ARCH_NAMES):  # stable: marker order kept
        spec = SPECS[p.name]
        if spec.needs_env and choice is None:
            raise ValueError(f"{p.text} needs the environment")  # programming error, not user input
        decision = spec.decide(p.args, ctx)
        if decision.skip:
            if arch_fits and choice is not None and choice.plan:
                return Decision(skip=f"fits {arch.describe(choice.plan)}; {decision.skip}")
            return decision
        arch_fits = arch_fits or p.name == "rocm_gfx"
        xfail = xfail or decision.xfail
    return Decision(xfail=xfail)
