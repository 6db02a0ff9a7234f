"""Running a small project twice with ``--rocm-report`` and reading the gate back: shared by
tests/plugin/test_gate_fixture_projects.py and tests/plugin/test_verdict_projects.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_rocm import cli

DATA = Path(__file__).parent / "data"
CPU_ENV = f"--rocm-env={DATA / 'envs' / 'cpu_only.json'}"
GPU_ENV = f"--rocm-env={DATA / 'envs' / 'mi300x_8.json'}"

#: PyG's ``withCUDA`` in small: one test per device this machine has (a GPU from the recorded
#: environment; the test body learns which device it got and may fail on the GPU)
WITH_CUDA = """
import pytest
from pytest_rocm import get_environment

def pytest_generate_tests(metafunc):
    if "device" in metafunc.fixturenames:
        gpus = ["cuda:0"] if get_environment(metafunc.config).devices else []
        metafunc.parametrize("device", ["cpu", *gpus])
"""


def run_report(pytester: pytest.Pytester, name: str, env: str, *args: str, subprocess: bool = False) -> Path:
    """Run the project with ``--rocm-report``; ``subprocess``: in a child (a suite that imports
    torch: torch imported into this process late in a run has crashed its garbage collector)."""
    report = pytester.path / f"{name}.json"
    run = pytester.runpytest_subprocess if subprocess else pytester.runpytest_inprocess
    run(env, f"--rocm-report={report}", f"--rocm-label={name}", "-p", "no:cacheprovider", *args)
    assert report.is_file(), f"the {name} run wrote no report"
    return report


def run_diff(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str]:
    """``rocm-compat diff ARGS``: its exit status and what it printed."""
    capsys.readouterr()
    status = cli.main(["diff", *map(str, args)])
    return status, capsys.readouterr().out


def run_diff_json(capsys: pytest.CaptureFixture[str], *args: str | Path) -> dict[str, Any]:
    capsys.readouterr()
    cli.main(["diff", "--json", *map(str, args)])
    parsed: dict[str, Any] = json.loads(capsys.readouterr().out)
    return parsed
