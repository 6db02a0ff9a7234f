"""The readable form of an Environment: the one renderer, for ``rocm-compat env`` and the
header of ``pytest -v`` (each line there prefixed ``rocm:   ``)."""

from __future__ import annotations

from pytest_rocm.env import arch
from pytest_rocm.env.model import Environment


def format_size(n: int | None) -> str:
    """Bytes as every output shows them: ``24.0 GiB``, ``512 MiB``, ``?`` when unknown."""
    if n is None:
        return "?"
    if n >= 2**30:
        return f"{n / 2**30:.1f} GiB"
    if n >= 2**20:
        return f"{n / 2**20:.0f} MiB"
    return f"{n} B"


def yes_no(value: bool | None, yes: str = "yes", no: str = "NO") -> str:
    """A fact that may be unknown: ``yes``, ``NO`` (what is wrong stands out) or ``unknown``."""
    return "unknown" if value is None else yes if value else no


def format_summary(env: Environment, problems: list[str]) -> str:
    """``rocm-compat env``: the environment's lines, then what is wrong (``problems``: the
    doctor's one-line forms of its failing and warning checks)."""
    lines = environment_lines(env)
    if problems:
        noun = "problem" if len(problems) == 1 else "problems"
        lines.append(f"doctor     {len(problems)} {noun} (`rocm-compat doctor` says how to fix them)")
        lines.extend(f"  {p}" for p in problems)
    return "\n".join(lines)


def environment_lines(env: Environment) -> list[str]:
    """The environment, one fact group a line: what torch uses, what the kernel has, the host,
    the variables and libraries, what could not be read."""
    lines = [f"backend    {env.backend}"]
    if env.torch:
        build = f"hip {env.hip}, rocm {env.rocm}" if env.hip else f"cuda {env.cuda}" if env.cuda else "CPU-only build"
        lines.append(f"torch      {env.torch} ({build})")
    else:
        lines.append(f"torch      not usable: {env.torch_error or 'unknown'}")
    if env.arch_list:
        lines.append(f"arch list  {' '.join(env.arch_list)}")
    lines.append(f"devices    {len(env.devices)} usable by torch")
    for d in env.devices:
        hardware = "" if d.hardware_gfx in (None, d.gfx) else f"silicon {d.hardware_gfx}"
        unknown_hw = "silicon unknown" if d.hardware_gfx is None and env.backend == "rocm" else ""
        about = ", ".join(x for x in (arch.family_of(d.gfx), hardware, unknown_hw) if x)
        units = "SMs" if d.gfx.startswith("sm_") else "CUs"
        lines.append(
            f"  [{d.index}] {d.name}: {d.arch}{f' ({about})' if about else ''}, "
            f"{format_size(d.total_memory)}, {d.compute_units if d.compute_units is not None else '?'} {units}, "
            f"in build: {yes_no(d.in_build)}"
        )
    system = env.system
    lines.append(f"kernel     {len(system.gpus)} GPU(s) in the KFD topology")
    for g in system.gpus:
        name = arch.marketing_name(g.gfx) if g.gfx else None
        lines.append(
            f"  node {g.node}: {arch.describe(g.gfx) if g.gfx else 'unknown gfx (old kernel?)'}"
            f"{f' [{name}]' if name else ''}, VRAM {format_size(g.vram)}"
            f"{f', renderD{g.render_minor}' if g.render_minor else ''}"
        )
    if system.kfd:
        access = {True: "read-write ok", False: "NOT accessible read-write", None: "access unknown"}[system.kfd_access]
        lines.append(f"/dev/kfd   present, {access}; groups: {', '.join(system.groups) or 'none'}")
    else:
        lines.append(f"/dev/kfd   absent; groups: {', '.join(system.groups) or 'none'}")
    if system.amdgpu_loaded:
        lines.append(f"amdgpu     loaded, version {system.amdgpu_version or 'not reported (in-tree driver)'}")
    else:
        lines.append(f"amdgpu     {'not loaded' if system.amdgpu_loaded is False else 'unknown'}")
    lines.append(f"ROCm       {system.rocm_version or 'no /opt/rocm/.info/version'}")
    lines.append(
        f"host       {env.platform or '?'}, python {env.python or '?'}, memory "
        f"{format_size(system.memory_total) if system.memory_total else '?'}{', WSL' if system.wsl else ''}"
    )
    set_vars = [f"{k}={v}" for k, v in env.variables.items() if v is not None]
    lines.append(f"variables  {' '.join(set_vars) if set_vars else 'none set'}")
    libs = [f"{k} {v}" for k, v in env.libraries.items() if v]
    missing = [k for k, v in env.libraries.items() if not v]
    lines.append(
        f"libraries  {', '.join(libs) if libs else 'none installed'}"
        + (f"; not installed: {', '.join(missing)}" if missing and libs else "")
    )
    lines.extend(f"unreadable {error}" for error in system.errors)
    return lines
