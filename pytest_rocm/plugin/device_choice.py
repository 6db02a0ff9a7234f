"""Choosing the device under test from an environment and the options (pure: no pytest, no torch),
and the facts about that choice that skip reasons quote. (A *device choice*, never a "selection":
that word is the tests a run selected, ``report.selection``.)

:func:`choose_device` applies ``--rocm-device`` / ``--rocm-gfx`` to an :class:`~pytest_rocm.env.model.Environment`
and returns a :class:`DeviceChoice`; options this environment cannot meet raise :class:`DeviceChoiceError`
(the plugin turns it into a usage error). ``--rocm-gfx`` with no device here makes the choice a
*plan*: one pretend device of that architecture. :mod:`pytest_rocm.plugin.session` caches the
session's device choice; markers (:mod:`pytest_rocm.plugin.marks`) are decided from it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from pytest_rocm.env import arch
from pytest_rocm.env.model import Device, Environment
from pytest_rocm.plugin import plan
from pytest_rocm.plugin.options import Settings


@dataclass(frozen=True)
class DeviceChoice:
    """The device under test and the environment markers are decided from."""

    #: the environment decisions use (a plan adds the pretend device to the real one)
    env: Environment
    device: Device | None
    #: devices that count for ``gpus(n)`` (those matching --rocm-gfx when given)
    candidates: tuple[Device, ...] = ()
    forced_cpu: bool = False
    #: the gfx a plan pretends (``--rocm-gfx`` with no device here), else None
    plan: str | None = None
    #: why there is no device under test, phrased to follow "needs a GPU, " ("" when there is one)
    no_device: str = ""
    #: text of the --rocm-gfx restriction for messages ("gfx1030"), "" when none
    gfx_filter: str = ""
    #: a plan whose wheel (--rocm-plan-combo) has no kernels for its gfx: why ("" otherwise)
    plan_wheel_gap: str = ""
    #: a plan decided on a recording's devices of that gfx (``--rocm-env``), not on a pretend one
    plan_recorded: bool = False


class DeviceChoiceError(ValueError):
    """Options that this environment cannot satisfy; the message is the whole usage error."""


def describe_device(device: Device) -> str:
    """``0:gfx1100 (AMD Radeon RX 7900 XTX)``"""
    return f"{device.index}:{device.gfx} ({device.name})"


def no_device_reason(env: Environment) -> str:
    """Why torch offers no device here, for skip reasons and errors: names the observed fact."""
    kernel = [g.gfx or "unknown gfx" for g in env.system.gpus]
    seen = f"; the kernel reports {len(kernel)} GPU(s): {', '.join(kernel)}" if kernel else ""
    if env.torch is None:
        # torch_error already says which: "torch is not installed" or "torch failed to import: ..."
        return f"{env.torch_error or 'torch is not installed'}{seen}"
    if env.backend == "cuda" or (env.cuda and not env.hip):
        if kernel:
            return f"torch {env.torch} is a CUDA build and cannot use AMD GPUs{seen}"
        return f"torch {env.torch} sees no CUDA device"
    if not env.hip:
        return f"torch {env.torch} is a CPU build (no ROCm or CUDA runtime){seen}"
    access = ""
    if env.system.kfd and env.system.kfd_access is False:
        access = "; /dev/kfd is not accessible to this user (groups render, video)"
    elif env.system.gpus and not env.system.kfd:
        access = "; /dev/kfd is missing"
    return f"torch {env.torch} sees no GPU{access}{seen}"


def choose_device(env: Environment, settings: Settings, here: frozenset[str] | None = None) -> DeviceChoice:
    """Apply --rocm-device / --rocm-gfx to an environment. Raises DeviceChoiceError.

    ``here``: for a recorded environment (``--rocm-env``), the architectures this machine's kernel
    shows (``plan.architectures_here``); None when the environment was detected here. With
    ``--rocm-gfx``, a recorded device of that architecture that is not here makes the run a plan
    *with a recording*: its markers are decided on the recorded devices (their memory and count,
    the recording's torch and ROCm), and no test runs on hardware that is not there."""
    choice = _choose(env, settings, here)
    if settings.plan_source and not choice.plan:
        raise DeviceChoiceError(
            f"{settings.plan_source}: only a plan takes versions (--rocm-gfx with no device here); "
            "this run decides from the device and torch it has"
        )
    return choice


def _here(device: Device, here: frozenset[str]) -> bool:
    """Whether a recorded device's architecture is on this machine (an NVIDIA one: any NVIDIA GPU)."""
    return (plan.NVIDIA_HERE in here) if arch.is_nvidia(device.gfx) else device.gfx in here


def _choose(env: Environment, settings: Settings, here: frozenset[str] | None = None) -> DeviceChoice:
    devices = tuple(env.devices)
    if settings.forced_cpu:
        return DeviceChoice(
            env,
            None,
            (),
            forced_cpu=True,
            no_device=f"the device under test is the CPU ({settings.device_source}=cpu)",
        )
    if isinstance(settings.device, int):
        chosen = next((d for d in devices if d.index == settings.device), None)
        if chosen is None:
            found = ", ".join(describe_device(d) for d in devices) or f"none ({no_device_reason(env)})"
            raise DeviceChoiceError(f"{settings.device_source}=cuda:{settings.device}: no such device; found {found}")
        if settings.gfx and not any(arch.matches(p, chosen.arch) for p in settings.gfx):
            raise DeviceChoiceError(
                f"{settings.device_source}=cuda:{settings.device} is {chosen.gfx}, which "
                f"{settings.gfx_source}={','.join(settings.gfx)} excludes"
            )
        return DeviceChoice(env, chosen, devices)
    if settings.gfx:
        wanted = ",".join(settings.gfx)
        matching = tuple(d for d in devices if any(arch.matches(p, d.arch) for p in settings.gfx))
        if matching and here is not None and not _here(matching[0], here):
            return _plan(env, settings, matching)  # a recording of a machine that is not this one
        if matching:
            return DeviceChoice(env, matching[0], matching, gfx_filter=wanted)
        if devices:
            found = ", ".join(describe_device(d) for d in devices)
            raise DeviceChoiceError(f"{settings.gfx_source}={wanted}: no device matches; found {found}")
        return _plan(env, settings)
    if devices:
        return DeviceChoice(env, devices[0], devices)
    return DeviceChoice(env, None, (), no_device=no_device_reason(env))


def _plan_gfx(pattern: str) -> tuple[str | None, list[str]]:
    """The architecture a plan pretends for a pattern: itself when a gfx or an NVIDIA ``sm_NN``
    name, else the only known gfx match (cdna2 -> gfx90a). Several matches are ambiguous, and
    an ``sm_`` glob names none of the known: returns (None, matches)."""
    base, _ = arch.split_arch(pattern)
    if arch.is_gfx(base) or arch.is_nvidia(base):
        return pattern, [base]
    found = [g for g in arch.known_gfx() if arch.matches(pattern, g)]
    return (found[0] if len(found) == 1 else None), found


def _cuda_plan_problem(settings: Settings, base: str) -> str | None:
    """A plan for an NVIDIA architecture assumes a CUDA torch: ROCm versions do not apply."""
    if settings.plan_rocm is None and settings.plan_combo is None:
        return None
    return (
        f"{settings.plan_source}: the plan for {base} is a CUDA plan, which assumes no ROCm "
        "(--rocm-plan-torch is the version it takes)"
    )


def _plan(env: Environment, settings: Settings, recorded: tuple[Device, ...] = ()) -> DeviceChoice:
    """The plan's device choice: one pretend device of the architecture, or, with a recording of a
    machine that has it, that machine's devices of it (memory, count, name) and its versions."""
    if recorded:
        base = recorded[0].gfx
        plan_env = dataclasses.replace(
            env,
            devices=list(recorded),
            rocm=None if arch.is_nvidia(base) else settings.plan_rocm or env.rocm,
            torch=settings.plan_torch or env.torch,
        )
        gap = plan.wheel_gap(settings.plan_combo, base) if settings.plan_combo else ""
        return DeviceChoice(
            plan_env,
            recorded[0],
            recorded,
            plan=base,
            gfx_filter=",".join(settings.gfx),
            plan_wheel_gap=gap,
            plan_recorded=True,
        )
    pattern = settings.gfx[0]
    gfx_arch, found = _plan_gfx(pattern)
    if gfx_arch is None:
        known = ", ".join(found) or (
            "no single one (name one: sm_90)" if pattern.startswith("sm_") else "nothing known"
        )
        raise DeviceChoiceError(
            f"{settings.gfx_source}={','.join(settings.gfx)}: no device here, so this run is a plan, "
            f"and a plan needs one architecture: {pattern} could be {known}"
        )
    base, features = arch.split_arch(gfx_arch)
    if arch.is_nvidia(base):
        problem = _cuda_plan_problem(settings, base)
        if problem:
            raise DeviceChoiceError(problem)
    device = Device(
        index=0,
        name=f"plan for {base}",
        arch=gfx_arch,
        gfx=base,
        hardware_gfx=base,
        features=features,
        in_build=None,
    )
    # the versions the plan was given, else this machine's (a ROCm torch without a GPU here has a
    # ROCm; a CPU one has none, and rocm_version markers then say how to give one)
    cuda = arch.is_nvidia(base)  # the CUDA column, planned the same way: backend cuda, no ROCm
    plan_env = dataclasses.replace(
        env,
        backend="cuda" if cuda else "rocm",
        devices=[device],
        rocm=None if cuda else settings.plan_rocm or env.rocm,
        torch=settings.plan_torch or env.torch,
    )
    gap = plan.wheel_gap(settings.plan_combo, base) if settings.plan_combo else ""
    return DeviceChoice(plan_env, device, (device,), plan=base, gfx_filter=",".join(settings.gfx), plan_wheel_gap=gap)


# -- facts that skip reasons quote ------------------------------------------------------------------
def describe_pattern(pattern: str) -> str:
    """``gfx942 (cdna3)`` for a gfx name; a glob or family as written."""
    base, _ = arch.split_arch(pattern)
    return arch.describe(pattern) if arch.is_gfx(base) else pattern


def matches_any(patterns: tuple[str, ...], choice: DeviceChoice) -> bool:
    """Whether the device under test matches one of the architecture patterns (no device: no)."""
    return choice.device is not None and any(arch.matches(p, choice.device.arch) for p in patterns)


def device_fact(choice: DeviceChoice) -> str:
    """``device 0 is gfx1100 (rdna3)``, with the silicon when an override hides it; call only
    with a device under test."""
    d = choice.device
    assert d is not None
    if choice.plan:
        return f"the plan is for {arch.describe(d.gfx)}"
    fact = f"device {d.index} is {arch.describe(d.gfx)}"
    if d.hardware_gfx and d.hardware_gfx != d.gfx:
        override = choice.env.variables.get("HSA_OVERRIDE_GFX_VERSION")
        how = f" through HSA_OVERRIDE_GFX_VERSION={override}" if override else ""
        fact += f" (silicon {d.hardware_gfx}{how})"
    return fact


def runtime_version(choice: DeviceChoice, what: str) -> tuple[str | None, str]:
    """(version, why it is missing) of ``"rocm"`` or ``"torch"`` in the decision environment."""
    env = choice.env
    if what == "torch":
        if env.torch is None:
            return None, "torch is not installed"
        return env.torch, ""
    if env.rocm:
        return env.rocm, ""
    if env.torch is None:
        return None, "torch is not installed"
    if choice.plan and env.backend == "cuda":
        return None, f"the plan for {choice.plan} is a CUDA plan, which has no ROCm runtime"
    if choice.plan:
        return None, (
            f"the plan for {choice.plan} knows no ROCm version "
            "(give it one: --rocm-plan-rocm=6.2 or --rocm-plan-combo=NAME, or use --rocm-env)"
        )
    return None, f"torch {env.torch} has no ROCm runtime (backend {env.backend})"


def require_gpu_problem(choice: DeviceChoice, settings: Settings) -> str | None:
    """The usage error --rocm-require-gpu raises for this device choice, or None."""
    if choice.plan:
        return (
            f"{settings.require_gpu_source}: no GPU here; {settings.gfx_source}="
            f"{','.join(settings.gfx)} only plans for {choice.plan}"
        )
    if choice.device is None:
        return f"{settings.require_gpu_source}: no GPU to test on: {choice.no_device}"
    return None
