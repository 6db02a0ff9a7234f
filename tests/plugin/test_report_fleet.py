"""The report's fleet fields written by the plugin: machine (id, basis, host only when named) and tool."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import pytest_rocm
from pytest_rocm.report.fleet import machine_id, machine_of
from pytest_rocm.report.load import load_report

ENVS = Path(__file__).parents[1] / "data" / "envs"
pytestmark = pytest.mark.usefixtures("only_this_plugin")


def _env(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((ENVS / f"{name}.json").read_text())
    return data


def test_the_plugin_writes_machine_tool_and_the_host_only_when_named(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(**{"suites/operators/test_x": "def test_a(): pass\n"})
    env = f"--rocm-env={ENVS / 'mi300x_8.json'}"
    pytester.runpytest("suites", "--rocm-report=r.json", "-p", "no:cacheprovider", env).assert_outcomes(passed=1)
    document = json.loads((pytester.path / "r.json").read_text())
    assert document["tool"] == {"name": "pytest-rocm", "version": pytest_rocm.__version__}
    assert document["machine"] == {"id": machine_id(_env("mi300x_8")), "basis": "8x pci 1002:74a1 gfx942", "host": None}
    assert document["created"].endswith("+00:00")  # the run date, in UTC
    load_report(pytester.path / "r.json")  # valid against report-1.json with the new fields
    result = pytester.runpytest(
        "suites", "--rocm-report=r.json", "-p", "no:cacheprovider", env, "--rocm-host-label=frontier-n0042"
    )
    result.assert_outcomes(passed=1)
    assert json.loads((pytester.path / "r.json").read_text())["machine"]["host"] == "frontier-n0042"


def test_a_killed_runs_sidecar_keeps_the_tool_and_the_machine(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        **{
            "suites/operators/test_kill": "import os, signal\ndef test_a(): pass\ndef test_b(): os.kill(os.getpid(), 9)\n"
        }
    )
    env = f"--rocm-env={ENVS / 'rx6800xt_igpu.json'}"
    pytester.runpytest_subprocess("suites", "--rocm-report=r.json", "-p", "no:cacheprovider", env)
    document = load_report(pytester.path / "r.json.partial.jsonl")
    assert document.get("tool", {}).get("version") == pytest_rocm.__version__
    assert machine_of(document)["id"] == machine_id(_env("rx6800xt_igpu"))


def test_a_host_label_with_a_control_character_is_one_usage_line(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(**{"suites/operators/test_x": "def test_a(): pass\n"})
    result = pytester.runpytest("suites", "--rocm-host-label=a\nb", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--rocm-host-label=*control characters*"])
