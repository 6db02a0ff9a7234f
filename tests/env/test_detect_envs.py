"""The recorded environments in tests/data/envs are what detection makes of their machines.

Each file is produced by the real detection over a fake tree and fake torch built from the real
samples (see fake_machines.machines). Regenerate with ``REGEN_ENVS=1 pytest tests/test_detect_envs.py``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from fake_machines import ENVS, machines, record

from pytest_rocm.doctor.checks import diagnose, problem_lines
from pytest_rocm.env.model import Environment, EnvironmentFileError

NAMES = sorted(machines())


@pytest.mark.parametrize("name", NAMES)
def test_recorded_environment_is_current(name: str, tmp_path: Path) -> None:
    data = record(name, tmp_path)
    path = ENVS / f"{name}.json"
    text = json.dumps(data, indent=2) + "\n"
    if os.environ.get("REGEN_ENVS"):
        path.write_text(text, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == text, f"{path} is stale: REGEN_ENVS=1 to rewrite"


@pytest.mark.parametrize("name", NAMES)
def test_recorded_environment_round_trips(name: str) -> None:
    env = Environment.load(ENVS / f"{name}.json")
    again = Environment.from_dict(json.loads(env.to_json()))
    assert again == env


def _env(name: str) -> Environment:
    return Environment.load(ENVS / f"{name}.json")


def test_rx7900xtx() -> None:
    env = _env("rx7900xtx_rocm6")
    assert (env.backend, env.torch, env.rocm) == ("rocm", "2.6.0+rocm6.2.4", "6.2.4")
    (device,) = env.devices
    assert (device.gfx, device.hardware_gfx, device.in_build) == ("gfx1100", "gfx1100", True)
    assert device.total_memory == env.system.gpus[0].vram == 25753026560
    assert problem_lines(diagnose(env)) == []


def test_rx6800xt_with_igpu() -> None:
    env = _env("rx6800xt_igpu")
    assert [(d.gfx, d.hardware_gfx, d.in_build) for d in env.devices] == [
        ("gfx1030", "gfx1030", True),
        ("gfx1036", "gfx1036", False),
    ]
    assert [g.gfx for g in env.system.gpus] == ["gfx1030", "gfx1036"]


def test_rx6700xt_override_keeps_the_silicon() -> None:
    env = _env("rx6700xt_override")
    (device,) = env.devices
    assert (device.arch, device.gfx, device.hardware_gfx) == ("gfx1030", "gfx1030", "gfx1031")
    assert device.in_build is True  # the override is what makes it run
    assert problem_lines(diagnose(env)) == [
        "[WARN] reported-gfx: HSA_OVERRIDE_GFX_VERSION=10.3.0 makes gfx1031 report as gfx1030: it runs gfx1030 "
        "kernels, and errors and this run's results name gfx1030, not the silicon"
    ]


def test_mi300x_8() -> None:
    env = _env("mi300x_8")
    assert len(env.devices) == 8 and len(env.system.gpus) == 8
    assert {d.arch for d in env.devices} == {"gfx942:sramecc+:xnack-"}
    assert env.devices[0].features == {"sramecc": True, "xnack": False}
    assert [g.node for g in env.system.gpus] == list(range(2, 10))  # after two CPU nodes
    assert env.devices[0].compute_units == 304


def test_mi210_4() -> None:
    env = _env("mi210_4")
    assert [d.hardware_gfx for d in env.devices] == ["gfx90a"] * 4
    assert env.system.amdgpu_version == "6.8.5"


def test_nvidia_cuda() -> None:
    env = _env("nvidia_cuda")
    assert (env.backend, env.cuda, env.hip, env.rocm) == ("cuda", "12.4", None, None)
    (device,) = env.devices
    assert (device.arch, device.in_build, device.hardware_gfx) == ("sm_90", True, None)
    assert env.system.gpus == [] and env.system.kfd is False


def test_cpu_only() -> None:
    env = _env("cpu_only")
    assert (env.backend, env.devices, env.system.gpus) == ("cpu", [], [])
    (line,) = problem_lines(diagnose(env))  # healthy, but without a GPU, and the doctor says so
    assert line.startswith("[WARN] accelerator: no GPU on this machine"), line


def test_cuda_wheel_on_amd_shows_the_gpu_plainly() -> None:
    env = _env("cuda_wheel_on_amd")
    assert (env.backend, env.torch, env.devices) == ("cpu", "2.12.0+cu130", [])
    assert [g.gfx for g in env.system.gpus] == ["gfx1150"]
    assert any(
        w.startswith("[FAIL] torch-build: torch 2.12.0+cu130 is a CUDA build") and "1 AMD GPU (gfx1150)" in w
        for w in problem_lines(diagnose(env))
    )


def test_no_binary() -> None:
    env = _env("no_binary")
    (device,) = env.devices
    assert device.gfx not in env.arch_list and device.in_build is False
    assert any(
        w.startswith("[FAIL] gfx-in-build: device 0 (AMD Radeon RX 7800 XT) is gfx1101")
        and "hipErrorNoBinaryForGpu" in w
        for w in problem_lines(diagnose(env))
    )


CORRUPTIONS = [
    (lambda d: d.__setitem__("arch_list", 5), "arch_list is 5, expected array"),
    (lambda d: d.__setitem__("torch", 2.6), "torch is 2.6, expected string or null"),
    (lambda d: d.__setitem__("variables", [1]), "variables is [1], expected object"),
    (lambda d: d.__setitem__("devices", "x"), "devices is 'x', expected array"),
    (lambda d: d.__setitem__("system", "x"), "system is 'x', expected object"),
    (lambda d: d["devices"][0].__setitem__("index", True), "devices[0].index is True, expected integer"),
    (lambda d: d["devices"][0].pop("arch"), "devices[0]: field 'arch' is missing"),
    (
        lambda d: d["devices"][0].__setitem__("features", {"xnack": "maybe"}),
        "devices[0].features.xnack is 'maybe', expected boolean",
    ),
    (
        lambda d: d["system"]["gpus"][0].__setitem__("vram", "64G"),
        "system.gpus[0].vram is '64G', expected integer or null",
    ),
]


@pytest.mark.parametrize(("corrupt", "message"), CORRUPTIONS)
def test_a_corrupt_recording_names_the_field(corrupt, message: str) -> None:
    data = json.loads((ENVS / "mi300x_8.json").read_text(encoding="utf-8"))
    corrupt(data)
    with pytest.raises(EnvironmentFileError) as info:
        Environment.from_dict(data, "rec.json")
    assert str(info.value).startswith("rec.json: ") and message in str(info.value)
    assert "\n" not in str(info.value)


def test_unknown_fields_are_ignored_for_forward_compatibility() -> None:
    data = json.loads((ENVS / "mi300x_8.json").read_text(encoding="utf-8"))
    data["added_later"] = {"x": 1}
    data["devices"][0]["added_later"] = 1
    assert Environment.from_dict(data) == _env("mi300x_8")


def test_an_environment_recorded_before_issue_17_still_loads_and_is_judged() -> None:
    """tests/data/envs_v1: rx6700xt_override.json as the project recorded it before the fields of
    issue 17 (commit d85cedb): no gtt, no new variables, no pytorch-triton-rocm / triton-pypi."""
    path = ENVS.parent / "envs_v1" / "rx6700xt_override_before_issue17.json"
    raw = json.loads(path.read_text())
    assert "gtt" not in raw["system"]["gpus"][0] and "triton-pypi" not in raw["libraries"]
    env = Environment.load(path)
    assert env.system.gpus[0].gtt is None
    assert env.variables["HSA_OVERRIDE_GFX_VERSION"] == "10.3.0"
    checks = {c.id: c for c in diagnose(env)}
    assert checks["hsa-override"].status == "ok" and checks["triton"].status in ("ok", "skipped")
    assert checks["variables"].status == "ok"
