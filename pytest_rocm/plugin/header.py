"""What the session says about its environment: the header, the verbose listing and the junit
test-suite properties.

The header is the doctor's problems, each in its one-line form (``rocm: [FAIL] torch-build: ...``,
the very line ``rocm-compat doctor`` prints), the doctor's summary line, then the ``rocm:`` line.
The plugin's one ``pytest_report_header`` prints it: ``header_lines`` once the environment is
known; while it is not, only the doctor's lines from the checks that need no torch
(``system_diagnosis``: sysfs reads, a few milliseconds), so a failing CI log points at the cause
before the first failing test does. The functions here build lines; the hook lives in the plugin.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pytest_rocm.env.model import Environment
from pytest_rocm.env.render import environment_lines, format_size
from pytest_rocm.plugin.device_choice import DeviceChoice

if TYPE_CHECKING:
    from pytest_rocm.doctor.checks import Check

PREFIX = "rocm: "


def doctor_lines(checks: Sequence[Check], env_file: str | None = None) -> list[str]:
    """The doctor's part of the header: each problem's one-line form, then the summary line that
    points at ``rocm-compat doctor`` for the fixes (``--env FILE`` when the run decides from a
    recording: this machine's doctor would diagnose something else); nothing when all is well."""
    from pytest_rocm.doctor import render  # lazy: keeps plugin import small

    found = [c for c in checks if c.is_problem]
    summary = render.summary_line(found, env_file)
    return [PREFIX + c.line for c in found] + ([summary] if summary else [])


def _device_text(choice: DeviceChoice) -> str:
    d = choice.device
    if choice.forced_cpu:
        return "cpu (forced)"
    if d is None:
        return "none"
    extra = [d.name] + ([format_size(d.total_memory)] if d.total_memory else [])
    if choice.plan:
        return f"plan:{d.gfx}" + (f" ({', '.join(extra)})" if d.total_memory else "")
    return f"{d.index}:{d.gfx} ({', '.join(extra)})"


def header_line(choice: DeviceChoice, source: str) -> str:
    env = choice.env
    tag = f"[plan: {choice.plan}, no device here]" if choice.plan else f"[env: {source}]"
    if choice.plan and choice.plan_recorded:  # a plan on a recording's devices: say which
        tag = f"[plan: {choice.plan} as recorded in {source}, no device here]"
    parts = [f"backend={env.backend}", f"torch={env.torch or 'not-installed'}"]
    if env.rocm:
        parts.append(f"rocm={env.rocm}")
    if env.cuda:
        parts.append(f"cuda={env.cuda}")
    parts.append(f"device={_device_text(choice)}")
    line = PREFIX + " ".join(parts) + " " + tag
    if choice.device is None and not choice.forced_cpu:
        line += f" ({choice.no_device})"
    return line


def verbose_lines(env: Environment) -> list[str]:
    """The whole environment (``-v``): the lines ``rocm-compat env`` prints, prefixed."""
    return [PREFIX + "  " + line for line in environment_lines(env)]


def header_lines(choice: DeviceChoice, source: str, verbose: int, checks: Sequence[Check] | None = None) -> list[str]:
    """The header once the environment is known. ``checks`` default to the doctor's diagnosis of
    ``choice.env`` without extras (pure: no probe; the checks that need one judge without it)."""
    if checks is None:
        from pytest_rocm.doctor.checks import diagnose

        checks = diagnose(choice.env)
    recorded = source not in ("", "detected", "pytest_rocm_detect_environment")  # else a file's path
    lines = [*doctor_lines(checks, source if recorded else None), header_line(choice, source)]
    if verbose > 0:
        lines += verbose_lines(choice.env)
    return lines


def probed_diagnosis(env: Environment) -> list[Check]:
    """The doctor's diagnosis of this machine's environment with the probed extras, as
    ``rocm-compat doctor`` judges it (without them when the sysroot is bad)."""
    from pytest_rocm.doctor.checks import diagnose
    from pytest_rocm.doctor.probe import diagnose_machine
    from pytest_rocm.env.seam import SysrootError

    try:
        return diagnose_machine(env).checks
    except SysrootError:
        return diagnose(env)


def system_diagnosis() -> list[Check] | None:
    """The checks that need no torch, on this machine (sysfs, the variables, the PCI bus, the
    MIOpen cache folder); None when the sysroot is bad (the plugin reports that on its own)."""
    from pytest_rocm.doctor.probe import diagnose_machine
    from pytest_rocm.env.seam import SysrootError

    try:
        return diagnose_machine(system_only=True).checks
    except SysrootError:
        return None


def junit_properties(choice: DeviceChoice, source: str) -> list[tuple[str, str]]:
    """Test-suite properties for --junitxml: the summary facts, then the whole environment JSON."""
    env = choice.env
    props = [
        ("rocm.backend", env.backend),
        ("rocm.torch", env.torch or ""),
        ("rocm.hip", env.hip or ""),
        ("rocm.rocm", env.rocm or ""),
        ("rocm.cuda", env.cuda or ""),
        ("rocm.device", _device_text(choice)),
        ("rocm.source", f"plan: {choice.plan}" if choice.plan else source),
        ("rocm.environment", env.to_json(indent=None)),
    ]
    return props
