"""Per-session state: the environment (recorded with ``--rocm-env``, handed over by the xdist
controller, supplied by a ``pytest_rocm_detect_environment`` hook, or detected once, lazily) and the
device under test chosen from it (:mod:`pytest_rocm.plugin.selection`, pure).

A run that will need the environment only later (for its report) starts detecting in a child
process at configure time (:func:`prefetch`, :mod:`pytest_rocm.env.child`): the tests run on one
core while torch is imported on another, and the test process never imports torch for it. The
first ``get_environment`` joins the child; when the child fails, detection runs in-process.

Contract (docs/design.md, docs/plugin.md): ``get_environment(config)``, ``get_device(config)``,
``device_string(config)``. Nothing here imports torch at import time; detection (which does) runs
only when something asks for the environment: a plugin marker on a test that is set up, a plugin
fixture, an option that needs the hardware (--rocm-gfx, --rocm-device=cuda:N, --rocm-require-gpu),
the junit properties, or an xdist controller handing the environment to its workers.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import pytest

from pytest_rocm.env import child
from pytest_rocm.env.model import Device, Environment
from pytest_rocm.plugin.options import Settings
from pytest_rocm.plugin.selection import Selection, SelectionError, select

__all__ = [
    "HOOK_SOURCE",
    "STATE",
    "RocmState",
    "Selection",
    "SelectionError",
    "device_string",
    "environment_if_known",
    "get_device",
    "get_environment",
    "get_selection",
    "get_state",
    "install",
    "pending_detection",
    "prefetch",
    "select",
    "stop_prefetch",
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
    selection: Selection | None = None
    header_shown: bool = False
    #: the doctor's lines the header printed before the environment was known (not repeated after)
    early_lines: frozenset[str] = frozenset()
    #: whether a collected test uses a marker or fixture that reads the environment
    tests_need_environment: bool = False
    #: detection running in a child process (:func:`prefetch`), until get_environment joins it
    detection: child.PendingDetection | None = None


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
    if state.detection is not None:
        pending, state.detection = state.detection, None
        found = pending.result()
        if found is not None:
            return found
        # the child failed (its line goes into system.errors): the in-process detection decides
        environment = _detect_here()
        environment.system.errors.append(pending.failure)
        return environment
    return _detect_here()


def _detect_here() -> Environment:
    # Imported here: detect (through the seam) imports torch, which plugin import must not.
    from pytest_rocm.env.detect import detect_environment

    return detect_environment()


def prefetch(config: pytest.Config) -> None:
    """Start detecting in a child process when nothing has the environment yet and torch is not
    imported here (imported, or blocked with ``sys.modules["torch"] = None``, in-process detection
    is what describes this process). A ``pytest_rocm_detect_environment`` hook still wins: it is
    asked first when the environment is needed, and the child is then stopped unread."""
    state = get_state(config)
    if state.environment is None and state.detection is None and "torch" not in sys.modules:
        state.detection = child.start()


def pending_detection(config: pytest.Config) -> child.PendingDetection | None:
    """The child detection not yet joined, if any (never blocks)."""
    return get_state(config).detection


def stop_prefetch(config: pytest.Config) -> None:
    """At the end of the run: a child detection nobody joined is stopped."""
    state = get_state(config)
    if state.detection is not None:
        state.detection.cancel()
        state.detection = None


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
        supplied = _from_hook(config)
        if supplied is not None:
            state.environment, state.source = supplied, HOOK_SOURCE
            stop_prefetch(config)
        else:
            state.environment, state.source = _detect(state), "detected"
    return state.environment


def get_selection(config: pytest.Config) -> Selection:
    """The device under test; ``pytest.UsageError`` when the options cannot be satisfied."""
    state = get_state(config)
    if state.selection is None:
        try:
            here = None
            if state.recorded and state.settings.gfx:  # is the recorded machine this one? (no torch)
                from pytest_rocm.plugin.plan import architectures_here

                here = architectures_here()
            state.selection = select(get_environment(config), state.settings, here)
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
