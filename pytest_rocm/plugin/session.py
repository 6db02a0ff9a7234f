"""Per-session state: the environment (detected once, lazily, or loaded from ``--rocm-env``, or
handed over by the xdist controller) and the device under test chosen from it.

Contract (DESIGN.md / preamble): ``get_environment(config)``, ``get_device(config)``,
``device_string(config)``. Nothing here imports torch at import time; detection (which does) runs
only when something asks for the environment: a plugin marker on a test that is set up, a plugin
fixture, an option that needs the hardware (--rocm-gfx, --rocm-device=cuda:N, --rocm-require-gpu),
the junit properties, or an xdist controller handing the environment to its workers.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pytest

from pytest_rocm.env import arch
from pytest_rocm.env.model import Device, Environment
from pytest_rocm.plugin.options import Settings


@dataclass(frozen=True)
class Selection:
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


@dataclass
class RocmState:
    settings: Settings
    environment: Environment | None = None
    #: "detected", the recorded file's path, or "detected on the xdist controller"
    source: str = ""
    recorded: bool = False
    selection: Selection | None = None
    header_shown: bool = False
    #: whether a collected test uses a marker or fixture that reads the environment
    tests_need_environment: bool = False


STATE = pytest.StashKey[RocmState]()


def install(config: pytest.Config, state: RocmState) -> None:
    config.stash[STATE] = state


def get_state(config: pytest.Config) -> RocmState:
    state = config.stash.get(STATE, None)
    if state is None:  # plugin configured without our pytest_configure (unusual): defaults
        state = RocmState(Settings())
        config.stash[STATE] = state
    return state


def _detect() -> Environment:
    # Imported here: detect (through the seam) imports torch, which plugin import must not.
    from pytest_rocm.env.detect import detect_environment

    return detect_environment()


def environment_if_known(config: pytest.Config) -> Environment | None:
    """The environment when it was already detected or loaded; never detects."""
    return get_state(config).environment


def get_environment(config: pytest.Config) -> Environment:
    """The session's environment: recorded, handed over by xdist, or detected now (once)."""
    state = get_state(config)
    if state.environment is None:
        state.environment = _detect()
        state.source = "detected"
    return state.environment


def get_selection(config: pytest.Config) -> Selection:
    """The device under test; ``pytest.UsageError`` when the options cannot be satisfied."""
    state = get_state(config)
    if state.selection is None:
        try:
            state.selection = select(get_environment(config), state.settings)
        except SelectionError as exc:
            raise pytest.UsageError(str(exc)) from None
    return state.selection


def get_device(config: pytest.Config) -> Device | None:
    """The device under test (the pretend one in a plan); None when the CPU or nothing."""
    return get_selection(config).device


def device_string(config: pytest.Config) -> str:
    """``cpu`` or ``cuda:N`` (torch spells ROCm devices ``cuda`` too); no torch import."""
    device = get_device(config)
    return "cpu" if device is None else f"cuda:{device.index}"


# -- choosing the device (pure) ---------------------------------------------------------------
class SelectionError(ValueError):
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


def select(env: Environment, settings: Settings) -> Selection:
    """Apply --rocm-device / --rocm-gfx to an environment. Raises SelectionError."""
    devices = tuple(env.devices)
    if settings.forced_cpu:
        return Selection(
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
            raise SelectionError(f"{settings.device_source}=cuda:{settings.device}: no such device; found {found}")
        if settings.gfx and not any(arch.matches(p, chosen.arch) for p in settings.gfx):
            raise SelectionError(
                f"{settings.device_source}=cuda:{settings.device} is {chosen.gfx}, which "
                f"{settings.gfx_source}={','.join(settings.gfx)} excludes"
            )
        return Selection(env, chosen, devices)
    if settings.gfx:
        wanted = ",".join(settings.gfx)
        matching = tuple(d for d in devices if any(arch.matches(p, d.arch) for p in settings.gfx))
        if matching:
            return Selection(env, matching[0], matching, gfx_filter=wanted)
        if devices:
            found = ", ".join(describe_device(d) for d in devices)
            raise SelectionError(f"{settings.gfx_source}={wanted}: no device matches; found {found}")
        return _plan(env, settings)
    if devices:
        return Selection(env, devices[0], devices)
    return Selection(env, None, (), no_device=no_device_reason(env))


def _plan_gfx(pattern: str) -> tuple[str | None, list[str]]:
    """The gfx a plan pretends for a pattern: itself when a gfx name, else the only known match
    (cdna2 -> gfx90a). Several matches are ambiguous: returns (None, matches)."""
    base, _ = arch.split_arch(pattern)
    if arch.is_gfx(base):
        return pattern, [base]
    found = [g for g in arch.known_gfx() if arch.matches(pattern, g)]
    return (found[0] if len(found) == 1 else None), found


def _plan(env: Environment, settings: Settings) -> Selection:
    pattern = settings.gfx[0]
    gfx_arch, found = _plan_gfx(pattern)
    if gfx_arch is None:
        raise SelectionError(
            f"{settings.gfx_source}={','.join(settings.gfx)}: no device here, so this run is a plan, "
            f"and a plan needs one architecture: {pattern} could be {', '.join(found) or 'nothing known'}"
        )
    base, features = arch.split_arch(gfx_arch)
    device = Device(
        index=0,
        name=f"plan for {base}",
        arch=gfx_arch,
        gfx=base,
        hardware_gfx=base,
        features=features,
        in_build=None,
    )
    plan_env = dataclasses.replace(env, backend="rocm", devices=[device])
    return Selection(plan_env, device, (device,), plan=base, gfx_filter=",".join(settings.gfx))
