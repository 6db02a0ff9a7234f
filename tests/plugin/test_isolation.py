"""One GPU per xdist worker (pure assignment over recorded environments, then a real xdist run)
and the isolation options `rocm-compat run` adds."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_rocm.env.model import Environment
from pytest_rocm.plugin.xdist import assign_visible_devices
from pytest_rocm.suite_command import DEFAULT_MAX_WORKER_RESTART, DEFAULT_TIMEOUT_S, isolation_args

ENVS = Path(__file__).parents[1] / "data" / "envs"


def env(name: str) -> Environment:
    return Environment.load(ENVS / f"{name}.json")


def values(assignments: list[dict[str, str]], variable: str = "HIP_VISIBLE_DEVICES") -> list[str]:
    assert all(list(a) == [variable] for a in assignments)
    return [a[variable] for a in assignments]


def test_eight_mi300x_give_eight_workers_eight_devices() -> None:
    assert values(assign_visible_devices(env("mi300x_8"), 8)) == [str(i) for i in range(8)]
    assert values(assign_visible_devices(env("mi300x_8"), 3)) == ["0", "1", "2"]


def test_more_workers_than_devices_share_them_round_robin() -> None:
    assert values(assign_visible_devices(env("mi210_4"), 6)) == ["0", "1", "2", "3", "0", "1"]


def test_an_existing_visibility_list_is_narrowed_not_escaped() -> None:
    restricted = env("mi300x_8")
    restricted.variables["HIP_VISIBLE_DEVICES"] = "4,5,6"
    restricted.devices = restricted.devices[:3]  # torch then sees 3 devices: physical 4, 5, 6
    assert values(assign_visible_devices(restricted, 3)) == ["4", "5", "6"]


def test_an_igpu_is_never_handed_to_a_worker() -> None:
    # RX 6800 XT (gfx1030) + Ryzen iGPU (gfx1036): only one device of the architecture under test
    assert assign_visible_devices(env("rx6800xt_igpu"), 2) == []
    igpu = env("rx6800xt_igpu").devices[1]
    assert assign_visible_devices(env("rx6800xt_igpu"), 2, primary=igpu) == []


def test_the_device_index_under_test_stays_valid_in_each_worker() -> None:
    # an iGPU first, then two RX 6800 XT: the device under test is cuda:1 in every worker too
    box = env("rx6800xt_igpu")
    igpu, dgpu = box.devices[1], box.devices[0]
    box.devices = [replace(igpu, index=0), replace(dgpu, index=1), replace(dgpu, index=2)]
    assert values(assign_visible_devices(box, 2, primary=box.devices[1])) == ["0,1", "0,2"]


def test_cuda_uses_cuda_visible_devices() -> None:
    cuda = env("nvidia_cuda")
    cuda.devices = [replace(cuda.devices[0], index=i) for i in range(2)]
    cuda.variables["CUDA_VISIBLE_DEVICES"] = None
    assert values(assign_visible_devices(cuda, 2), "CUDA_VISIBLE_DEVICES") == ["0", "1"]


@pytest.mark.parametrize("name", ["cpu_only", "cuda_wheel_on_amd", "rx7900xtx_rocm6"])
def test_nothing_to_spread(name: str) -> None:
    assert assign_visible_devices(env(name), 4) == []
    assert assign_visible_devices(env("mi300x_8"), 1) == []


def test_isolation_args_added_unless_the_user_chose() -> None:
    assert isolation_args([], True, True) == [
        "-n",
        "auto",
        "--max-worker-restart",
        str(DEFAULT_MAX_WORKER_RESTART),
        "--timeout",
        str(DEFAULT_TIMEOUT_S),
        "--timeout-method",
        "thread",
    ]
    assert isolation_args(["-n4", "--timeout=60"], True, True) == [
        "--max-worker-restart",
        str(DEFAULT_MAX_WORKER_RESTART),
        "--timeout-method",
        "thread",
    ]
    assert isolation_args(["-p", "no:xdist"], True, True) == ["--timeout", str(DEFAULT_TIMEOUT_S)]
    assert isolation_args([], False, False) == []


def test_each_xdist_worker_sees_its_own_device_before_conftest_runs(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("""
        import os
        # what a conftest importing torch at module level would see
        AT_IMPORT = os.environ.get("HIP_VISIBLE_DEVICES")
    """)
    pytester.makepyfile(
        test_devices="""
        import os, time, pytest
        import conftest
        from pytest_rocm import INFO_PROPERTY
        @pytest.mark.parametrize("n", range(6))
        def test_device(n, record_property):
            time.sleep(0.2)  # keep both workers busy
            record_property(INFO_PROPERTY, {"worker": os.environ["PYTEST_XDIST_WORKER"],
                                          "visible": os.environ.get("HIP_VISIBLE_DEVICES"),
                                          "at_import": conftest.AT_IMPORT})
    """
    )
    result = pytester.runpytest_subprocess(
        "-n",
        "2",
        f"--rocm-env={ENVS / 'mi300x_8.json'}",
        "--rocm-report=r.json",
        "-p",
        "no:cacheprovider",
    )
    result.assert_outcomes(passed=6)
    infos = [r["info"] for r in json.loads((pytester.path / "r.json").read_text())["results"]]
    by_worker = {i["worker"]: i["visible"] for i in infos}
    assert sorted(by_worker) == ["gw0", "gw1"], infos
    assert sorted(by_worker.values()) == ["0", "1"]
    assert all(i["at_import"] == i["visible"] for i in infos)


def test_no_spreading_when_the_user_forced_the_device() -> None:
    for forced in ("cpu", "cuda:3"):
        assert assign_visible_devices(env("mi300x_8"), 2, forced_device=forced) == []
