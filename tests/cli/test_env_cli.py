"""``rocm-compat env``: summary, --json, -o, --env, and bad input as one line with exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fake_machines import CPU_NODE, ENVS, MI210, Machine, Node, build_tree, fake_torch, properties

from pytest_rocm import cli
from pytest_rocm.env.model import SCHEMA, Environment
from pytest_rocm.env.seam import Seam


@pytest.fixture
def mi210_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An MI210 box whose torch is a CPU wheel: the kernel sees the GPU, torch does not."""
    root = tmp_path / "root"
    build_tree(root, Machine([Node(CPU_NODE), Node(properties(MI210), 1, vram=68702699520)], rocm_version="6.2.4"))
    monkeypatch.setenv("PYTEST_ROCM_SYSROOT", str(root))
    monkeypatch.setattr(Seam, "load_torch", lambda self: fake_torch("2.6.0+cpu"))
    return root


def run_env(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(["env", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_summary_of_a_detected_machine(mi210_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_env(capsys)
    assert (code, err) == (0, "")
    assert "backend    cpu" in out
    assert "torch      2.6.0+cpu (CPU-only build)" in out
    assert "node 1: gfx90a (cdna2)" in out and "VRAM 64.0 GiB" in out
    assert "ROCm       6.2.4" in out
    assert "doctor     2 problems (`rocm-compat doctor` says how to fix them)" in out  # torch-build, memory
    assert "  [FAIL] torch-build: torch 2.6.0+cpu is a CPU-only build but the kernel reports 1 AMD GPU (gfx90a)" in out


def test_json_round_trips(mi210_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_env(capsys, "--json")
    assert code == 0
    data = json.loads(out)
    assert data["schema"] == SCHEMA
    assert [g["gfx"] for g in data["system"]["gpus"]] == ["gfx90a"]
    env = Environment.from_dict(data)
    assert env.system.gpus[0].vram == 68702699520 and env.devices == []


def test_output_file(mi210_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "env.json"
    code, out, _ = run_env(capsys, "--json", "-o", str(target))
    assert (code, out) == (0, "")  # the JSON went to the file only
    assert Environment.load(target).system.rocm_version == "6.2.4"
    code, out, _ = run_env(capsys, "-o", str(target))
    assert code == 0 and out.splitlines()[-1] == f"wrote {target}" and "backend" in out


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("rx6700xt_override", "  [WARN] reported-gfx: HSA_OVERRIDE_GFX_VERSION=10.3.0 makes gfx1031 report as gfx1030"),
        ("no_binary", "  [FAIL] gfx-in-build: device 0 (AMD Radeon RX 7800 XT) is gfx1101 (rdna3), not in this torch"),
        (
            "cuda_wheel_on_amd",
            "  [FAIL] torch-build: torch 2.12.0+cu130 is a CUDA build (torch.version.cuda=13.0) but the kernel "
            "reports 1 AMD GPU (gfx1150)",
        ),
        ("rx6800xt_igpu", "[1] AMD Radeon Graphics: gfx1036 (rdna2), 512 MiB, 2 CUs, in build: NO"),
        ("mi300x_8", "[7] AMD Instinct MI300X: gfx942:sramecc+:xnack- (cdna3), 192.0 GiB, 304 CUs, in build: yes"),
        ("nvidia_cuda", "[0] NVIDIA H100 80GB HBM3: sm_90, 79.2 GiB, 132 SMs, in build: yes"),
    ],
)
def test_summary_of_recorded_environments(name: str, expected: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_env(capsys, "--env", str(ENVS / f"{name}.json"))
    assert code == 0
    assert expected in out


def test_clean_machine_has_no_problems(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run_env(capsys, "--env", str(ENVS / "rx7900xtx_rocm6.json"))
    assert "doctor " not in out and "[WARN]" not in out and "[FAIL]" not in out and "in build: yes" in out


def _bad(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    code, out, err = run_env(capsys, *args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    return err.strip()


def test_bad_sysroot(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PYTEST_ROCM_SYSROOT", str(tmp_path / "missing"))
    assert _bad(capsys) == f"rocm-compat env: PYTEST_ROCM_SYSROOT={tmp_path / 'missing'}: no such directory"
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("PYTEST_ROCM_SYSROOT", str(tmp_path / "file"))
    assert _bad(capsys, "--json").endswith("not a directory")


def test_unwritable_output(mi210_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _bad(capsys, "-o", str(tmp_path / "no" / "such" / "dir.json")).startswith("rocm-compat env: cannot write ")
    assert _bad(capsys, "-o", str(tmp_path)).endswith("is a directory, not a regular file: refusing to replace it")


def test_bad_recorded_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corrupt = tmp_path / "corrupt.json"
    corrupt.write_text("{not json")
    assert "not valid JSON" in _bad(capsys, "--env", str(corrupt))
    assert _bad(capsys, "--env", str(tmp_path / "none.json")).endswith("no such file")


def test_console_script_end_to_end(tmp_path: Path) -> None:
    """The installed command, in a fresh process, with the real seam (and whatever torch is here)."""
    root = build_tree(tmp_path, Machine([Node(CPU_NODE), Node(properties(MI210), 1)]))
    env: dict[str, Any] = {"PYTEST_ROCM_SYSROOT": str(root), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest_rocm.cli", "env", "--json"], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert [g["gfx"] for g in data["system"]["gpus"]] == ["gfx90a"]
    env["PYTEST_ROCM_SYSROOT"] = str(tmp_path / "missing")
    done = subprocess.run(
        [sys.executable, "-m", "pytest_rocm.cli", "env"], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 2 and done.stderr.strip().endswith("no such directory") and done.stdout == ""
