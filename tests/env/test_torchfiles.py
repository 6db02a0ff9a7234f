"""env.torchfiles: the environment read from torch's installed files, without importing torch, is
the one detection gives by importing it, wherever the files can tell; elsewhere it declines (None)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from fake_machines import MOCK_7900XTX, Machine, Node, build_tree, fake_torch, properties, seam_for

from pytest_rocm.env.detect import detect_environment
from pytest_rocm.env.seam import Seam
from pytest_rocm.env.torchfiles import TorchBuild, detect_without_torch, installed_build, parse_version_file

CPU = """from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip', 'rocm', 'xpu']
__version__ = '2.13.0+cpu'
debug = False
cuda: Optional[str] = None
git_version = 'cf30153c4c131c8164ee7798e5022d810682e2cb'
hip: Optional[str] = None
"""
ROCM = CPU.replace("2.13.0+cpu", "2.6.0+rocm6.2.4").replace("hip: Optional[str] = None", "hip = '6.2.41134-65d174c3e'")
CUDA = CPU.replace("2.13.0+cpu", "2.6.0+cu124").replace("cuda: Optional[str] = None", "cuda = '12.4'")


class FilesSeam(Seam):
    """A seam over a fake tree whose torch is only files: ``version.py`` text ("" none installed)."""

    def __init__(self, root: Path, text: str | None, dist: str | None, environ: dict[str, str] | None = None) -> None:
        super().__init__(
            sysroot=root,
            environ=environ or {},
            groups=["root", "video", "render"],
            distributions={"torch": dist},
            python="3.11.7",
            platform_name="Linux-6.5.0-26-generic-x86_64-with-glibc2.35",
        )
        self.text = text

    def torch_version_text(self) -> str | None:
        return self.text


def test_the_version_file_is_read_as_data_never_run(tmp_path: Path) -> None:
    assert parse_version_file(CPU) == TorchBuild("2.13.0+cpu", None, None)
    assert parse_version_file(ROCM) == TorchBuild("2.6.0+rocm6.2.4", "6.2.41134-65d174c3e", None)
    assert parse_version_file(CUDA) == TorchBuild("2.6.0+cu124", None, "12.4")
    witness = tmp_path / "ran"
    hostile = CPU.replace("hip: Optional[str] = None", f"hip = open({str(witness)!r}, 'w').name")
    assert parse_version_file(hostile) is None and not witness.exists()  # only an import would know it
    assert parse_version_file("__version__ = 2.6\n") is None
    assert parse_version_file("hip = None\n") is None  # no version
    assert parse_version_file("def (:\n") is None
    assert parse_version_file(CPU.replace("hip: Optional[str] = None", "hip = 6")) is None


def test_files_that_disagree_with_the_metadata_or_cannot_be_read_leave_it_to_the_import(tmp_path: Path) -> None:
    assert installed_build(FilesSeam(tmp_path, CPU, "2.13.0+cpu")) == TorchBuild("2.13.0+cpu", None, None)
    assert installed_build(FilesSeam(tmp_path, CPU, None)) == TorchBuild("2.13.0+cpu", None, None)
    assert installed_build(FilesSeam(tmp_path, CPU, "2.12.0+cpu")) is None  # another torch's dist-info
    assert installed_build(FilesSeam(tmp_path, None, "2.13.0+cpu")) is None
    assert isinstance(installed_build(FilesSeam(tmp_path, "", None)), ModuleNotFoundError)
    # a fake torch given to a seam is the only one that can tell
    assert seam_for(tmp_path, fake_torch("2.6.0")).torch_version_text() is None


GPU_NODE = Node(properties(MOCK_7900XTX), gpu_id=1)


@pytest.mark.parametrize(
    ("text", "torch", "machine", "environ"),
    [
        (CPU, fake_torch("2.13.0+cpu"), Machine(nodes=[GPU_NODE]), {}),  # a CPU build sees no GPU anywhere
        ("", None, Machine(nodes=[GPU_NODE]), {}),  # no torch
        (ROCM, fake_torch("2.6.0+rocm6.2.4", hip="6.2.41134-65d174c3e"), Machine(kfd=False), {}),
        (ROCM, fake_torch("2.6.0+rocm6.2.4", hip="6.2.41134-65d174c3e"), Machine(nodes=[]), {}),
        # a CUDA wheel on an AMD machine: no NVIDIA driver, no device
        (CUDA, fake_torch("2.6.0+cu124", cuda="12.4"), Machine(nodes=[GPU_NODE]), {"HIP_VISIBLE_DEVICES": "0"}),
    ],
    ids=["cpu-build", "no-torch", "rocm-no-kfd", "rocm-no-gpu-node", "cuda-on-amd"],
)
def test_where_the_files_tell_the_environment_is_the_one_the_import_gives(
    tmp_path: Path, text: str, torch: Any, machine: Machine, environ: dict[str, str]
) -> None:
    build_tree(tmp_path, machine)
    version = parse_version_file(text).version if text else None  # type: ignore[union-attr]
    imported = detect_environment(seam_for(tmp_path, torch, environ, distributions={"torch": version}))
    read = detect_without_torch(FilesSeam(tmp_path, text, version, environ))
    assert read is not None
    assert read.to_dict() == imported.to_dict()


@pytest.mark.parametrize(
    ("text", "machine", "extra"),
    [
        (ROCM, Machine(nodes=[GPU_NODE]), None),  # a GPU the runtime would find: only torch names it
        (CUDA, Machine(), "proc/driver/nvidia/version"),  # the NVIDIA driver is there
        (CUDA, Machine(proc_version="Linux version 5.15.167.4-microsoft-standard-WSL2", dxg=True), None),
    ],
    ids=["rocm-with-gpu", "cuda-with-driver", "cuda-on-wsl"],
)
def test_where_only_the_runtime_can_tell_it_declines(
    tmp_path: Path, text: str, machine: Machine, extra: str | None
) -> None:
    build_tree(tmp_path, machine)
    if extra:
        (tmp_path / extra).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / extra).write_text("NVRM version: 550\n")
    assert detect_without_torch(FilesSeam(tmp_path, text, parse_version_file(text).version)) is None  # type: ignore[union-attr]


def test_this_machines_torch_is_read_from_its_files_and_not_imported() -> None:
    import subprocess

    code = (
        "import sys; from pytest_rocm.env.torchfiles import detect_without_torch; e = detect_without_torch(); "
        "print(e is not None and 'torch' not in sys.modules, e.torch if e else None)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    found, version = done.stdout.split()
    from importlib.metadata import version as dist_version

    assert found == "True" and version == dist_version("torch")
