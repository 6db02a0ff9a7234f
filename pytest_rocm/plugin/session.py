"""Per-session state: the environment (recorded with ``--rocm-env``, handed over by the xdist
controller, supplied by a ``pytest_rocm_detect_environment`` hook, or detected once, lazily) and the
device under test chosen from it (:mod:`pytest_rocm.plugin.device_choice`, pure).

Detection reads torch's installed files first (:mod:`pytest_rocm.env.torchfiles`): where they tell
everything (no torch, a CPU build, a GPU build whose runtime would find no device) nothing imports
torch, and a report run knows its environment from the start. Else detection imports torch. A run
that needs the environment only for its report then detects where the tests already paid for torch: in this process, once torch is imported and detecting can change
nothing the tests see (:func:`detect_if_harmless`: a CPU build of torch, or a GPU runtime the tests
initialised themselves), else at the end of the run. Only a run that never imports torch detects in
a child process (:mod:`pytest_rocm.env.background`), so the test process never imports torch, nor
initialises HIP, for the plugin's sake; a child started at configure time cost a second
``import torch`` (~2.3 s of CPU) to every suite that imports torch itself.

Contract (docs/design.md, docs/plugin.md): ``get_environment(config)``, ``get_device(config)``,
``device_string(config)``. Nothing here imports torch at import time; detection (which does) runs
only when something asks for the environment: a plugin marker on a test that is set up, a plugin
fixture, an option that needs the hardware (--rocm-gfx, --rocm-device=cuda:N, --rocm-require-gpu),
the junit properties, an xdist controller handing the environment to its workers, or the report.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from pytest_rocm.env import background
from pytest_rocm.env.model import Device, Environment
from pytest_rocm.plugin.device_choice import DeviceChoice, DeviceChoiceError, choose_device
from pytest_rocm.plugin.options import Settings

__all__ = [
    "HOOK_SOURCE",
    "STATE",
    "DeviceChoice",
    "DeviceChoiceError",
    "RocmState",
    "choose_device",
    "detect_if_harmless",
    "device_string",
    "environment_if_known",
    "get_device",
    "get_device_choice",
    "get_environment",
    "get_state",
    "in_process_detection_is_harmless",
    "install",
]

#: the environment's source (header ``[env: ...]``, junit ``rocm.source``) when a hook supplied it
HOOK_SOURCE = "pytest_rocm_detect_environment"


@dataclass
class RocmState:
    settings: Settings
    environment: Environment | None = None
    #: "detected", HOOK_SOURCE, or the recorded file's path (on a worker: the controller's)
    source: str = ""
    recorded: bool = False
    device_choice: DeviceChoice | None = None
    header_shown: bool = False
    #: the doctor's lines the header printed before the environment was known (not repeated after)
    early_lines: frozenset[str] = frozenset()
    #: whether a collected test uses a marker or fixture that reads the environment
    tests_need_environment: bool = False
    #: torch's installed files were asked (``env.torchfiles``), and the hook, if any, declined:
    #: neither is asked twice
    files_tried: bool = False
    hook_declined: bool = False


STATE = pytest.StashKey[RocmState]()


def install(config: pytest.Config, state: RocmState) -> None:
    config.stash[STATE] = state


def get_state(config: pytest.Config) -> RocmState:
    state = config.stash.get(STATE, None)
    if state is None:  # plugin configured without our pytest_configure (unusual): defaults
        state = RocmState(Settings())
        config.stash[STATE] = state
    return state


def _detect(state: RocmState) -> Environment:
    """Detect now: in this process where torch is imported (or blocked); else from torch's installed
    files where they tell everything (``env.torchfiles``: no torch, a CPU build, a GPU build whose
    runtime would find no device), so nothing imports torch; else in this process where no report
    asks, else (a report run whose tests never imported torch) in a child process, so this one
    stays without it."""
    if "torch" in sys.modules:
        return _detect_here()
    found = None if state.files_tried else _detect_from_files(state)
    if found is not None:
        return found
    if not state.settings.report:
        return _detect_here()
    pending = background.start()
    found = pending.result()
    if found is not None:
        return found
    # the child failed (its line goes into system.errors): the in-process detection decides
    environment = _detect_here()
    environment.system.errors.append(pending.failure)
    return environment


def _detect_from_files(state: RocmState) -> Environment | None:
    """The environment read from torch's installed files, where they tell everything (``None``
    else); tried once."""
    from pytest_rocm.env import torchfiles  # torch-free

    state.files_tried = True
    return torchfiles.detect_without_torch()


def _detect_here() -> Environment:
    # Imported here: detect (through the seam) imports torch, which plugin import must not.
    from pytest_rocm.env.detect import detect_environment

    return detect_environment()


def in_process_detection_is_harmless(modules: Mapping[str, Any]) -> bool:
    """Whether detecting in this process now changes nothing a test could see (``modules``:
    ``sys.modules``). Pure.

    True when torch is blocked (``sys.modules["torch"] = None``: nothing to import), or imported and
    either a build without a GPU runtime (``torch.version.hip`` and ``.cuda`` both None) or one whose
    runtime the tests initialised already (``torch.cuda.is_initialized()``). False while torch is
    not imported (detection would import it), half imported (no ``torch.version`` yet), or a GPU
    build not initialised: detection would initialise HIP/CUDA, and a later ``HIP_VISIBLE_DEVICES``
    or a forked DataLoader worker would find the process changed."""
    if "torch" not in modules:
        return False
    torch = modules["torch"]
    if torch is None:
        return True
    version = getattr(torch, "version", None)
    if version is None or not hasattr(torch, "__version__"):
        return False
    if getattr(version, "hip", None) is None and getattr(version, "cuda", None) is None:
        return True
    try:
        return bool(torch.cuda.is_initialized())
    except Exception:  # a torch without a usable cuda module: leave it to the end of the run
        return False


def detect_if_harmless(config: pytest.Config) -> bool:
    """Whether the environment is known, detecting it first where that is harmless now
    (:func:`in_process_detection_is_harmless`); never imports torch, never blocks on a child. Cheap
    while torch is not imported (one lookup): the report asks after every test."""
    state = get_state(config)
    if state.environment is not None:
        return True
    if in_process_detection_is_harmless(sys.modules):
        get_environment(config)
        return True
    if state.files_tried or "torch" in sys.modules:  # a GPU build imported, not initialised: wait
        return False
    # Not imported: torch's installed files may tell everything (no torch, a CPU build, a GPU build
    # that would find no device), read in milliseconds without importing it; asked once.
    supplied = _from_hook(config) if not state.hook_declined else None
    if supplied is not None:
        state.environment, state.source = supplied, HOOK_SOURCE
        return True
    state.hook_declined = True
    found = _detect_from_files(state)
    if found is None:
        return False
    state.environment, state.source = found, "detected"
    return True


def environment_if_known(config: pytest.Config) -> Environment | None:
    """The environment when it was already detected or loaded; never detects."""
    return get_state(config).environment


def _from_hook(config: pytest.Config) -> Environment | None:
    """What a ``pytest_rocm_detect_environment`` implementation supplies (first non-None), else None."""
    hook = getattr(config.hook, "pytest_rocm_detect_environment", None)  # None: hookspecs not added
    supplied = hook(config=config) if hook is not None else None
    if supplied is not None and not isinstance(supplied, Environment):
        raise pytest.UsageError(
            f"{HOOK_SOURCE} returned {type(supplied).__name__}: expected a "
            "pytest_rocm.env.model.Environment, or None to let the plugin detect"
        )
    return supplied


def get_environment(config: pytest.Config) -> Environment:
    """The session's environment: recorded, handed over by xdist, or else (once) what a
    ``pytest_rocm_detect_environment`` hook supplies, or else detected now."""
    state = get_state(config)
    if state.environment is None:
        supplied = None if state.hook_declined else _from_hook(config)
        if supplied is not None:
            state.environment, state.source = supplied, HOOK_SOURCE
        else:
            state.environment, state.source = _detect(state), "detected"
    return state.environment


def get_device_choice(config: pytest.Config) -> DeviceChoice:
    """The device under test; ``pytest.UsageError`` when the options cannot be satisfied."""
    state = get_state(config)
    if state.device_choice is None:
        try:
            here = None
            if state.recorded and state.settings.gfx:  # is the recorded machine this one? (no torch)
                from pytest_rocm.plugin.plan import architectures_here

                here = architectures_here()
            state.device_choice = choose_device(get_environment(config), state.settings, here)
        except DeviceChoiceError as exc:
            raise pytest.UsageError(str(exc)) from None
    return state.device_choice


def get_device(config: pytest.Config) -> Device | None:
    """The device under test (the pretend one in a plan); None when the CPU or nothing."""
    return get_device_choice(config).device


def device_string(config: pytest.Config) -> str:
    """``cpu`` or ``cuda:N`` (torch spells ROCm devices ``cuda`` too); no torch import."""
    device = get_device(config)
    return "cpu" if device is None else f"cuda:{device.index}"
