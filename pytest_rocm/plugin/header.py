"""What the session says about its environment: the header line(s), the verbose listing and the
junit test-suite properties. Pure functions of a :class:`~pytest_rocm.plugin.session.Selection`."""

from __future__ import annotations

from pytest_rocm.env.model import Environment
from pytest_rocm.env.render import format_size
from pytest_rocm.plugin.session import Selection

PREFIX = "rocm: "


def warnings(sel: Selection) -> list[str]:
    """Facts that predict a broken or misleading run (no kernels for this gfx, an override that
    hides the silicon, a CUDA/CPU wheel on an AMD machine); shown before the header line.
    Detection owns the wording (``rocm-compat env`` prints the same lines)."""
    from pytest_rocm.doctor.warnings import (
        environment_warnings,  # lazy: keeps plugin import small
    )

    return [f"{PREFIX}WARNING: {line}" for line in environment_warnings(sel.env)]


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


def header_lines(sel: Selection, source: str, verbose: int) -> list[str]:
    lines = [*warnings(sel), header_line(sel, source)]
    if verbose > 0:
        lines += verbose_lines(sel.env)
    return lines


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
