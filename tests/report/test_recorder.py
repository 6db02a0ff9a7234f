"""The report's state machine (``report.recorder``), driven with plain values: no pytest run.

The plugin's hooks forward to it (``plugin/report``); the pytester tests of the report hold the
whole path, these hold each transition: a test's phases to one record, reruns, an xdist worker's
death, tests never run, the earlier report claimed or kept, the sidecar, a report that cannot be
written, and the environment settled late.
"""

from __future__ import annotations

import errno
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_rocm.report import files
from pytest_rocm.report.recorder import Recorder, Settled

SETTLED = Settled({"backend": "cpu", "devices": []}, "cpu", "quick", "cpu-default")


@dataclass
class Phase:
    """What ``records.build_record`` reads of a pytest phase report: nothing of pytest's own."""

    when: str
    outcome: str = "passed"
    longrepr: Any = None
    duration: float = 0.25
    user_properties: list[Any] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return self.outcome == "failed"

    @property
    def skipped(self) -> bool:
        return self.outcome == "skipped"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Run:
    """A recorder on ``tmp_path/r.json`` with what its callables were asked and said."""

    def __init__(self, tmp_path: Path, known_at_start: bool = True, **options: Any) -> None:
        self.path = tmp_path / "r.json"
        self.known = known_at_start
        self.asked: list[bool] = []
        self.warned: list[str] = []
        self.clock = Clock()
        sidecar = files.Sidecar(files.sidecar_path(self.path))
        self.recorder = Recorder(self.path, sidecar, self.detect, self.warned.append, clock=self.clock, **options)

    def detect(self, wait: bool) -> Settled | None:
        self.asked.append(wait)
        return SETTLED if wait or self.known else None

    def test(self, nodeid: str, *outcomes: str) -> None:
        """setup, call and teardown with these outcomes (default: all passed)."""
        for when, outcome in zip(("setup", "call", "teardown"), outcomes or ("passed",) * 3, strict=True):
            longrepr = "E   AssertionError: boom" if outcome in ("failed", "rerun") else None
            self.recorder.phase(nodeid, when, outcome, Phase(when, outcome, longrepr))

    def finish(self, stopped: bool = False, why: str = "not run: the run stopped early (-x)") -> bool:
        return self.recorder.finish(stopped, lambda: why, lambda: {"args": []}, lambda: {})

    def sidecar_lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in files.sidecar_path(self.path).read_text().splitlines()]

    def report(self) -> dict[str, Any]:
        return dict(json.loads(self.path.read_text()))


def _outcomes(document: dict[str, Any]) -> dict[str, str]:
    return {r["nodeid"]: r["outcome"] for r in document["results"]}


def test_a_tests_phases_end_in_one_record_in_the_sidecar_then_the_report(tmp_path: Path) -> None:
    run = Run(tmp_path, label="mine")
    run.recorder.start({"args": ["a.py"]})
    run.recorder.collection_finished(["a.py::t", "a.py::u"], {"a.py::t": "gemm/fp16"})
    run.test("a.py::t")
    run.recorder.phase("a.py::u", "setup", "passed", Phase("setup"))
    run.recorder.phase("a.py::u", "call", "failed", Phase("call", "failed", "E   assert 1 == 2"))
    assert [line.get("nodeid") for line in run.sidecar_lines()][-1:] == ["a.py::t"]  # u still running
    run.recorder.phase("a.py::u", "teardown", "passed", Phase("teardown"))
    header, collected, *results = run.sidecar_lines()
    assert header["label"] == "mine" and header["selection"] == {"args": ["a.py"]} and header["device"] == "cpu"
    assert collected["tests"] == ["a.py::t", "a.py::u"] and collected["marked"] == {"a.py::t": "gemm/fp16"}
    assert [(r["nodeid"], r["outcome"], r["duration"]) for r in results] == [
        ("a.py::t", "passed", 0.75),
        ("a.py::u", "failed", 0.75),
    ]
    assert run.finish() is True
    document = run.report()
    assert _outcomes(document) == {"a.py::t": "passed", "a.py::u": "failed"}
    assert document["label"] == "mine" and "interrupted" not in document
    assert list(document)[:4] == ["schema", "label", "created", "environment"]
    assert not files.sidecar_path(run.path).exists()  # written: the sidecar's job is done
    assert run.recorder.summary_lines() == [(f"rocm report (mine): {run.path} [1 passed, 1 failed]", None)]


def test_an_attempt_run_again_is_one_test_with_its_attempts_counted(tmp_path: Path) -> None:
    run = Run(tmp_path)
    run.recorder.start({})
    run.test("a.py::flaky", "passed", "rerun", "passed")
    run.test("a.py::flaky", "passed", "rerun", "passed")
    assert not run.recorder.results  # no record for an attempt that runs again
    run.test("a.py::flaky")
    run.test("a.py::once")
    run.test("a.py::never", "passed", "rerun", "passed")
    run.test("a.py::never", "passed", "failed", "passed")
    run.finish()
    results = {r["nodeid"]: (r["outcome"], r.get("attempts")) for r in run.report()["results"]}
    assert results == {"a.py::flaky": ("passed", 3), "a.py::once": ("passed", None), "a.py::never": ("failed", 2)}


def test_a_setup_run_again_is_an_attempt_too(tmp_path: Path) -> None:
    run = Run(tmp_path)
    run.recorder.start({})
    run.recorder.phase("a.py::t", "setup", "rerun", Phase("setup", "rerun", "E   OSError"))
    run.recorder.phase("a.py::t", "teardown", "passed", Phase("teardown"))
    run.test("a.py::t")
    run.finish()
    assert [(r["outcome"], r["attempts"]) for r in run.report()["results"]] == [("passed", 2)]


@pytest.mark.parametrize(
    ("ran_for", "outcome", "reason_end"),
    [(0.5, "crashed", "crashed while running 'a.py::t': exit status 3"), (5.0, "timeout", "timeout: exit status 3")],
)
def test_a_dead_workers_test_is_a_crash_or_past_its_timeout_a_timeout(
    tmp_path: Path, ran_for: float, outcome: str, reason_end: str
) -> None:
    run = Run(tmp_path, timeout=4.0)
    run.recorder.start({})
    run.recorder.worker_collected(["a.py::t", "a.py::after"])
    run.recorder.started("a.py::t")
    run.recorder.phase("a.py::t", "setup", "passed", Phase("setup"))
    run.clock.now += ran_for
    crash = Phase("???", "failed", "worker 'gw0' crashed while running 'a.py::t'", duration=0.0)
    run.recorder.phase("a.py::t", "???", "failed", crash, died="exit status 3")
    assert not run.recorder.pending and not run.recorder.deaths and not run.recorder.starts
    run.recorder.started("a.py::after")  # the replacement worker's next test
    run.test("a.py::after")
    run.finish()
    record = run.report()["results"][0]
    assert (record["outcome"], record["reason"][-len(reason_end) :]) == (outcome, reason_end)
    assert record["duration"] == pytest.approx(max(ran_for, 0.25))
    assert run.report()["results"][1]["outcome"] == "passed"  # the death was that test's alone


def test_tests_never_run_are_rows_with_why_and_the_report_says_interrupted(tmp_path: Path) -> None:
    run = Run(tmp_path)
    run.recorder.start({})
    run.recorder.collection_finished(["a.py::t", "a.py::u", "a.py::v"], {})
    run.recorder.phase("a.py::t", "setup", "passed", Phase("setup"))
    run.recorder.phase("a.py::t", "call", "failed", Phase("call", "failed", "E   assert 0"))  # -x: no teardown
    assert run.finish(stopped=True, why="not run: the run stopped early (-x)")
    document = run.report()
    assert _outcomes(document) == {"a.py::t": "failed", "a.py::u": "not-run", "a.py::v": "not-run"}
    assert document["interrupted"] is True and document["interrupted_reason"] == "not run: the run stopped early (-x)"
    assert document["results"][1]["reason"] == "not run: the run stopped early (-x)"


def test_stopped_without_tests_left_is_interrupted_without_a_reason(tmp_path: Path) -> None:
    run = Run(tmp_path)
    run.recorder.start({})
    run.test("a.py::t")
    run.finish(stopped=True)
    assert run.report()["interrupted"] is True and "interrupted_reason" not in run.report()


def test_collect_only_lists_no_test_as_never_run(tmp_path: Path) -> None:
    run = Run(tmp_path, collect_only=True)
    run.recorder.start({})
    run.recorder.collection_finished(["a.py::t"], {})
    assert run.recorder.never_run() == []
    run.finish()
    assert run.report()["results"] == [] and "interrupted" not in run.report()


def test_an_earlier_report_is_claimed_at_the_first_result_and_kept_when_nothing_is_recorded(tmp_path: Path) -> None:
    run = Run(tmp_path, collect_only=True)
    run.path.write_text('{"earlier": true}')
    run.recorder.start({})
    run.recorder.collection_finished(["a.py::t"], {})
    assert run.finish() is True
    assert run.path.read_text() == '{"earlier": true}' and not files.sidecar_path(run.path).exists()
    assert run.recorder.summary_lines() == [
        (f"rocm report (cpu-default): nothing recorded: kept the earlier report {run.path}", None)
    ]
    claiming = Run(tmp_path)
    claiming.recorder.start({})
    assert run.path.exists()  # not at the start: a run that records nothing leaves it
    claiming.test("a.py::t")
    assert not run.path.exists()  # the first result: from now on only the sidecar speaks


def test_a_modules_collection_error_is_one_row_however_many_workers_send_it(tmp_path: Path) -> None:
    run = Run(tmp_path)
    run.recorder.start({})
    text = "ImportError while importing test module\nE   ModuleNotFoundError: No module named 'hip_ext'"
    run.recorder.collection_error("suites/operators/test_ext.py", text)
    run.recorder.collection_error("suites/operators/test_ext.py", text)
    run.finish()
    [row] = run.report()["results"]
    assert (row["outcome"], row["reason"], row["info"]) == (
        "error",
        "ModuleNotFoundError: No module named 'hip_ext'",
        {"collection": True},
    )


def test_the_environment_known_late_goes_to_the_sidecar_once_and_the_default_label_follows(tmp_path: Path) -> None:
    run = Run(tmp_path, known_at_start=False)
    run.recorder.start({})
    assert "environment" not in run.sidecar_lines()[0] and "label" not in run.sidecar_lines()[0]
    run.recorder.collection_finished(["a.py::t", "a.py::u"], {})
    run.known = True  # the tests imported torch: harmless to detect now
    run.test("a.py::t")
    run.test("a.py::u")
    kinds = [line.get("sidecar", "result" if "nodeid" in line else "header") for line in run.sidecar_lines()]
    assert kinds == ["header", "collected", "environment", "result", "result"]
    assert run.sidecar_lines()[2]["label"] == "cpu-default"
    run.finish()
    assert run.asked == [False, False, False]  # settled once: never asked again, never waited for
    assert run.report()["label"] == "cpu-default" and run.report()["scale"] == "quick"


def test_never_known_during_the_run_it_is_waited_for_at_the_end(tmp_path: Path) -> None:
    run = Run(tmp_path, known_at_start=False, label="given")
    run.recorder.start({})
    run.test("a.py::t")
    run.finish()
    assert run.asked[-1] is True and run.report()["label"] == "given"
    assert run.report()["environment"] == SETTLED.environment and run.report()["device"] == "cpu"


def test_a_full_disk_is_said_once_and_the_results_stay_in_memory(tmp_path: Path) -> None:
    run = Run(tmp_path)
    run.recorder.start({})
    run.recorder.sidecar.problem = "r.json.partial.jsonl: No space left on device"  # the sidecar's own stop
    run.test("a.py::t")
    run.test("a.py::u")
    assert len(run.warned) == 1 and "cannot write the sidecar" in run.warned[0]
    run.finish()
    assert len(run.warned) == 1 and set(_outcomes(run.report())) == {"a.py::t", "a.py::u"}


def test_a_report_that_cannot_be_written_keeps_the_sidecar_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    run = Run(tmp_path)
    run.recorder.start({})
    run.test("a.py::t")
    monkeypatch.setattr(files, "write_json", full)
    assert run.finish() is False
    sidecar = files.sidecar_path(run.path)
    assert run.recorder.unwritten == (
        f"cannot write {run.path} (No space left on device): 1 results not saved; {sidecar} has them all"
    )
    assert run.sidecar_lines()[-1] == {"sidecar": "finished"}
    assert run.recorder.summary_lines() == [(f"rocm report: ERROR: {run.recorder.unwritten}", "red")]


def test_the_summary_warns_of_modules_and_of_a_gpu_run_that_used_no_gpu(tmp_path: Path) -> None:
    run = Run(tmp_path, label="gpu")
    run.recorder.start({})
    probe = [("rocm_accelerator", False)]
    run.recorder.phase("a.py::t", "setup", "passed", Phase("setup", user_properties=probe))
    run.recorder.phase("a.py::t", "call", "passed", Phase("call", user_properties=probe))
    run.recorder.phase("a.py::t", "teardown", "passed", Phase("teardown", user_properties=probe))
    run.finish()
    run.recorder.device = "hip:0 (gfx942)"
    lines = run.recorder.summary_lines(["rocm report: warning: the tests imported x"])
    assert [colour for _, colour in lines] == [None, "yellow", "yellow"]
    assert lines[2][0].startswith("rocm report: 0 of 1 tests used the GPU (hip:0 (gfx942)): warning: none did")


def test_a_crashed_attempt_run_again_is_one_test_and_the_last_attempt_decides(tmp_path: Path) -> None:
    # pytest-rerunfailures marks xdist's report of a dead worker "rerun" and runs the test again on
    # the replacement worker: one test, the last attempt's outcome, not a crash row per attempt
    run = Run(tmp_path)
    run.recorder.start({})
    crash = Phase("???", "rerun", "worker 'gw0' crashed while running 'a.py::t'", duration=0.0)
    run.recorder.phase("a.py::t", "setup", "passed", Phase("setup"))
    run.recorder.phase("a.py::t", "???", "rerun", crash, died="killed by SIGSEGV (signal 11)")
    assert not run.recorder.results  # no record yet: it runs again
    run.test("a.py::t")
    run.finish()
    results = run.report()["results"]
    assert [(r["nodeid"], r["outcome"], r.get("attempts")) for r in results] == [("a.py::t", "passed", 2)]
    assert "crashed" not in (results[0].get("reason") or "")


def test_a_crashed_attempt_whose_rerun_never_came_is_the_crash(tmp_path: Path) -> None:
    run = Run(tmp_path)
    run.recorder.start({})
    crash = Phase("???", "rerun", "worker 'gw0' crashed while running 'a.py::t'", duration=0.0)
    run.recorder.phase("a.py::t", "setup", "passed", Phase("setup"))
    run.recorder.phase("a.py::t", "???", "rerun", crash, died="exit status 3")
    run.finish()
    [record] = run.report()["results"]
    assert (record["outcome"], record.get("attempts")) == ("crashed", None)
    assert record["reason"].endswith("exit status 3")
