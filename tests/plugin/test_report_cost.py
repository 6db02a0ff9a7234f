"""The promised cost of --rocm-report (issue 56, point 10): with --junitxml or under pytest-xdist no
torch-importing detection at session start; where torch's installed files tell the environment
(this CPU machine's CPU build) nothing imports torch at all, not even a child after the tests, and
the environment is known from the start (a killed run keeps it)."""

from __future__ import annotations

import json
import signal
import xml.etree.ElementTree as ET

import pytest
from fake_machines import detect_in_a_fresh_process

from pytest_rocm.report import load as report_load

#: writes down, in the controller (or the only process), whether it imported torch
TORCH_WITNESS = """
import json, sys
def pytest_unconfigure(config):
    if not hasattr(config, "workerinput"):
        with open("witness.json", "w") as f:
            json.dump({"torch": "torch" in sys.modules}, f)
"""

#: order.txt gets "child" when a child detection starts (tests write their names)
CHILD_WITNESS = """
from pytest_rocm.env import background
_start = background.start
def _witnessed():
    with open("order.txt", "a") as f:
        f.write("child\\n")
    return _start()
background.start = _witnessed
"""

#: a machine where the files cannot tell (a GPU build with a GPU): only torch names the devices
FILES_CANNOT_TELL = """
from pytest_rocm.env import torchfiles
torchfiles.detect_without_torch = lambda seam=None: None
"""

ORDERED = """
def _say(name):
    with open("order.txt", "a") as f:
        f.write(name + "\\n")
def test_a(): _say("a")
"""


@pytest.fixture(scope="module")
def here() -> dict:
    return detect_in_a_fresh_process()


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("--rocm-report=r.json", "-p", "no:cacheprovider", "-p", "no:randomly", *args)


def _order(pytester: pytest.Pytester) -> list[str]:
    path = pytester.path / "order.txt"
    return path.read_text().split() if path.exists() else []


def _comparable(env: dict) -> dict:
    return {k: v for k, v in env.items() if k != "variables"}


def test_junitxml_waits_for_the_end_and_the_files_spare_the_import(here: dict, pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CHILD_WITNESS + TORCH_WITNESS)
    pytester.makepyfile(test_one=ORDERED)
    assert _run(pytester, "--junitxml=out.xml").ret == 0
    assert _order(pytester) == ["a"]  # no child, before or after the test
    assert json.loads((pytester.path / "witness.json").read_text()) == {"torch": False}
    report = json.loads((pytester.path / "r.json").read_text())
    assert _comparable(report["environment"]) == _comparable(here)
    suite = ET.parse(pytester.path / "out.xml").getroot().find("testsuite")
    assert suite is not None
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["rocm.torch"] == here["torch"] and props["rocm.source"] == "detected"


def test_junitxml_on_a_machine_the_files_cannot_tell_detects_after_the_tests(pytester: pytest.Pytester) -> None:
    """The child that imports torch starts after the tests (it used to start before the first)."""
    pytester.makeconftest(FILES_CANNOT_TELL + CHILD_WITNESS + TORCH_WITNESS)
    pytester.makepyfile(test_one=ORDERED)
    assert _run(pytester, "--junitxml=out.xml").ret == 0
    assert _order(pytester) == ["a", "child"]
    assert json.loads((pytester.path / "witness.json").read_text()) == {"torch": False}
    suite = ET.parse(pytester.path / "out.xml").getroot().find("testsuite")
    assert suite is not None and any(p.get("name") == "rocm.environment" for p in suite.iter("property"))


def test_under_xdist_the_controller_imports_no_torch_where_the_files_tell(
    here: dict, pytester: pytest.Pytester
) -> None:
    pytester.makeconftest(CHILD_WITNESS + TORCH_WITNESS)
    pytester.makepyfile(test_one=ORDERED + "def test_b(): _say('b')\n")
    assert _run(pytester, "-n", "2").ret == 0
    assert sorted(_order(pytester)) == ["a", "b"]
    assert json.loads((pytester.path / "witness.json").read_text()) == {"torch": False}
    report = json.loads((pytester.path / "r.json").read_text())
    assert _comparable(report["environment"]) == _comparable(here)


def test_a_run_killed_early_keeps_the_environment_the_files_told(here: dict, pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CHILD_WITNESS)
    pytester.makepyfile(
        test_kill="import os, signal\ndef test_a(): pass\ndef test_b_kills(): os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    result = _run(pytester)
    assert result.ret == -signal.SIGKILL or result.ret != 0
    loaded = report_load.load_report(pytester.path / "r.json.partial.jsonl")
    assert [r["outcome"] for r in loaded["results"]] == ["passed", "crashed"]
    assert loaded["environment"]["torch"] == here["torch"] and loaded["device"] == "cpu"
    assert _order(pytester) == []
