"""rocm-compat setup: the torch for this machine, then the extras, by pip of the running interpreter.

Machines are the recorded ones: fake sysfs trees through the seam (``seam_for``: an RX 7900 XTX on
ROCm 6.2.4, a CPU box) and the recorded environments of tests/data/envs (``--env``). pip and the
index probe are the seam's (``run``, ``capture``, ``url_error``): replaced here by a recorder, so no
test installs anything; one test runs the real command in a subprocess with ``--dry-run``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fake_machines import (
    CPU_NODE,
    ENVS,
    MOCK_7900XTX,
    Machine,
    Node,
    arch_list_for,
    build_tree,
    fake_torch,
    properties,
    seam_for,
)

from pytest_rocm import cli
from pytest_rocm.doctor.facts import install_line
from pytest_rocm.doctor.probe import probe_extras
from pytest_rocm.env.detect import detect_environment
from pytest_rocm.env.model import Environment
from pytest_rocm.env.wheels import cpu_index
from pytest_rocm.setup import plan
from pytest_rocm.setup.apply import index_versions
from pytest_rocm.setup.torch_fit import build_of, newest_fitting

GIB = 1024**3
#: the real answer of `pip index versions torch` on CI's machine (PyPI, a mirror, a wheel on disk)
CI_INDEX_VERSIONS = (
    "torch (2.15.0)\n"
    "Available versions: 2.15.0, 2.14.1, 2.14.0, 2.13.0+cpu, 2.13.0, 2.12.1, 2.12.0, 2.11.0, 2.10.0\n"
    "  INSTALLED: 2.13.0+cpu\n"
)
XTX = {
    "name": "AMD Radeon RX 7900 XTX",
    "gcnArchName": "gfx1100",
    "total_memory": 24 * GIB,
    "multi_processor_count": 96,
}


class PipSeam:
    """A machine's seam whose pip and network are recorded: ``calls`` holds every command run."""

    def __init__(self, inner: Any, reachable: bool = True, versions: str = CI_INDEX_VERSIONS, code: int = 0) -> None:
        self._inner = inner
        self.reachable = reachable
        self.versions = versions
        self.code = code
        self.calls: list[list[str]] = []
        self.captured: list[list[str]] = []
        self.probed: list[str] = []

    def run(self, argv: list[str]) -> int:
        self.calls.append(list(argv))
        return self.code

    def capture(self, argv: list[str]) -> tuple[int, str]:
        self.captured.append(list(argv))
        return 0, self.versions

    def url_error(self, url: str, timeout_s: float = 15.0) -> str | None:
        self.probed.append(url)
        return None if self.reachable else "[Errno -2] Name or service not known"

    def requirements(self, name: str) -> list[str] | None:
        return [
            'pytest-rocm[suites,vet]; extra == "test"',
            'pytest-xdist>=3.5; extra == "test"',
            'hypothesis>=6.100; extra == "test"',
            'zstandard>=0.22; extra == "vet"',
            'pytest-xdist>=3.5; extra == "suites"',
            'transformers>=4.30; extra == "suites"',
            "packaging>=23",
        ]

    def distribution_version(self, name: str) -> str | None:
        return {"torch": "2.13.0+cpu", "pip": "23.2.1"}.get(name)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def amd_box(tmp_path: Path, torch: Any) -> Any:
    """An RX 7900 XTX on ROCm 6.2.4 (the tinygrad KFD template), with ``torch`` installed."""
    node = Node(properties(MOCK_7900XTX), gpu_id=1234, name="gpu", vram=24 * GIB)
    root = build_tree(
        tmp_path / "root", Machine(nodes=[Node(CPU_NODE), node], amdgpu_version="6.8.5", rocm_version="6.2.4")
    )
    return seam_for(root, torch, environ={"HOME": "/root"})


def cpu_box(tmp_path: Path, torch: Any = None) -> Any:
    (tmp_path / "root").mkdir(parents=True)
    return seam_for(tmp_path / "root", torch, environ={"HOME": "/root"})


def setup(seam: Any, *argv: str, capsys: Any) -> tuple[int, str]:
    module, args = cli.parse_command("setup", list(argv))
    code = module.run(args, seam=seam)
    return code, capsys.readouterr().out


def python() -> str:
    return sys.executable


CUDA_TORCH = fake_torch("2.12.0+cu130", cuda="13.0")
ROCM_TORCH = fake_torch(
    "2.6.0+rocm6.2.4", hip="6.2.41133-dd7f95766", arch_list=arch_list_for("rocm6.2.4"), devices=[XTX]
)


def test_a_cuda_torch_on_an_amd_box_is_named_and_kept_without_the_flag(tmp_path: Path, capsys: Any) -> None:
    seam = PipSeam(amd_box(tmp_path, CUDA_TORCH))
    code, out = setup(seam, "suites", capsys=capsys)
    assert code == 1
    assert "torch 2.12.0+cu130 does not fit this machine" in out and "CUDA build" in out
    assert "fix: pip uninstall -y torch torchvision torchaudio && pip install torch --index-url" in out
    assert "--replace-torch" in out
    assert seam.calls == []  # nothing installed, nothing removed


def test_replace_torch_uninstalls_it_and_installs_the_doctors_rocm_build(tmp_path: Path, capsys: Any) -> None:
    seam = PipSeam(amd_box(tmp_path, CUDA_TORCH))
    code, out = setup(seam, "suites", "--replace-torch", capsys=capsys)
    assert code == 0, out
    env = detect_environment(seam._inner)
    doctor_url = install_line(env, probe_extras(seam._inner, env)).split("--index-url ")[1].split()[0]
    assert doctor_url.startswith("https://download.pytorch.org/whl/rocm")
    uninstall, install, extras = seam.calls
    assert uninstall == [python(), "-m", "pip", "uninstall", "-y", "torch", "torchvision", "torchaudio"]
    assert install == [python(), "-m", "pip", "install", "torch", "--index-url", doctor_url]
    # a ROCm torch: no PyPI triton (it would shadow pytorch-triton-rocm), no PyPI bitsandbytes
    assert extras == [python(), "-m", "pip", "install", "pytest-xdist>=3.5", "transformers>=4.30", "torch==2.13.0+cpu"]
    assert f"$ {python()} -m pip install torch --index-url {doctor_url}" in out  # shown before it runs


def test_a_fitting_rocm_torch_is_kept(tmp_path: Path, capsys: Any) -> None:
    seam = PipSeam(amd_box(tmp_path, ROCM_TORCH))
    code, out = setup(seam, "suites", "--replace-torch", capsys=capsys)
    assert code == 0, out
    assert "torch 2.6.0+rocm6.2.4 (rocm build) fits this machine: kept" in out
    assert [c[3] for c in seam.calls] == ["install"] and "torch" not in seam.calls[0][4:-1]
    assert seam.probed == []  # nothing to fetch torch from


def test_a_recorded_fitting_environment_is_kept_in_a_plan_run_nowhere(capsys: Any) -> None:
    # a recording describes another machine: its plan is printed, nothing is installed here with
    # that machine's companions, and its own torch is the pin (not this environment's)
    seam = PipSeam(object())
    code, out = setup(seam, "test", "--env", str(ENVS / "rx7900xtx_rocm6.json"), capsys=capsys)
    assert code == 0, out
    assert "torch 2.6.0+rocm6.2.4 (rocm build) fits this machine: kept" in out
    assert seam.calls == [] and seam.captured == [] and seam.probed == []
    (command,) = [line for line in out.splitlines() if line.startswith("$ ")]
    assert command.split()[5:] == [
        "'pytest-xdist>=3.5'",
        "'hypothesis>=6.100'",
        "'transformers>=4.30'",
        "'zstandard>=0.22'",
        "torch==2.6.0+rocm6.2.4",
    ]
    assert out.rstrip().endswith("a plan for the recorded machine (--env): nothing was run or contacted here")


def test_a_recorded_misfit_with_replace_torch_is_a_plan_too(capsys: Any) -> None:
    seam = PipSeam(object(), reachable=False)
    code, out = setup(seam, "--env", str(ENVS / "cuda_wheel_on_amd.json"), "--replace-torch", capsys=capsys)
    assert code == 0, out
    assert seam.calls == [] and seam.captured == [] and seam.probed == []
    commands = [line for line in out.splitlines() if line.startswith("$ ")]
    assert "uninstall -y torch torchvision torchaudio" in commands[0] and "--index-url" in commands[1]
    assert commands[2].endswith("torch==VERSION-INSTALLED-ABOVE")


@pytest.mark.parametrize(
    ("recording", "why"),
    [
        ("cuda_wheel_on_amd.json", "is a CUDA build"),
        ("no_binary.json", "not in this torch build's arch list"),
    ],
)
def test_recorded_misfits_are_refused(recording: str, why: str, capsys: Any) -> None:
    seam = PipSeam(object())
    code, out = setup(seam, "--env", str(ENVS / recording), capsys=capsys)
    assert code == 1 and why in out and seam.calls == []


def test_a_torch_that_fails_to_import_is_a_misfit(tmp_path: Path, capsys: Any) -> None:
    inner = cpu_box(tmp_path)
    inner._torch_loader = lambda: (_ for _ in ()).throw(OSError("libtorch_cpu.so: cannot open shared object file"))
    seam = PipSeam(inner)
    code, out = setup(seam, capsys=capsys)
    assert code == 1 and "the installed torch failed to import: OSError: libtorch_cpu.so" in out


def test_a_cpu_box_without_torch_gets_the_cpu_index(tmp_path: Path, capsys: Any) -> None:
    seam = PipSeam(cpu_box(tmp_path))
    code, out = setup(seam, "test", capsys=capsys)
    assert code == 0, out
    install, extras = seam.calls
    assert install == [python(), "-m", "pip", "install", "torch", "--index-url", cpu_index()]
    assert seam.probed == [cpu_index() + "/torch/"]
    assert extras[-3:] == ["triton", "bitsandbytes", "torch==2.13.0+cpu"]  # a CPU torch's companions, then the pin
    assert out.rstrip().endswith("rocm-compat setup: done (test); torch 2.13.0+cpu")


def test_an_unreachable_cpu_index_falls_back_to_the_configured_indexs_cpu_build(tmp_path: Path, capsys: Any) -> None:
    seam = PipSeam(cpu_box(tmp_path), reachable=False)
    code, out = setup(seam, "test", capsys=capsys)
    assert code == 0, out
    assert f"{cpu_index()} is unreachable ([Errno -2] Name or service not known)" in out
    assert seam.captured == [[python(), "-m", "pip", "index", "versions", "torch"]]
    # 2.15.0, 2.14.1 are PyPI's CUDA builds: the newest CPU build is the one on disk
    assert seam.calls[0] == [python(), "-m", "pip", "install", "torch==2.13.0+cpu"]
    assert "serves torch 2.13.0+cpu (cpu build): taking it" in out


def test_an_unreachable_index_without_a_fitting_build_stops_saying_what_to_do(tmp_path: Path, capsys: Any) -> None:
    seam = PipSeam(cpu_box(tmp_path), reachable=False, versions="torch (2.15.0)\nAvailable versions: 2.15.0, 2.14.1\n")
    code, out = setup(seam, capsys=capsys)
    assert code == 1 and seam.calls == []
    assert (
        f"no cpu torch that fits this machine on the configured package index either: make {cpu_index()} reachable"
        in out
    )


def test_dry_run_prints_the_commands_and_runs_none(tmp_path: Path, capsys: Any) -> None:
    # unreachable: a dry run that probed would fall back to `pip index versions`; it touches nothing
    seam = PipSeam(cpu_box(tmp_path), reachable=False)
    code, out = setup(seam, "all", "--dry-run", capsys=capsys)
    assert code == 0 and seam.calls == [] and seam.captured == [] and seam.probed == []
    assert f"{cpu_index()} not contacted (a plan touches no index)" in out
    lines = [line for line in out.splitlines() if line.startswith("$ ")]
    assert lines[0] == f"$ {python()} -m pip install torch --index-url {cpu_index()}"
    assert lines[1].endswith("torch==VERSION-INSTALLED-ABOVE") and "'pytest-xdist>=3.5'" in lines[1]


def test_index_url_overrides_and_is_never_swapped_when_unreachable(tmp_path: Path, capsys: Any) -> None:
    seam = PipSeam(cpu_box(tmp_path))
    code, out = setup(seam, "--index-url", "https://mirror.example/whl/cpu", capsys=capsys)
    assert code == 0 and seam.calls[0][-2:] == ["--index-url", "https://mirror.example/whl/cpu"]
    seam = PipSeam(cpu_box(tmp_path / "2"), reachable=False)
    code, out = setup(seam, "--index-url", "https://mirror.example/whl/cpu", capsys=capsys)
    assert code == 1 and seam.calls == [] and seam.captured == []
    assert "https://mirror.example/whl/cpu, is unreachable" in out


def test_dry_run_with_an_index_url_contacts_nothing(tmp_path: Path, capsys: Any) -> None:
    seam = PipSeam(cpu_box(tmp_path), reachable=False)
    code, out = setup(seam, "--dry-run", "--index-url", "https://mirror.example/whl/cpu", capsys=capsys)
    assert code == 0 and seam.calls == [] and seam.captured == [] and seam.probed == []
    assert f"$ {python()} -m pip install torch --index-url https://mirror.example/whl/cpu" in out


@pytest.mark.parametrize(
    "url",
    [
        "https://mirror.example/whl/ cpu",
        "https://mirror.example/whl/cpu\n",
        "https://mirror.example/whl/cpu\x1b[2J",
        "https://mirror.example/whl/cpu\u202e",
        "ftp://mirror.example/whl/cpu",
        "mirror.example/whl/cpu",
        "https:///whl/cpu",
        "--extra-index-url=https://evil.example",
    ],
)
def test_a_bad_index_url_is_one_line_exit_2(tmp_path: Path, capsys: Any, url: str) -> None:
    seam = PipSeam(cpu_box(tmp_path))
    with pytest.raises(SystemExit) as info:
        setup(seam, "--index-url", url, capsys=capsys)
    err = capsys.readouterr().err
    assert info.value.code == 2 and "argument --index-url" in err and len(err.strip().splitlines()) == 1, err
    assert seam.calls == [] and seam.probed == []


def test_a_failing_pip_call_stops_with_its_status(tmp_path: Path, capsys: Any) -> None:
    seam = PipSeam(cpu_box(tmp_path), code=1)
    code, out = setup(seam, capsys=capsys)
    assert code == 1 and len(seam.calls) == 1
    assert f"pip exited with status 1 at: {python()} -m pip install torch --index-url {cpu_index()}" in out


def test_an_environment_without_pip_is_one_line(tmp_path: Path, capsys: Any) -> None:
    seam = PipSeam(cpu_box(tmp_path))
    seam.distribution_version = lambda name: None  # type: ignore[method-assign]
    code, out = setup(seam, capsys=capsys)
    assert code == 1 and seam.calls == [] and "has no pip (a uv venv?)" in out and "--torch-backend=auto" in out


def test_setup_without_the_package_installed_touches_nothing(tmp_path: Path, capsys: Any) -> None:
    seam = PipSeam(cpu_box(tmp_path))
    seam.requirements = lambda name: None  # type: ignore[method-assign]
    code, out = setup(seam, capsys=capsys)
    assert code == 1 and seam.calls == [] and seam.probed == []
    assert "pytest-rocm is not installed in this environment" in out and "pip install -e . first" in out


def test_extras_expand_self_references_and_drop_the_base_requirements() -> None:
    requires = PipSeam(object()).requirements("pytest-rocm") or []
    assert plan.extra_requirements(requires, ["test"]) == [
        "pytest-xdist>=3.5",
        "hypothesis>=6.100",
        "transformers>=4.30",
        "zstandard>=0.22",
    ]


@pytest.mark.parametrize(
    ("version", "build"),
    [
        ("2.13.0+cpu", "cpu"),
        ("2.14.1", "cuda"),
        ("2.12.0+cu130", "cuda"),
        ("2.6.0+rocm6.2.4", "rocm"),
        ("2.1+xpu", None),
    ],
)
def test_build_of_an_index_version(version: str, build: str | None) -> None:
    assert build_of(version) == build


def test_a_rocm_fallback_needs_a_wheel_that_carries_the_gfx(tmp_path: Path) -> None:
    env = detect_environment(amd_box(tmp_path, None))  # gfx1100
    versions = index_versions("Available versions: 2.6.0+rocm6.2.4, 2.14.1, 2.13.0+cpu")
    assert newest_fitting(versions, "rocm", env) == "2.6.0+rocm6.2.4"
    assert newest_fitting(versions, "cpu", env) == "2.13.0+cpu"
    assert newest_fitting(["2.6.0+rocm9.9"], "rocm", env) is None  # a wheel the table does not know
    # an APU's gfx1150 (recorded): the rocm6.4 wheels of torch 2.9 lack it, the rocm7.2 ones carry it
    apu = Environment.load(ENVS / "cuda_wheel_on_amd.json")
    assert newest_fitting(["2.9.0+rocm6.4", "2.5.1+rocm6.2"], "rocm", apu) is None
    assert newest_fitting(["2.9.0+rocm6.4", "2.12.0+rocm7.2", "2.14.1"], "rocm", apu) == "2.12.0+rocm7.2"


def test_the_real_command_in_a_subprocess(tmp_path: Path) -> None:
    # this test's own environment: a real detection, the real seam; --dry-run installs nothing
    (tmp_path / "root").mkdir()
    env = {**os.environ, "PYTEST_ROCM_SYSROOT": str(tmp_path / "root")}
    done = subprocess.run(
        [sys.executable, "-m", "pytest_rocm.cli", "setup", "test", "--dry-run"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"$ {sys.executable} -m pip install" in done.stdout
    assert "'pytest-xdist>=3.5'" in done.stdout
