"""Fixtures ``rocm_env`` (the Environment) and ``rocm_device`` (the torch.device under test).

torch is imported only inside ``rocm_device``. The device fixture skips, naming the cause, when
there is nothing to run on: torch missing, a CPU or CUDA build on an AMD machine, a plan
(``--rocm-gfx`` with no device here), or a recorded environment (``--rocm-env``) whose device is
not really in this machine.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_rocm.env import arch
from pytest_rocm.env.model import Environment
from pytest_rocm.plugin import session as state


@pytest.fixture(scope="session")
def rocm_env(pytestconfig: pytest.Config) -> Environment:
    """The session's environment (recorded with --rocm-env, or detected once)."""
    return state.get_environment(pytestconfig)


def _import_torch(what: str) -> Any:
    try:
        import torch
    except ImportError as exc:
        pytest.skip(f"{what}: torch is not installed ({exc})")
    return torch


def live_device_problem(torch: Any, index: int, gfx: str) -> str | None:
    """Why recorded device ``index`` (``gfx``) is not usable by the live torch; None when it is."""
    if not torch.cuda.is_available():
        return f"torch {torch.__version__} here sees no GPU"
    count = torch.cuda.device_count()
    if index >= count:
        return f"torch here sees only {count} device(s)"
    live = getattr(torch.cuda.get_device_properties(index), "gcnArchName", None)
    if live and gfx.startswith("gfx") and arch.split_arch(live)[0] != gfx:
        return f"device {index} here is {arch.split_arch(live)[0]}"
    return None


@pytest.fixture(scope="session")
def rocm_device(pytestconfig: pytest.Config) -> Any:
    """The torch.device under test (``cuda:N`` for ROCm and CUDA, ``cpu`` with --rocm-device=cpu)."""
    sel = state.get_selection(pytestconfig)
    st = state.get_state(pytestconfig)
    if sel.forced_cpu:
        return _import_torch("the CPU device").device("cpu")
    device = sel.device
    if sel.plan:
        pytest.skip(f"plan for {sel.plan}: no device here, tests that use the device do not run")
    if device is None:
        pytest.skip(f"no device to test on: {sel.no_device}")
    if st.recorded:
        torch = _import_torch(f"recorded environment {st.source}: device {device.index} ({device.gfx})")
        problem = live_device_problem(torch, device.index, device.gfx)
        if problem:
            pytest.skip(
                f"recorded environment {st.source}: device {device.index} ({device.gfx}) is not here: {problem}"
            )
        return torch.device(f"cuda:{device.index}")
    torch = _import_torch(f"device {device.index} ({device.gfx})")
    return torch.device(f"cuda:{device.index}")
