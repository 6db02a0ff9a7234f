"""pytest-xdist: the controller hands each worker the environment and one GPU.

The controller detects (or loads) the environment once and hands it to every worker in
``workerinput``, so workers never detect. And one GPU per worker (the isolation options
``-n``/``--timeout``: ``suite_command``):

With ``-n N`` and several devices of the architecture under test, each worker gets its own device
by restricting the backend's visible-devices variable (``HIP_VISIBLE_DEVICES`` for ROCm,
``CUDA_VISIBLE_DEVICES`` for CUDA) in that worker *before torch is imported there*: the controller
puts it into the worker's gateway spec (``env:``), which execnet applies when the process starts,
before pytest or any conftest runs, and hands it in ``workerinput`` too, so the worker re-applies it
in ``pytest_configure`` and the report can say which device a worker had.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

import pytest

from pytest_rocm.env.model import Device, Environment

WORKERINPUT_KEY = "rocm_visible_devices"
#: workerinput keys through which the controller hands the environment over
WORKER_ENV = "rocm_environment"
WORKER_SOURCE = "rocm_environment_source"
WORKER_RECORDED = "rocm_environment_recorded"
VISIBLE_VARIABLE = {"rocm": "HIP_VISIBLE_DEVICES", "cuda": "CUDA_VISIBLE_DEVICES"}


def device_pool(env: Environment, primary: Device | None = None) -> list[Device]:
    """Devices interchangeable with the device under test: same gfx (an iGPU is never picked)."""
    if not env.devices:
        return []
    primary = primary or env.devices[0]
    return [d for d in env.devices if d.gfx == primary.gfx]


def assign_visible_devices(
    env: Environment, n_workers: int, primary: Device | None = None, forced_device: str | None = None
) -> list[dict[str, str]]:
    """Per worker index, the variables to set; empty when there is nothing to spread, or when the
    user chose the device (``--rocm-device``: cpu, or cuda:N, which must stay where they put it).

    Values are entries of an existing visible-devices list when the user set one (torch index i is
    its i-th entry), so restricting further never escapes the user's restriction. Workers beyond
    the number of devices share them round-robin.
    """
    variable = VISIBLE_VARIABLE.get(env.backend)
    pool = device_pool(env, primary)
    if variable is None or forced_device or n_workers < 2 or len(pool) < 2:
        return []
    existing = (env.variables.get(variable) or "").strip()
    visible = [v.strip() for v in existing.split(",") if v.strip()] if existing else []

    def physical(device: Device) -> str:
        return visible[device.index] if device.index < len(visible) else str(device.index)

    # Devices listed before the one under test stay visible, so its torch index (cuda:k, handed to
    # the worker with the environment) still names it: [iGPU, dGPU1, dGPU2] -> "0,1" and "0,2".
    first = primary.index if primary is not None else pool[0].index
    prefix = [physical(d) for d in env.devices if d.index < first]
    return [{variable: ",".join([*prefix, physical(pool[i % len(pool)])])} for i in range(n_workers)]


#: how long the controller waits for a dead worker's process to be reaped (it is gone already:
#: xdist saw its pipes close), so its exit status can be read
_REAP_WAIT_S = 2.0


def worker_exit_status(node: Any) -> str:
    """How a crashed worker's process ended (``killed by SIGSEGV (signal 11)``, ``exit status
    3``), for its test's row. xdist says only that the worker crashed; the status is on the
    process execnet started for it (the popen gateway's ``subprocess.Popen``, no public name)."""
    from pytest_rocm.report.deaths import how_it_ended

    process = getattr(getattr(getattr(node, "gateway", None), "_io", None), "popen", None)
    if process is None:
        return "its exit status is not known (not a local process)"
    try:
        return how_it_ended(process.wait(timeout=_REAP_WAIT_S))
    except Exception:  # still running (it closed its pipes and went on), or not a Popen after all
        return "its exit status is not known (the process had not ended)"


# -- pytest integration ---------------------------------------------------------------------------
def is_worker(config: pytest.Config) -> bool:
    """Whether this process is an xdist worker (what it prints is thrown away; the controller reports)."""
    return hasattr(config, "workerinput")


def handed_environment(config: pytest.Config) -> tuple[Environment, str, bool] | None:
    """In a worker: the environment the controller handed over, its source and whether it was
    recorded; None elsewhere."""
    worker: dict[str, Any] | None = getattr(config, "workerinput", None)
    if not worker or WORKER_ENV not in worker:
        return None
    env = Environment.from_dict(json.loads(worker[WORKER_ENV]), "xdist controller")
    return env, worker.get(WORKER_SOURCE, "detected"), bool(worker.get(WORKER_RECORDED))


def configure(config: pytest.Config) -> None:
    """Called from the plugin's pytest_configure (``pytest_rocm.plugin``): a worker applies its
    device; a controller registers the one plugin object that feeds the workers."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        for name, value in (workerinput.get(WORKERINPUT_KEY) or {}).items():
            os.environ[name] = value
        return
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(XdistController(config), "rocm-xdist-controller")


class XdistController:
    """Controller side: each worker's environment and device. Registered only when pytest-xdist
    is active (its hooks do not exist otherwise)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def _assignments(self, n_workers: int) -> list[dict[str, str]]:
        from pytest_rocm.plugin.session import get_device, get_environment

        env = get_environment(self.config)
        primary = get_device(self.config)
        return assign_visible_devices(env, n_workers, primary, self.config.getoption("rocm_device", None))

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_setupnodes(self, config: pytest.Config, specs: Sequence[Any]) -> None:
        for spec, variables in zip(specs, self._assignments(len(specs)), strict=False):
            spec.env.update(variables)  # applied by execnet as the worker process starts

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        from pytest_rocm.plugin.session import get_environment, get_state

        st = get_state(self.config)
        node.workerinput[WORKER_ENV] = get_environment(self.config).to_json(indent=None)
        node.workerinput[WORKER_SOURCE] = st.source
        node.workerinput[WORKER_RECORDED] = st.recorded
        # a replacement for a crashed worker reuses the dead one's spec, so it keeps its device
        variables = {k: v for k, v in node.gateway.spec.env.items() if k in VISIBLE_VARIABLE.values()}
        if variables:
            node.workerinput[WORKERINPUT_KEY] = variables
