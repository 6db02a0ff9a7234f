"""--rocm-report without a recorded environment: detection runs in a child process while the tests
run (session.prefetch), the test process never imports torch for it, the report and the log still
name the environment, and a run killed before the child finished keeps its results."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from fake_machines import detect_in_a_fresh_process

from pytest_rocm.env.model import Environment
from pytest_rocm.report import load as report_load

#: a conftest that writes down, as the run ends, whether the test process imported torch
TORCH_WITNESS = """
import json, sys
def pytest_unconfigure(config):
    with open("witness.json", "w") as f:
        json.dump({"torch": "torch" in sys.modules}, f)
"""

#: a conftest that makes the child slow (its bootstrap sleeps first), so a test can outrun it
SLOW_CHILD = """
from pytest_rocm.env import child
child._BOOTSTRAP = "import time; time.sleep(3); " + child._BOOTSTRAP
"""

#: a conftest whose child fails: the run detects in-process instead
FAILING_CHILD = """
from pytest_rocm.env import child
child._BOOTSTRAP = "import sys; sys.stderr.write('no luck\\\\n'); sys.exit(5)  # {path!r}"
"""


@pytest.fixture(scope="module")
def here() -> dict:
    """This machine's environment, detected once in a fresh process (fake_machines)."""
    return detect_in_a_fresh_process()


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    # a process of its own: the child is started only where torch is not imported yet
    return pytester.runpytest_subprocess("--rocm-report=r.json", "-p", "no:cacheprovider", "-p", "no:randomly", *args)


def _comparable(env: dict) -> dict:
    # the variables of a pytester run are its own (it sets HOME, drops PYTEST_ADDOPTS): not compared
    return {k: v for k, v in env.items() if k != "variables"}


def test_the_report_has_the_environment_and_the_test_process_never_imported_torch(
    here: dict, pytester: pytest.Pytester
) -> None:
    pytester.makeconftest(TORCH_WITNESS)
    pytester.makepyfile(test_plain="def test_a(): pass\ndef test_b(): pass\n")
    result = _run(pytester)
    assert result.ret == 0
    report = json.loads((pytester.path / "r.json").read_text())
    assert _comparable(report["environment"]) == _comparable(here)
    assert report["label"] == f"cpu torch{here['torch'].split('+')[0]}" and report["device"] == "cpu"
    assert report["scale"] == "ci"
    assert json.loads((pytester.path / "witness.json").read_text()) == {"torch": False}
    # the log names the environment at the end (the header came before it was known)
    out = result.stdout.str()
    env_line = next(line for line in out.splitlines() if line.startswith("rocm: backend="))
    assert "[env: detected]" in env_line
    assert out.index(env_line) < out.index("rocm report (")


def test_a_test_that_needs_the_environment_gets_the_childs(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_env="""
        import json
        def test_a(rocm_env):
            with open("seen.json", "w") as f:
                json.dump(rocm_env.to_dict(), f)
        def test_b(): pass
        """
    )
    assert _run(pytester).ret == 0
    seen = json.loads((pytester.path / "seen.json").read_text())
    report = json.loads((pytester.path / "r.json").read_text())
    assert report["environment"] == seen
    assert not any("child process" in e for e in seen["system"]["errors"])


def test_a_child_that_fails_leaves_detection_to_the_test_process(here: dict, pytester: pytest.Pytester) -> None:
    pytester.makeconftest(FAILING_CHILD)
    pytester.makepyfile(test_plain="def test_a(): pass\n")
    assert _run(pytester).ret == 0
    report = json.loads((pytester.path / "r.json").read_text())
    assert report["environment"]["torch"] == here["torch"]
    assert "detection in a child process exited with status 5: no luck" in report["environment"]["system"]["errors"]


def test_a_hook_that_supplies_the_environment_wins_over_the_child(pytester: pytest.Pytester) -> None:
    recorded = Path(__file__).parents[1] / "data" / "envs" / "cpu_only.json"
    pytester.makeconftest(
        TORCH_WITNESS
        + f"""
from pytest_rocm.env.model import Environment
def pytest_rocm_detect_environment(config):
    return Environment.load({str(recorded)!r})
"""
    )
    pytester.makepyfile(test_plain="def test_a(): pass\n")
    assert _run(pytester).ret == 0
    report = json.loads((pytester.path / "r.json").read_text())
    assert report["environment"] == Environment.load(recorded).to_dict()
    assert json.loads((pytester.path / "witness.json").read_text()) == {"torch": False}


def test_a_run_killed_before_the_child_finished_keeps_its_results(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(SLOW_CHILD)
    pytester.makepyfile(
        test_kill="""
        import os, signal
        def test_a(): pass
        def test_b(): assert False
        def test_c_kills_the_run(): os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    result = _run(pytester)
    assert result.ret == -signal.SIGKILL or result.ret != 0
    sidecar = pytester.path / "r.json.partial.jsonl"
    loaded = report_load.load_report(sidecar)
    # the test the kill took down is named: it started and never finished
    assert [r["outcome"] for r in loaded["results"]] == ["passed", "failed", "crashed"]
    assert loaded["results"][2]["nodeid"].endswith("test_c_kills_the_run")
    assert loaded["environment"] == {} and loaded["interrupted"] is True
    assert loaded["label"].endswith("(environment not detected)")


def test_a_run_killed_after_the_child_finished_keeps_the_environment(here: dict, pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_kill="""
        import os, signal, time
        def test_a(): time.sleep(0.1)
        def test_b_waits_for_the_child(rocm_env): pass
        def test_c(): pass
        def test_d_kills_the_run(): os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    _run(pytester, "--rocm-label=killed")
    loaded = report_load.load_report(pytester.path / "r.json.partial.jsonl")
    assert [r["outcome"] for r in loaded["results"]] == ["passed", "passed", "passed", "crashed"]
    assert loaded["label"] == "killed" and loaded["device"] == "cpu" and loaded["scale"] == "ci"
    assert loaded["environment"]["torch"] == here["torch"]


def test_the_child_is_not_left_running_when_the_run_ends_first(pytester: pytest.Pytester) -> None:
    # --collect-only writes no report (nothing recorded, an earlier one is kept): nobody joins the
    # child, and unconfigure stops it; the pid it had is gone when pytest returns
    pytester.makeconftest(
        SLOW_CHILD
        + """
def pytest_unconfigure(config):
    from pytest_rocm.plugin import session
    pending = session.pending_detection(config)
    if pending is not None:
        with open("child.pid", "w") as f:
            f.write(str(pending.process.pid))
"""
    )
    pytester.makepyfile(test_plain="def test_a(): pass\n")
    (pytester.path / "r.json").write_text("{}")
    assert _run(pytester, "--collect-only").ret == 0
    pid = int((pytester.path / "child.pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
