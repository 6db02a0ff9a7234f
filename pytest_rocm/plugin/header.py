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
from pytest_rocm.env.render import format_size
from pytest_rocm.plugin.selection import Selection

if TYPE_CHECKING:
    from pytest_rocm.doctor.checks import Check

PREFIX = "rocm: "


def doctor_lines(checks: Sequence[Check]) -> list[str]:
    """The doctor's part of the header: each problem's one-line form, then the summary line that
    points at ``rocm-compat doctor`` for the fixes; nothing when all is well."""
    from pytest_rocm.doctor import render  # lazy: keeps plugin import small

    found = [c for c in checks if c.is_problem]
    summary = render.summary_line(found)
    return [PREFIX + c.line for c in found] + ([summary] if summary else [])


def _device_text(sel: Selection) -> str:
    d = sel.device
    if sel.forced_cpu:
        return "cpu (forced)"
    if d is None:
        return "none"
    extra = [d.name] + ([format_size(d.total_memory)] if d.total_memory else [])
    if sel.plan:
        return f"plan:{d.gfx}"
    return f"{d.index}:{d.gfx} ({', '.join(extra)})"


def header_line(sel: Selection, source: str) -> str:
    env = sel.env
    tag = f"[plan: {sel.plan}, no device here]" if sel.plan else f"[env: {source}]"
    parts = [f"backend={env.backend}", f"torch={env.torch or 'not-installed'}"]
    if env.rocm:
        parts.append(f"rocm={env.rocm}")
    if env.cuda:
        parts.append(f"cuda={env.cuda}")
    parts.append(f"device={_device_text(sel)}")
    line = PREFIX + " ".join(parts) + " " + tag
    if sel.device is None and not sel.forced_cpu:
        line += f" ({sel.no_device})"
    return line


def verbose_lines(env: Environment) -> list[str]:
    """The whole environment, one fact group a line (``-v``)."""
    ind = PREFIX + "  "
    out = [
        ind
        + f"torch {env.torch or '-'}, hip {env.hip or '-'}, cuda {env.cuda or '-'}"
        + (f" ({env.torch_error})" if env.torch_error else "")
    ]
    out.append(ind + f"arch list: {', '.join(env.arch_list) or '-'}")
    for d in env.devices:
        feats = ",".join(f"{k}{'+' if v else '-'}" for k, v in d.features.items()) or "-"
        mem = format_size(d.total_memory) if d.total_memory else "?"
        in_build = {True: "yes", False: "NO", None: "?"}[d.in_build]
        out.append(
            ind + f"device {d.index}: {d.name}, arch {d.arch}, silicon {d.hardware_gfx or '?'}, "
            f"features {feats}, memory {mem}, compute units {d.compute_units or '?'}, "
            f"in build {in_build}"
        )
    s = env.system
    yes = {True: "yes", False: "no", None: "?"}
    out.append(
        ind + f"system: kfd {yes[s.kfd]}, kfd access {yes[s.kfd_access]}, groups "
        f"{','.join(s.groups) or '-'}, amdgpu {s.amdgpu_version or yes[s.amdgpu_loaded]}, "
        f"ROCm installed {s.rocm_version or '-'}"
    )
    for g in s.gpus:
        vram = format_size(g.vram) if g.vram else "?"
        out.append(
            ind + f"kernel gpu node {g.node}: {g.gfx or '?'}, vram {vram}, "
            f"render minor {g.render_minor if g.render_minor is not None else '?'}"
        )
    for err in s.errors:
        out.append(ind + f"unreadable: {err}")
    set_vars = [f"{k}={v}" for k, v in env.variables.items() if v is not None]
    out.append(ind + f"variables: {' '.join(set_vars) or 'none set'}")
    libs = [f"{k} {v}" for k, v in env.libraries.items() if v]
    missing = [k for k, v in env.libraries.items() if not v]
    out.append(
        ind + f"libraries: {', '.join(libs) or '-'}" + (f"; not installed: {', '.join(missing)}" if missing else "")
    )
    out.append(ind + f"python {env.python or '?'} on {env.platform or '?'}")
    return out


def header_lines(sel: Selection, source: str, verbose: int, checks: Sequence[Check] | None = None) -> list[str]:
    """The header once the environment is known. ``checks`` default to the doctor's diagnosis of
    ``sel.env`` without extras (pure: no probe; the checks that need one judge without it)."""
    if checks is None:
        from pytest_rocm.doctor.checks import diagnose

        checks = diagnose(sel.env)
    lines = [*doctor_lines(checks), header_line(sel, source)]
    if verbose > 0:
        lines += verbose_lines(sel.env)
    return lines


def probed_diagnosis(env: Environment) -> list[Check]:
    """The doctor's diagnosis of this machine's environment with the probed extras (the PCI bus,
    the MIOpen cache folder), as ``rocm-compat doctor`` judges it."""
    from pytest_rocm.doctor.checks import diagnose
    from pytest_rocm.doctor.render import probe_extras
    from pytest_rocm.env.seam import Seam, SysrootError

    try:
        seam = Seam()
    except SysrootError:
        return diagnose(env)
    return diagnose(env, probe_extras(seam, env))


def system_diagnosis() -> list[Check] | None:
    """The checks that need no torch, on this machine (sysfs, the variables, the PCI bus, the
    MIOpen cache folder); None when the sysroot is bad (the plugin reports that on its own)."""
    from pytest_rocm.doctor.checks import diagnose_system
    from pytest_rocm.doctor.render import probe_extras
    from pytest_rocm.env.detect import per_node_variables
    from pytest_rocm.env.model import VARIABLES
    from pytest_rocm.env.seam import Seam, SysrootError
    from pytest_rocm.env.system import detect_system

    try:
        seam = Seam()
    except SysrootError:
        return None
    env = Environment(system=detect_system(seam), variables={v: seam.getenv(v) for v in VARIABLES})
    # HSA_OVERRIDE_GFX_VERSION_<node> of each GPU node: what the runtime applies first
    env.variables.update(per_node_variables(seam, env.system.gpus, env.system.errors))
    return diagnose_system(env, probe_extras(seam, env))


def junit_properties(sel: Selection, source: str) -> list[tuple[str, str]]:
    """Test-suite properties for --junitxml: the summary facts, then the whole environment JSON."""
    env = sel.env
    props = [
        ("rocm.backend", env.backend),
        ("rocm.torch", env.torch or ""),
        ("rocm.hip", env.hip or ""),
        ("rocm.rocm", env.rocm or ""),
        ("rocm.cuda", env.cuda or ""),
        ("rocm.device", _device_text(sel)),
        ("rocm.source", f"plan: {sel.plan}" if sel.plan else source),
        ("rocm.environment", env.to_json(indent=None)),
    ]
    return props
