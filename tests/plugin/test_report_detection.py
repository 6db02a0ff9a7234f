"""--rocm-report without a recorded environment: detected in the test process once the tests imported
torch and detecting there is harmless (session.detect_if_harmless), else at the end; in a child
process only when the run never imported torch, so the test process never imports torch for it.
The report and the log still name the environment, and a killed run keeps its results."""

from __future__ import annotations

import json
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

#: a conftest for a machine where torch's installed files cannot tell the environment (a GPU build
#: on a machine with a GPU: only the runtime names the devices), so a run that never imports torch
#: detects in a child; without it this CPU machine's environment is read from the files
FILES_CANNOT_TELL = """
from pytest_rocm.env import torchfiles
torchfiles.detect_without_torch = lambda seam=None: None
"""

#: a conftest that makes the child slow (its bootstrap sleeps first), so a test can outrun it
SLOW_CHILD = (
    FILES_CANNOT_TELL
    + """
from pytest_rocm.env import background
background._BOOTSTRAP = "import time; time.sleep(3); " + background._BOOTSTRAP
"""
)

#: a conftest whose child fails: the run detects in-process instead
FAILING_CHILD = (
    FILES_CANNOT_TELL
    + """
from pytest_rocm.env import background
background._BOOTSTRAP = "import sys; sys.stderr.write('no luck\\\\n'); sys.exit(5)  # {path!r}"
"""
)


@pytest.fixture(scope="module")
def here() -> dict:
    """This machine's environment, detected once in a fresh process (fake_machines)."""
    return detect_in_a_fresh_process()


#: a conftest that writes "child" to order.txt when a child detection starts (tests write their names)
CHILD_WITNESS = """
from pytest_rocm.env import background
_start = background.start
def _witnessed():
    with open("order.txt", "a") as f:
        f.write("child\\n")
    return _start()
background.start = _witnessed
"""

#: a test module that writes its tests' names to order.txt as they run
ORDERED = """
def _say(name):
    with open("order.txt", "a") as f:
        f.write(name + "\\n")
"""


def _order(pytester: pytest.Pytester) -> list[str]:
    path = pytester.path / "order.txt"
    return path.read_text().split() if path.exists() else []


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


def test_collect_only_starts_no_child_and_keeps_the_earlier_report(pytester: pytest.Pytester) -> None:
    # --collect-only writes no report (nothing recorded, an earlier one is kept): nothing needs the
    # environment, so nothing detects it
    pytester.makeconftest(CHILD_WITNESS + TORCH_WITNESS)
    pytester.makepyfile(test_plain="def test_a(): pass\n")
    (pytester.path / "r.json").write_text("{}")
    assert _run(pytester, "--collect-only").ret == 0
    assert _order(pytester) == [] and (pytester.path / "r.json").read_text() == "{}"
    assert json.loads((pytester.path / "witness.json").read_text()) == {"torch": False}


def test_a_run_that_never_imports_torch_detects_in_a_child_after_its_tests(
    here: dict, pytester: pytest.Pytester
) -> None:
    """A child started at configure time imported torch a second time for every suite that imports
    it itself; now it starts only once the tests are over and torch never appeared."""
    pytester.makeconftest(FILES_CANNOT_TELL + CHILD_WITNESS + TORCH_WITNESS)
    pytester.makepyfile(test_plain=ORDERED + "def test_a(): _say('a')\ndef test_b(): _say('b')\n")
    assert _run(pytester).ret == 0
    assert _order(pytester) == ["a", "b", "child"]
    assert json.loads((pytester.path / "witness.json").read_text()) == {"torch": False}
    report = json.loads((pytester.path / "r.json").read_text())
    assert _comparable(report["environment"]) == _comparable(here)


def test_a_suite_that_imports_torch_is_detected_in_the_test_process_without_a_child(
    here: dict, pytester: pytest.Pytester
) -> None:
    """The test modules import torch (at collection, not in a conftest): detected in the test
    process before the first test, no second torch import in a child."""
    pytester.makeconftest(CHILD_WITNESS)
    pytester.makepyfile(test_torch=ORDERED + "import torch\ndef test_a(): _say('a')\n")
    assert _run(pytester).ret == 0
    assert _order(pytester) == ["a"]
    report = json.loads((pytester.path / "r.json").read_text())
    assert _comparable(report["environment"]) == _comparable(here)
    assert report["label"] == f"cpu torch{here['torch'].split('+')[0]}" and report["scale"] == "ci"


def test_torch_imported_by_a_test_is_detected_after_it_and_a_killed_run_keeps_the_environment(
    here: dict, pytester: pytest.Pytester
) -> None:
    """torch appears in the middle of the run (a test imports it): detected at that test's end, in the
    test process, so the sidecar has the environment before the kill; no child ever starts (the slow
    child would have lost it)."""
    pytester.makeconftest(SLOW_CHILD + CHILD_WITNESS)
    pytester.makepyfile(
        test_late=ORDERED
        + """
import os, signal
def test_a(): _say('a')
def test_b_imports_torch():
    import torch
    _say('b')
def test_c_kills_the_run(): os.kill(os.getpid(), signal.SIGKILL)
"""
    )
    _run(pytester)
    assert _order(pytester) == ["a", "b"]
    loaded = report_load.load_report(pytester.path / "r.json.partial.jsonl")
    assert [r["outcome"] for r in loaded["results"]] == ["passed", "passed", "crashed"]
    assert loaded["environment"]["torch"] == here["torch"] and loaded["device"] == "cpu"
    rows = [json.loads(line) for line in (pytester.path / "r.json.partial.jsonl").read_text().splitlines()]

    def done(test: str) -> int:
        return next(i for i, r in enumerate(rows) if "outcome" in r and r["nodeid"].endswith(test))

    environment = next(i for i, r in enumerate(rows) if r.get("sidecar") == "environment")
    # known once test_b imported torch: after test_a's record, before test_b's (and test_c started after it)
    assert done("test_a") < environment < done("test_b_imports_torch")


#: a torch of a GPU build (version.hip set) that is imported but not initialised until a test calls
#: _init(); a hook supplies the environment and writes "detected" to order.txt when it is asked
FAKE_GPU_TORCH = """
import sys, types
from pytest_rocm.env.model import Environment
torch = types.ModuleType("torch")
torch.__version__ = "2.6.0+rocm6.2.4"
torch.version = types.SimpleNamespace(hip="6.2.41133", cuda=None)
state = {"initialised": False}
torch.cuda = types.SimpleNamespace(
    is_initialized=lambda: state["initialised"], device_count=lambda: 0, memory_stats=lambda i: {},
    _init=lambda: state.update(initialised=True),
)
sys.modules["torch"] = torch
def pytest_rocm_detect_environment(config):
    with open("order.txt", "a") as f:
        f.write("detected\\n")
    return Environment.load(RECORDED)
"""


@pytest.mark.parametrize(
    ("initialising_test", "expected"),
    [
        ("def test_b(): _say('b')", ["a", "b", "c", "detected"]),  # never initialised: at the end
        ("def test_b():\n    import torch\n    torch.cuda._init()\n    _say('b')", ["a", "b", "detected", "c"]),
    ],
    ids=["uninitialised-at-the-end", "initialised-by-a-test"],
)
def test_a_gpu_runtime_is_never_initialised_for_the_report(
    pytester: pytest.Pytester, initialising_test: str, expected: list[str]
) -> None:
    """A GPU build of torch imported but not initialised: detecting would initialise HIP in the test
    process (a later HIP_VISIBLE_DEVICES, a forked DataLoader would find it changed), so it waits for
    the end of the run, or for a test that initialised the runtime itself."""
    recorded = Path(__file__).parents[1] / "data" / "envs" / "cpu_only.json"
    pytester.makeconftest(f"RECORDED = {str(recorded)!r}\n" + FAKE_GPU_TORCH)
    pytester.makepyfile(
        test_gpu=ORDERED + "def test_a(): _say('a')\n" + initialising_test + "\ndef test_c(): _say('c')\n"
    )
    assert _run(pytester).ret == 0
    assert _order(pytester) == expected


def test_harmless_in_process_detection_is_decided_from_sys_modules() -> None:
    from types import SimpleNamespace

    from pytest_rocm.plugin.session import in_process_detection_is_harmless as harmless

    def torch(hip: str | None, cuda: str | None, initialised: bool) -> SimpleNamespace:
        return SimpleNamespace(
            __version__="2.6.0",
            version=SimpleNamespace(hip=hip, cuda=cuda),
            cuda=SimpleNamespace(is_initialized=lambda: initialised),
        )

    assert not harmless({})  # detection would import torch
    assert harmless({"torch": None})  # blocked: nothing to import
    assert harmless({"torch": torch(None, None, False)})  # a CPU build: no GPU runtime
    assert not harmless({"torch": torch("6.2.41133", None, False)})  # it would initialise HIP
    assert not harmless({"torch": torch(None, "12.4", False)})
    assert harmless({"torch": torch("6.2.41133", None, True)})  # the tests initialised it already
    assert not harmless({"torch": SimpleNamespace(__version__="2.6.0")})  # half imported: no torch.version
    assert not harmless({"torch": SimpleNamespace(__version__="2.6.0", version=SimpleNamespace(hip="6.2"))})
