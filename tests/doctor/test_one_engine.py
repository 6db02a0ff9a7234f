"""One diagnosis engine: the pytest header, ``rocm-compat doctor`` and ``rocm-compat env`` print the
same checks in the same words (``Check.line``), so they can never disagree about a fault.

Also: each fault the header once found with code of its own is still found, by a check.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_machines import CPU_NODE, ENVS, MI210, Machine, Node, build_tree, fake_torch, properties, write

from pytest_rocm import cli
from pytest_rocm.doctor.checks import (
    CHECKS,
    STATUSES,
    SYSTEM_CHECKS,
    Check,
    Extras,
    diagnose,
    problem_lines,
    problems,
)
from pytest_rocm.env.model import Device, Environment, SystemGpu, SystemInfo
from pytest_rocm.env.seam import Seam

RECORDED = sorted(p.stem for p in ENVS.glob("*.json"))
GIB = 1024**3


@pytest.fixture(autouse=True)
def only_this_plugin(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """In-process inner runs load just pytest-rocm, on an empty machine unless a test says otherwise."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setenv("PYTEST_PLUGINS", "pytest_rocm.plugin")
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("PYTEST_ROCM_SYSROOT", str(tmp_path / "empty"))
    for name in ("PYTEST_ROCM_GFX", "PYTEST_ROCM_DEVICE", "PYTEST_ROCM_ENV", "PYTEST_ROCM_REQUIRE_GPU"):
        monkeypatch.delenv(name, raising=False)
    for name in ("HSA_OVERRIDE_GFX_VERSION", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "MIOPEN_USER_DB_PATH"):
        monkeypatch.delenv(name, raising=False)


def header_doctor_lines(pytester: pytest.Pytester, *args: str) -> tuple[list[str], list[str]]:
    """(the header's check lines without ``rocm: ``, its ``rocm doctor:`` summary lines)."""
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest(*args)
    lines = result.stdout.lines
    checks = [line.removeprefix("rocm: ") for line in lines if line.startswith(("rocm: [WARN]", "rocm: [FAIL]"))]
    return checks, [line for line in lines if line.startswith("rocm doctor: ")]


def doctor_text(capsys: pytest.CaptureFixture[str], *args: str) -> list[str]:
    cli.main(["doctor", *args])
    return capsys.readouterr().out.splitlines()


@pytest.mark.parametrize("name", RECORDED)
def test_header_doctor_and_env_agree_on_a_recorded_environment(
    name: str, pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    path = ENVS / f"{name}.json"
    expected = problem_lines(diagnose(Environment.load(path)))

    header, summary = header_doctor_lines(pytester, f"--rocm-env={path}")
    doctor = doctor_text(capsys, "--env", str(path))
    cli.main(["env", "--env", str(path)])
    env_out = capsys.readouterr().out.splitlines()

    assert header == expected
    assert [line for line in doctor if line.startswith(("[WARN]", "[FAIL]"))] == expected
    assert [line.removeprefix("  ") for line in env_out if line.startswith(("  [WARN]", "  [FAIL]"))] == expected
    # the header points at the doctor of the same recording (not this machine's); the doctor's own
    # last line is the verdict and the first fix, over the same problems
    assert len(summary) == (1 if expected else 0)
    groups = summary[0].split(" (", 1)[1].rsplit("), run ", 1)[0] if summary else ""
    assert not summary or summary[0].endswith(f"), run `rocm-compat doctor --env {path}`")
    assert doctor[-1].startswith(f"rocm doctor (the recorded environment {path}): ")
    if expected:
        assert f"({groups})" in doctor[-1] and ("; first fix (" in doctor[-1] or "no fix is known" in doctor[-1])


def test_the_recorded_environments_exercise_both_statuses() -> None:
    """The agreement above is not vacuous: recorded machines fail and warn."""
    found = {c.status for name in RECORDED for c in problems(diagnose(Environment.load(ENVS / f"{name}.json")))}
    assert found == {"fail", "warn"}


def test_header_before_detection_prints_the_doctors_lines(
    pytester: pytest.Pytester,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """No test needs the environment, so the header runs only the checks that need no torch: their
    lines are the doctor's lines for the same checks on the same machine."""
    # a container: the host's KFD topology, no /dev/kfd; a malformed override; less RAM than VRAM
    root = tmp_path / "container"
    gpu = Node(properties(MI210), 1, vram=64 * GIB)
    build_tree(root, Machine([Node(CPU_NODE), gpu], kfd=False, mem_total_kb=32 * 1024**2))
    write(root, "sys/bus/pci/devices/0000:03:00.0/vendor", "0x1002\n")
    write(root, "sys/bus/pci/devices/0000:03:00.0/class", "0x038000\n")
    monkeypatch.setenv("PYTEST_ROCM_SYSROOT", str(root))
    monkeypatch.setenv("HSA_OVERRIDE_GFX_VERSION", "9.0.a")
    monkeypatch.setattr(Seam, "load_torch", lambda self: fake_torch("2.6.0+rocm6.2.4", hip="6.2.41134"))

    header, summary = header_doctor_lines(pytester)
    system_ids = {fn(Environment(), Extras()).id for fn in SYSTEM_CHECKS}
    doctor = doctor_text(capsys)
    same_checks = [
        line for line in doctor if line.startswith(("[WARN]", "[FAIL]")) and line[7:].split(":")[0] in system_ids
    ]

    assert header == same_checks
    assert [line.split(":")[0] for line in header] == ["[FAIL] driver", "[FAIL] hsa-override", "[WARN] memory"]
    assert "there is no /dev/kfd" in header[0]
    assert summary == [
        "rocm doctor: 3 problems (failing: driver, hsa-override; warnings: memory), run `rocm-compat doctor`"
    ]


@pytest.mark.parametrize("name", RECORDED)
def test_every_check_speaks_in_one_line(name: str) -> None:
    env = Environment.load(ENVS / f"{name}.json")
    probed = Extras(pci_amd_gpus=["0000:03:00.0"], miopen_path="/x", miopen_writable=False)
    for extras in (None, probed):
        for check in diagnose(env, extras):
            assert check.status in STATUSES
            mark = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL", "skipped": "skip"}[check.status]
            assert "\n" not in check.line and check.line == f"[{mark}] {check.id}: {check.evidence}"


# -- faults the header found with code of its own, now each a check ---------------------------------
def rocm_env(*devices: Device, gpus: list[SystemGpu] | None = None, **variables: str) -> Environment:
    gpus = (
        gpus
        if gpus is not None
        else [SystemGpu(node=i + 1, gfx=d.hardware_gfx or d.gfx) for i, d in enumerate(devices)]
    )
    return Environment(
        backend="rocm" if devices else "cpu",
        torch="2.6.0+rocm6.2.4",
        hip="6.2.41134-65d174c3e",
        rocm="6.2.4",
        arch_list=["gfx90a", "gfx942", "gfx1030", "gfx1100"],
        devices=list(devices),
        variables=dict(variables),
        system=SystemInfo(kfd=True, kfd_access=True, groups=["render", "video"], gpus=gpus),
    )


def device(index: int, gfx: str, hardware: str | None = None, name: str = "GPU") -> Device:
    return Device(index=index, name=name, arch=gfx, gfx=gfx, hardware_gfx=hardware or gfx, in_build=True)


def by_id(env: Environment) -> dict[str, Check]:
    return {c.id: c for c in diagnose(env)}


def test_devices_of_different_architectures() -> None:
    checks = by_id(rocm_env(device(0, "gfx1100"), device(1, "gfx1030")))
    assert [c.id for c in problems(checks.values())] == ["mixed-gfx"]
    assert "different architectures (0:gfx1100, 1:gfx1030)" in checks["mixed-gfx"].evidence
    assert checks["mixed-gfx"].fix.startswith("export HIP_VISIBLE_DEVICES=0 ")


def test_a_device_reporting_another_gfx_without_an_override() -> None:
    checks = by_id(rocm_env(device(0, "gfx1030", hardware="gfx1031")))
    check = checks["reported-gfx"]
    assert check.status == "warn" and "device 0 reports gfx1030 but the kernel says it is gfx1031" in check.evidence


def test_rocm_torch_that_sees_no_gpu() -> None:
    env = rocm_env(gpus=[SystemGpu(node=1, gfx="gfx90a")])
    check = by_id(env)["torch-devices"]
    assert check.status == "fail" and "sees no GPU although the kernel reports 1 AMD GPU (gfx90a)" in check.evidence
    env.variables["HIP_VISIBLE_DEVICES"] = "3"
    check = by_id(env)["torch-devices"]
    assert "(HIP_VISIBLE_DEVICES=3)" in check.evidence and check.fix.startswith("unset HIP_VISIBLE_DEVICES")


def test_a_container_without_dev_kfd() -> None:
    env = rocm_env(gpus=[SystemGpu(node=1, gfx="gfx942")])
    env.system.kfd = False
    checks = by_id(env)
    assert checks["driver"].status == "fail" and "--device /dev/kfd" in checks["driver"].fix
    assert checks["torch-devices"].status == "skipped"  # explained by the driver check, said once


def test_failed_probes() -> None:
    env = rocm_env(device(0, "gfx942"))
    env.system.errors = ["/sys/class/kfd/kfd/topology/nodes/2/properties: operation not permitted", "x: y"]
    check = by_id(env)["probes"]
    assert check.status == "warn" and check.evidence.startswith("2 probe(s) failed: /sys/class/kfd/kfd/topology")


def test_a_cuda_device_the_build_has_no_kernels_for() -> None:
    blackwell = Device(index=0, name="NVIDIA RTX 5090", arch="sm_120", gfx="sm_120", in_build=False)
    env = Environment(
        backend="cuda", torch="2.6.0+cu124", cuda="12.4", arch_list=["sm_80", "sm_90"], devices=[blackwell]
    )
    check = by_id(env)["gfx-in-build"]
    assert check.status == "fail" and "no kernel image is available" in check.evidence


def test_the_check_list_has_one_id_per_check() -> None:
    ids = [fn(Environment(), Extras()).id for fn in CHECKS]
    assert len(ids) == len(set(ids))
    assert {fn(Environment(), Extras()).id for fn in SYSTEM_CHECKS} <= set(ids)
