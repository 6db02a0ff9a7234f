"""The checks of what sits around torch: variables that do nothing, a Triton that shadows ROCm's,
the ROCm libraries TheRock does not build for this gfx, and multi-GPU collectives.

Knowledge (the variable names, the libraries per gfx, the RCCL fixes) comes from
``data/doctor.json``, ``data/gfx.json`` and ``data/torch_wheels.json``.
"""

from __future__ import annotations

from packaging.version import InvalidVersion, Version

from pytest_rocm.doctor import ids
from pytest_rocm.doctor.facts import apu_gfxs, hardware_gfxs, knowledge
from pytest_rocm.doctor.model import Check, Extras
from pytest_rocm.env import arch, wheels
from pytest_rocm.env.model import Environment


def check_variables(env: Environment, extras: Extras) -> Check:
    """A variable from widely shared advice that nothing reads: the user believes it is on."""
    known = knowledge()["ineffective_variables"]["list"]
    found = [(name, known[name]) for name in known if env.variables.get(name) is not None]
    if not found:
        return Check(ids.VARIABLES, "ok", "no variable that does nothing is set")
    name, entry = found[0]
    return Check(
        ids.VARIABLES,
        "warn",
        f"{name}={env.variables[name]} is set but does nothing: {entry['why']}",
        f"unset {name}; export {entry['instead']}",
    )


def check_triton(env: Environment, extras: Extras) -> Check:
    """PyPI's triton (built for CUDA) next to a ROCm torch shadows pytorch-triton-rocm."""
    if env.hip is None:
        return Check(ids.TRITON, "skipped", "not a ROCm build of torch")
    pypi = env.libraries.get("triton-pypi")
    rocm = env.libraries.get("pytorch-triton-rocm")
    if not pypi:
        return Check(ids.TRITON, "ok", f"pytorch-triton-rocm {rocm}" if rocm else "no Triton installed")
    beside = f" next to pytorch-triton-rocm {rocm}" if rocm else " instead of pytorch-triton-rocm"
    return Check(
        ids.TRITON,
        "warn",
        f"the PyPI triton {pypi} (a CUDA build) is installed{beside}: it shadows ROCm's Triton and "
        "torch.compile fails (ptxas errors for an sm_ target)",
        "pip uninstall -y triton && pip install --force-reinstall pytorch-triton-rocm --index-url "
        "https://download.pytorch.org/whl/<the rocmX.Y index of your torch>",
    )


def _is_therock(env: Environment) -> bool:
    build = wheels.amd_build(env.torch)
    return build is not None and build.id in ("therock-nightly", "amd-release")


def check_rocm_libraries(env: Environment, extras: Extras) -> Check:
    """What TheRock does not build for this gfx explains a skip (hipBLASLt, CK), a fall-back or a
    missing collective (RCCL)."""
    gfxs = sorted(set(hardware_gfxs(env)))
    missing = {g: arch.therock_excludes(g) for g in gfxs if arch.therock_excludes(g)}
    if not _is_therock(env) or not missing:
        return Check(ids.ROCM_LIBRARIES, "skipped", "not a TheRock build, or no library is left out for this gfx")
    said = "; ".join(f"{g}: no {', '.join(libs)}" for g, libs in missing.items())
    no_rccl = [g for g, libs in missing.items() if "rccl" in libs]
    if no_rccl and len(hardware_gfxs(env)) > 1:
        return Check(
            ids.ROCM_LIBRARIES,
            "warn",
            f"TheRock builds no RCCL for {', '.join(no_rccl)}: torch.distributed's nccl backend is missing on "
            f"these GPUs ({said})",
            "use the gloo backend for collectives on these GPUs, or a GPU TheRock builds RCCL for",
        )
    return Check(
        ids.ROCM_LIBRARIES,
        "ok",
        f"TheRock leaves out {said}: tests of those libraries skip, and torch falls back (hipBLAS instead of "
        "hipBLASLt)",
    )


def check_multi_gpu(env: Environment, extras: Extras) -> Check:
    """More than one discrete GPU: RCCL hangs unless the IOMMU passes through or P2P is off."""
    apus = apu_gfxs()
    discrete = [g for g in hardware_gfxs(env) if g not in apus]
    if len(discrete) < 2:
        return Check(ids.MULTI_GPU, "skipped", f"{len(discrete)} discrete AMD GPU(s): no collectives between GPUs")
    facts = knowledge()["multi_gpu"]
    cmdline_fix, variable_fix = facts["cmdline_fix"], facts["variable_fix"]
    name, value = variable_fix.split("=", 1)
    if env.variables.get(name) == value:
        return Check(ids.MULTI_GPU, "ok", f"{len(discrete)} GPUs, {variable_fix} (no peer-to-peer)")
    if extras.kernel_cmdline is None:
        return Check(ids.MULTI_GPU, "skipped", f"{len(discrete)} GPUs; the kernel command line was not read")
    if cmdline_fix in extras.kernel_cmdline.split():
        return Check(ids.MULTI_GPU, "ok", f"{len(discrete)} GPUs, {cmdline_fix} on the kernel command line")
    return Check(
        ids.MULTI_GPU,
        "warn",
        f"{len(discrete)} GPUs but no {cmdline_fix} on the kernel command line (/proc/cmdline) and {name} is not "
        "set: RCCL collectives (torch.distributed) commonly hang",
        f"add {cmdline_fix} to GRUB_CMDLINE_LINUX_DEFAULT in /etc/default/grub, sudo update-grub and reboot; or "
        f"export {variable_fix} (slower: no peer-to-peer copies)",
    )


def _rocm_release(env: Environment) -> Version | None:
    """The ROCm the torch build runs on (its bundled libraries), else the system's."""
    for value in (env.rocm, env.system.rocm_version):
        if value:
            try:
                return Version(Version(value.split("-")[0]).base_version)
            except InvalidVersion:
                continue
    return None


def check_install_path(env: Environment, extras: Extras) -> Check:
    """A space in the libraries' path: ROCm 6.x then finds no code object (fixed in ROCm 7.0)."""
    facts = knowledge()["space_in_path"]
    rocm = _rocm_release(env)
    if env.hip is None or rocm is None:
        return Check(ids.INSTALL_PATH, "skipped", "not a ROCm build of torch with a known ROCm version")
    if not extras.install_paths:
        return Check(ids.INSTALL_PATH, "skipped", "the install paths were not probed (a recorded environment)")
    spaced = [(what, path) for what, path in extras.install_paths.items() if " " in path]
    if not spaced:
        return Check(ids.INSTALL_PATH, "ok", "no space in the paths of torch and the Python environment")
    what, path = spaced[0]
    if rocm >= Version(facts["fixed_in"]):
        return Check(ids.INSTALL_PATH, "ok", f"{what} is in {path!r} (a space), which ROCm {rocm} handles")
    return Check(
        ids.INSTALL_PATH,
        "fail",
        f"{what} is in {path!r}, a path with a space: ROCm {rocm} then finds no code object ('HIP error: no "
        f"kernel image is available for execution on the device'; ROCm/ROCm#4329, fixed in ROCm {facts['fixed_in']})",
        "recreate the virtual environment (or move the install) under a path without spaces",
    )


def check_rocblas_targets(env: Environment, extras: Extras) -> Check:
    """A gfx whose rocBLAS kernels the installed ROCm no longer ships (gfx906 from ROCm 6.4)."""
    rocm = _rocm_release(env)
    if env.hip is None or rocm is None:
        return Check(ids.ROCBLAS_TARGETS, "skipped", "not a ROCm build of torch with a known ROCm version")
    dropped = knowledge()["rocblas_dropped"]["list"]
    for gfx in sorted(set(hardware_gfxs(env))):
        entry = dropped.get(gfx)
        if entry is not None and rocm >= Version(entry["from"]):
            return Check(
                ids.ROCBLAS_TARGETS,
                "fail",
                f"{gfx}: rocBLAS of ROCm {rocm} ships no kernels for it (dropped in ROCm {entry['from']}): every "
                f"GEMM fails with '{entry['error']}'",
                f"use a torch built on ROCm {entry['last_good']} ({wheels.rocm_install_line(entry['last_good'])})",
            )
    return Check(ids.ROCBLAS_TARGETS, "ok", f"rocBLAS of ROCm {rocm} ships kernels for this machine's GPUs")
