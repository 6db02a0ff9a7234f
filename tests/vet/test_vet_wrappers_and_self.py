"""Two real false verdicts: a package whose whole purpose is wrapping nvidia-smi (GPUtil) was
class 1, though it sees no GPU on an AMD machine as an NVML binding does; and vet of pytest-rocm
itself was class 3, on its own name in pyproject.toml and on ROCm strings in its test data."""

from __future__ import annotations

from pathlib import Path

from fake_packages import make_wheel, wheel_metadata, write_tree

from pytest_rocm.vet import vet

GPUTIL = (
    "from subprocess import Popen, PIPE\n"
    "import platform\n"
    "class GPU:\n"
    "    def __init__(self, ID, load):\n"
    "        self.id, self.load = ID, load\n"
    "def getGPUs():\n"
    "    nvidia_smi = 'nvidia-smi'\n"
    "    p = Popen([nvidia_smi, '--query-gpu=index,uuid,utilization.gpu,memory.total,name',\n"
    "               '--format=csv,noheader,nounits'], stdout=PIPE)\n"
    "    out = p.stdout.read().decode()\n"
    "    return [GPU(*line.split(', ')[:2]) for line in out.splitlines()]\n"
    "def getAvailable(limit=1):\n"
    "    return [g.id for g in getGPUs()][:limit]\n"
)


def _wheel(tmp_path: Path, name: str, files: dict[str, str | bytes]) -> str:
    path = tmp_path / f"{name}-1.0-py3-none-any.whl"
    return str(make_wheel(path, {**wheel_metadata(name, "1.0", []), **files}))


def test_a_package_that_wraps_nvidia_smi_is_class_4_like_an_nvml_binding(tmp_path: Path) -> None:
    files = {
        "gputillike/__init__.py": "from .GPUtil import GPU, getGPUs, getAvailable\n",
        "gputillike/GPUtil.py": GPUTIL,
    }
    _, _, verdict = vet(_wheel(tmp_path, "gputillike", files))
    assert verdict.klass == 4, verdict.reason
    assert [f.path for f in verdict.evidence if f.rule == "wraps-nvidia-smi"] == ["gputillike/GPUtil.py"]


def test_control_a_torch_package_that_also_asks_nvidia_smi_keeps_the_caveat(tmp_path: Path) -> None:
    """accelerate runs `nvidia-smi --query-gpu=...` in its environment helper: one thing of many."""
    files = {"acclike/__init__.py": "import torch\nfrom .env import getGPUs\n", "acclike/env.py": GPUTIL}
    _, result, verdict = vet(_wheel(tmp_path, "acclike", files))
    assert verdict.klass == 1, verdict.reason
    assert "python-nvidia-smi" in {f.rule for f in result.findings if f.counts}
    assert "wraps-nvidia-smi" not in {f.rule for f in result.findings}


def test_control_a_monitor_that_also_asks_amd_smi_is_no_nvidia_only_wrapper(tmp_path: Path) -> None:
    monitor = GPUTIL + "def amd():\n    return Popen(['amd-smi', 'metric', '--json'], stdout=PIPE)\n"
    files = {"monlike/__init__.py": "from .mon import getGPUs\n", "monlike/mon.py": monitor}
    _, _, verdict = vet(_wheel(tmp_path, "monlike", files))
    assert verdict.klass == 1, verdict.reason


def test_control_a_script_that_only_runs_nvidia_smi_keeps_the_caveat(tmp_path: Path) -> None:
    script = "import subprocess\ndef show():\n    subprocess.run(['nvidia-smi'])\n"
    _, _, verdict = vet(_wheel(tmp_path, "showlike", {"showlike/__init__.py": script}))
    assert verdict.klass == 1, verdict.reason


def test_vetting_a_harness_like_pytest_rocm_is_not_a_rocm_build(tmp_path: Path) -> None:
    """Its own name ("pytest-rocm") in pyproject.toml was read as a *-rocm requirement, and the
    ROCm strings of its tests, test data and bundled suites as a ROCm path: class 3."""
    root = write_tree(
        tmp_path / "harness",
        {
            "pyproject.toml": '[project]\nname = "pytest-rocm"\nversion = "0.1.0"\ndependencies = ["packaging"]\n',
            "pytest_rocm/__init__.py": "import importlib\n",
            "pytest_rocm/_suites/libraries/_triton_kernels.py": "import triton\n@triton.jit\ndef add(x):\n    pass\n",
            "tests/data/requirements.txt": "pytorch-triton-rocm==3.0.0\ntorch==2.4.0+rocm6.1\n",
            "tests/test_loads.py": "import ctypes\nlib = ctypes.CDLL('libamdhip64.so')\n",
            ".ci/requirements.txt": "bitsandbytes==0.45.5\n",
        },
    )
    _, result, verdict = vet(str(root))
    assert verdict.klass == 1, verdict.reason
    assert not [f for f in result.findings if f.counts and f.spec.side == "rocm"]
    assert "rocm-requirement-in-build" not in {f.rule for f in result.findings}  # its own name: no requirement


def test_control_a_real_rocm_requirement_in_a_build_file_still_counts(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "tritonuser",
        {
            "pyproject.toml": '[project]\nname = "tritonuser"\ndependencies = ["pytorch-triton-rocm>=3.0"]\n',
            "tritonuser/__init__.py": "import torch\n",
        },
    )
    _, result, _ = vet(str(root))
    assert "rocm-requirement-in-build" in {f.rule for f in result.findings if f.counts}
