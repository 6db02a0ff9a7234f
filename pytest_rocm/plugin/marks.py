"""The plugin's markers: registration, parsing (validated at collection) and evaluation.

Evaluation is a pure function of (parsed marker arguments, :class:`~pytest_rocm.plugin.session.Selection`,
a version lookup), so every rule is tested without pytest and without a GPU. Every skip reason
names the observed fact: ``needs gfx942 (cdna3), device 0 is gfx1100 (rdna3)``.

Versions (``rocm_version``, ``torch_version``, ``requires``) and sizes (``min_vram``) are read by
:mod:`pytest_rocm.plugin.versions`: a nightly counts as its release (``2.7.0.dev20250306+rocm6.3`` is 2.7.0).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_rocm.env import arch
from pytest_rocm.env.render import format_size
from pytest_rocm.plugin.session import Selection
from pytest_rocm.plugin.versions import (
    parse_size,
    parse_specifier,
    satisfies,
)
from pytest_rocm.report.outcomes import not_installed_reason

if TYPE_CHECKING:
    from packaging.requirements import Requirement

# packaging is imported inside the functions that need it: a suite using no marker of ours
# should not pay for importing it (see benchmarks/bench_plugin_overhead.py).


class MarkerError(ValueError):
    """A marker whose arguments are wrong; the message names the marker and the bad value."""


# -- parsed forms ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Parsed:
    name: str
    args: tuple[Any, ...]  # normalised arguments
    text: str  # the marker as written, for messages: gfx('gfx942')


def _text(name: str, args: Iterable[Any], kwargs: dict[str, Any]) -> str:
    parts = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
    return f"{name}({', '.join(parts)})"


# -- argument parsers: their signatures are the markers' signatures -----------------------------
def _patterns(name: str, patterns: tuple[Any, ...]) -> tuple[str, ...]:
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


def _p_none() -> tuple[Any, ...]:
    return ()


def _p_gpus(n: int) -> tuple[Any, ...]:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"bad GPU count {n!r}: expected a positive integer")
    return (n,)


def _p_gfx(*patterns: str) -> tuple[Any, ...]:
    return _patterns("gfx", patterns)


def _p_skip_gfx(*patterns: str, reason: str | None = None) -> tuple[Any, ...]:
    return (_patterns("skip_gfx", patterns), _reason(reason))


def _p_xfail_gfx(*patterns: str, reason: str | None = None, strict: bool = False) -> tuple[Any, ...]:
    if not isinstance(strict, bool):
        raise ValueError(f"strict must be True or False, got {strict!r}")
    return (_patterns("xfail_gfx", patterns), _reason(reason), strict)


def _p_version(spec: str) -> tuple[Any, ...]:
    return (parse_specifier(spec), spec.strip())


def _p_min_vram(size: int | str) -> tuple[Any, ...]:
    return (parse_size(size),)


def _p_requires(spec: str) -> tuple[Any, ...]:
    if not isinstance(spec, str):
        raise ValueError(f"bad requirement {spec!r}: expected a string like 'bitsandbytes>=0.43'")
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        req = Requirement(spec)
    except InvalidRequirement as exc:
        raise ValueError(f"bad requirement {spec!r}: {exc}") from None
    return (req,)


def _p_feature(name: str) -> tuple[Any, ...]:
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"bad feature name {name!r}: expected a non-empty string")
    return (name.strip(),)


def _p_tolerance(
    dtype: str, rtol: float | None = None, atol: float | None = None, normwise: float | None = None
) -> tuple[Any, ...]:
    # the table lives with parity (torch-free module); validated here with every other marker
    from pytest_rocm.parity.tolerances import parse_marker

    given = {k: v for k, v in (("rtol", rtol), ("atol", atol), ("normwise", normwise)) if v is not None}
    return parse_marker((dtype,), given)


@dataclass(frozen=True)
class MarkerSpec:
    name: str
    parse: Callable[..., tuple[Any, ...]]
    help: str
    #: whether evaluating it needs the environment (detection: torch)
    needs_env: bool = True

    @property
    def signature(self) -> str:
        parts = []
        for param in inspect.signature(self.parse).parameters.values():
            if param.kind is param.VAR_POSITIONAL:
                parts.append(f"*{param.name}")
            elif param.default is not param.empty:
                parts.append(f"{param.name}={param.default!r}")
            else:
                parts.append(param.name)
        return f"{self.name}({', '.join(parts)})" if parts else self.name


SPECS: dict[str, MarkerSpec] = {
    s.name: s
    for s in (
        MarkerSpec("gpu", _p_none, "run only where an accelerator (ROCm or CUDA device) is present."),
        MarkerSpec("gpus", _p_gpus, "run only where n accelerators are present."),
        MarkerSpec("rocm", _p_none, "run only where the torch backend is ROCm (HIP)."),
        MarkerSpec(
            "gfx",
            _p_gfx,
            "run only where the device architecture matches one pattern: exact gfx1100, glob gfx11*, family rdna3.",
        ),
        MarkerSpec("skip_gfx", _p_skip_gfx, "skip where the device architecture matches (known broken)."),
        MarkerSpec("xfail_gfx", _p_xfail_gfx, "expect failure where the device architecture matches."),
        MarkerSpec(
            "rocm_version", _p_version, "run only where the ROCm version satisfies a PEP 440 specifier ('>=6.1,<6.3')."
        ),
        MarkerSpec(
            "torch_version",
            _p_version,
            "run only where the torch version satisfies a PEP 440 specifier; nightlies count as their release.",
        ),
        MarkerSpec(
            "min_vram", _p_min_vram, "run only where the device has at least that much memory ('16GiB' or bytes)."
        ),
        MarkerSpec(
            "requires",
            _p_requires,
            "run only where a distribution is installed at that version "
            "('bitsandbytes>=0.43'); absent is the outcome not-installed.",
            needs_env=False,
        ),
        MarkerSpec("feature", _p_feature, "name the compatibility-table row of this test.", needs_env=False),
        MarkerSpec(
            "tolerance",
            _p_tolerance,
            "parity tolerance for one dtype (float32, float16, bfloat16) "
            "in this test; overrides the default table, arguments of parity(...) override it.",
            needs_env=False,
        ),
    )
}
NAMES = frozenset(SPECS)
ENV_NAMES = frozenset(n for n, s in SPECS.items() if s.needs_env)


def register(config: Any) -> None:
    for spec in SPECS.values():
        config.addinivalue_line("markers", f"{spec.signature}: {spec.help} (pytest-rocm)")


def parse_mark(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Parsed:
    """Validate one marker's arguments; MarkerError naming the marker and the bad value."""
    spec = SPECS[name]
    text = _text(name, args, kwargs)
    try:
        inspect.signature(spec.parse).bind(*args, **kwargs)
    except TypeError as exc:
        raise MarkerError(f"{text}: wrong arguments ({exc}); signature is {spec.signature}") from None
    try:
        return Parsed(name, spec.parse(*args, **kwargs), text)
    except ValueError as exc:
        raise MarkerError(f"{text}: {exc}") from None


# -- evaluation (pure) -------------------------------------------------------------------------
@dataclass(frozen=True)
class Decision:
    skip: str | None = None
    #: (reason, strict) when the test is expected to fail here
    xfail: tuple[str, bool] | None = None


def describe_pattern(pattern: str) -> str:
    base, _ = arch.split_arch(pattern)
    return arch.describe(pattern) if arch.is_gfx(base) else pattern


def _device_fact(sel: Selection) -> str:
    """``device 0 is gfx1100 (rdna3)``, with the silicon when an override hides it."""
    d = sel.device if sel is not None else None
    assert d is not None
    if sel.plan:
        return f"the plan is for {arch.describe(d.gfx)}"
    fact = f"device {d.index} is {arch.describe(d.gfx)}"
    if d.hardware_gfx and d.hardware_gfx != d.gfx:
        override = sel.env.variables.get("HSA_OVERRIDE_GFX_VERSION")
        how = f" through HSA_OVERRIDE_GFX_VERSION={override}" if override else ""
        fact += f" (silicon {d.hardware_gfx}{how})"
    return fact


def _matches_any(patterns: tuple[str, ...], sel: Selection) -> bool:
    return sel.device is not None and any(arch.matches(p, sel.device.arch) for p in patterns)


def _runtime_version(sel: Selection, what: str) -> tuple[str | None, str]:
    """(version, why it is missing) of ROCm or torch in the decision environment."""
    env = sel.env
    if what == "torch":
        if env.torch is None:
            return None, "torch is not installed"
        return env.torch, ""
    if env.rocm:
        return env.rocm, ""
    if env.torch is None:
        return None, "torch is not installed"
    if sel.plan:
        return None, f"the plan for {sel.plan} knows no ROCm version (record one and use --rocm-env)"
    return None, f"torch {env.torch} has no ROCm runtime (backend {env.backend})"


def evaluate_one(p: Parsed, sel: Selection, version_of: Callable[[str], str | None]) -> Decision:
    name, args = p.name, p.args
    d = sel.device if sel is not None else None
    if name in ("gpu", "gpus"):
        n = args[0] if args else 1
        needs = "a GPU" if name == "gpu" else f"{n} GPU{'s' if n > 1 else ''}"
        if d is None:
            return Decision(skip=f"needs {needs}, {sel.no_device}")
        if len(sel.candidates) < n:
            where = f" matching {sel.gfx_filter}" if sel.gfx_filter and not sel.plan else ""
            found = f"the plan has {len(sel.candidates)}" if sel.plan else f"found {len(sel.candidates)}{where}"
            return Decision(skip=f"needs {needs}, {found}")
        return Decision()
    if name == "rocm":
        if sel.forced_cpu:
            return Decision(skip=f"needs the ROCm backend, {sel.no_device}")
        if sel.env.backend != "rocm":
            build = f"torch {sel.env.torch}" if sel.env.torch else "torch is not installed"
            return Decision(skip=f"needs the ROCm backend, this is {sel.env.backend} ({build})")
        return Decision()
    if name == "gfx":
        wanted = " or ".join(describe_pattern(x) for x in args)
        if d is None:
            return Decision(skip=f"needs {wanted}, {sel.no_device}")
        if not _matches_any(args, sel):
            return Decision(skip=f"needs {wanted}, {_device_fact(sel)}")
        return Decision()
    if name in ("skip_gfx", "xfail_gfx"):
        patterns, reason = args[0], args[1]
        if not _matches_any(patterns, sel):
            return Decision()
        why = f"{', '.join(patterns)} matches: {_device_fact(sel)}"
        text = f"{reason} ({why})" if reason else why
        if name == "skip_gfx":
            return Decision(skip=text)
        return Decision(xfail=(text, args[2]))
    if name in ("rocm_version", "torch_version"):
        spec, spec_text = args
        what = "ROCm" if name == "rocm_version" else "torch"
        version, missing = _runtime_version(sel, what.lower())
        if version is None:
            return Decision(skip=f"needs {what} {spec_text}, {missing}")
        if not satisfies(spec, version):
            return Decision(skip=f"needs {what} {spec_text}, this is {version}")
        return Decision()
    if name == "min_vram":
        size = args[0]
        needs = f"needs {format_size(size)} of GPU memory"
        if d is None:
            return Decision(skip=f"{needs}, {sel.no_device}")
        if d.total_memory is None:
            return Decision(skip=f"{needs}, {_device_fact(sel)} with unknown memory")
        if d.total_memory < size:
            return Decision(skip=f"{needs}, device {d.index} has {format_size(d.total_memory)}")
        return Decision()
    if name == "requires":
        req: Requirement = args[0]
        if req.marker is not None and not req.marker.evaluate():
            return Decision()  # the requirement does not apply on this platform
        installed = version_of(req.name)
        if installed is None:
            return Decision(skip=not_installed_reason(req.name, f"needs {req}"))
        if req.specifier and not satisfies(req.specifier, installed):
            return Decision(skip=f"needs {req}, this is {req.name} {installed}")
        return Decision()
    return Decision()  # feature: read by the report, decides nothing


def evaluate(parsed: Iterable[Parsed], sel: Selection | None, version_of: Callable[[str], str | None]) -> Decision:
    """The first skip in marker order wins; otherwise the first xfail; otherwise run."""
    xfail = None
    for p in parsed:
        if p.name in ENV_NAMES and sel is None:
            raise ValueError(f"{p.text} needs the environment")  # programming error, not user input
        decision = evaluate_one(p, sel, version_of)  # type: ignore[arg-type]
        if decision.skip:
            return decision
        xfail = xfail or decision.xfail
    return Decision(xfail=xfail)


def library_lookup(
    recorded: dict[str, str | None] | None, installed: Callable[[str], str | None]
) -> Callable[[str], str | None]:
    """Version lookup for ``requires``: a recorded environment's libraries when it lists the
    distribution (decisions follow the recording), else this machine's package metadata."""
    from packaging.utils import canonicalize_name

    table = {canonicalize_name(k): v for k, v in (recorded or {}).items()}

    def version_of(dist: str) -> str | None:
        key = canonicalize_name(dist)
        if key in table:
            return table[key]
        return installed(dist)

    return version_of
