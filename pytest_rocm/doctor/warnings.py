"""What is wrong with an environment: the warnings the pytest header and ``rocm-compat env`` print.

Pure: reads only an :class:`~pytest_rocm.env.model.Environment`, detected or recorded, so the
header of a ``--rocm-env`` run warns exactly as the recorded machine's own run would.
"""

from __future__ import annotations

from pytest_rocm.env import arch
from pytest_rocm.env.model import Environment

AMD_VENDOR_ID = 4098  # 0x1002


def _kernel_gpus(env: Environment) -> str:
    names = sorted({g.gfx or "unknown gfx" for g in env.system.gpus})
    return f"{len(env.system.gpus)} AMD GPU{'s' if len(env.system.gpus) != 1 else ''} ({', '.join(names)})"


def environment_warnings(env: Environment) -> list[str]:
    """One line per problem that will make a run fail or mislead, most serious first.

    Pure: reads only ``env`` (so it works on a recorded environment too). The plugin header and
    ``rocm-compat env`` print these.
    """
    warnings: list[str] = []
    amd_gpus = [g for g in env.system.gpus if g.vendor_id in (None, AMD_VENDOR_ID)]
    if env.torch_error and amd_gpus:
        warnings.append(f"{env.torch_error}, but the kernel reports {_kernel_gpus(env)}")
    elif env.torch and not env.hip and amd_gpus:
        kind = f"a CUDA build ({env.torch})" if env.cuda else f"a CPU-only build ({env.torch})"
        warnings.append(f"torch is {kind} but the kernel reports {_kernel_gpus(env)}: install a ROCm build of torch")
    for device in env.devices:
        if device.in_build is False:
            expect = "hipErrorNoBinaryForGpu" if env.backend == "rocm" else "'no kernel image is available'"
            warnings.append(
                f"{device.gfx} is not in this torch build's arch list: expect {expect} "
                f"(device {device.index}, {device.name})"
            )
    override = env.variables.get("HSA_OVERRIDE_GFX_VERSION")
    if override:
        try:
            target = arch.parse_override(override)
        except ValueError as exc:
            warnings.append(f"{exc}: the runtime rejects it")
        else:
            spoofed = sorted({d.hardware_gfx for d in env.devices if d.hardware_gfx and d.hardware_gfx != d.gfx})
            for real in spoofed:
                warnings.append(f"HSA_OVERRIDE_GFX_VERSION={override} makes {real} report as {target}")
            native = [d for d in env.devices if d.hardware_gfx == target]
            if native and not spoofed:
                warnings.append(f"HSA_OVERRIDE_GFX_VERSION={override} is set but {target} needs no override")
    else:
        for device in env.devices:
            if device.hardware_gfx and device.hardware_gfx != device.gfx:
                warnings.append(
                    f"device {device.index} reports {device.gfx} but the kernel says it is {device.hardware_gfx} "
                    "(a per-node HSA_OVERRIDE_GFX_VERSION_<node>, or a device order this tool misread)"
                )
    if env.hip and not env.devices and amd_gpus:
        if not env.system.kfd:
            warnings.append("no /dev/kfd: the amdgpu driver is not loaded, or the container lacks --device /dev/kfd")
        elif env.system.kfd_access is False:
            warnings.append(
                "cannot open /dev/kfd read-write: add the user to the render and video groups "
                "(sudo usermod -a -G render,video $USER) and log in again"
            )
        else:
            warnings.append(f"torch sees no GPU although the kernel reports {_kernel_gpus(env)}")
    gfxs = sorted({d.gfx for d in env.devices})
    if env.backend == "rocm" and len(gfxs) > 1:
        warnings.append(
            f"torch sees devices of different architectures ({', '.join(gfxs)}), an iGPU perhaps: "
            "pick one with --rocm-gfx or HIP_VISIBLE_DEVICES"
        )
    if env.system.errors:
        warnings.append(f"{len(env.system.errors)} probe(s) failed: {env.system.errors[0]}")
    return warnings
