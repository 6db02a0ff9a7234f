"""``rocm-compat run`` passes SIGTERM/SIGINT on to its pytest, waits, then writes the table of
what finished (a cancelled CI job still leaves its partial report), and leaves no orphan."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

# races a signal against processes it starts: load can reorder them
pytestmark = pytest.mark.timing

ROOT = Path(__file__).resolve().parents[2]
CPU_ENV = f"--rocm-env={ROOT / 'tests' / 'data' / 'envs' / 'cpu_only.json'}"


# pytest told to stop, but slow to write its report (a hook still busy)
SLOW_FINISH = """
import time, pytest

@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish():
    time.sleep({seconds})
"""


# what a shell without job control does to a background job (`rocm-compat run &` in a CI script)
# before it starts the command: SIGINT ignored, which exec keeps
IGNORING_SIGINT = [
    sys.executable, "-c",
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); os.execv(sys.argv[1], sys.argv[1:])",
]  # fmt: skip


class CancelledRun:
    """``rocm-compat run`` on a suite of a quick test and a slow one, up to its first result."""

    def __init__(self, tmp_path: Path, conftest: str = "", launcher: list[str] | None = None) -> None:
        suite = tmp_path / "suites" / "operators"
        suite.mkdir(parents=True)
        (suite / "test_slow.py").write_text(
            "import time\ndef test_a_quick():\n    pass\ndef test_b_slow():\n    time.sleep(120)\n", encoding="utf-8"
        )
        if conftest:
            (suite / "conftest.py").write_text(conftest, encoding="utf-8")
        self.reports = tmp_path / "reports"
        env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTEST_ROCM_SYSROOT": str(tmp_path)}  # no GPU to find
        self.run = subprocess.Popen(
            [*(launcher or []), sys.executable, "-m", "pytest_rocm.cli", "run", "--suites", str(tmp_path / "suites"), "--reports-dir",
             str(self.reports), "--label", "cancelled", "-n", "0", "-p", "no:randomly", CPU_ENV],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        self.sidecar = self.reports / "cancelled.json.partial.jsonl"
        deadline = time.monotonic() + 120
        while not (self.sidecar.exists() and '"outcome"' in self.sidecar.read_text()):  # test_a_quick's record
            if self.run.poll() is not None or time.monotonic() > deadline:
                self.close()
                pytest.fail("the run did not get to its first result")
            time.sleep(0.1)
        self.pytest_pid: int = json.loads(self.sidecar.read_text().splitlines()[0])["pid"]

    def finish(self) -> str:
        """Wait for the command; its standard error."""
        try:
            return self.run.communicate(timeout=90)[1]
        finally:
            self.close()

    def close(self) -> None:
        if self.run.poll() is None:
            self.run.kill()
            self.run.wait()

    def pytest_alive(self) -> bool:
        """Whether pytest still runs (a zombie whose new parent has not reaped it yet has ended)."""
        try:
            stat = Path(f"/proc/{self.pytest_pid}/stat").read_text()
        except FileNotFoundError:
            return False
        except OSError:  # no /proc: ask the kernel
            try:
                os.kill(self.pytest_pid, 0)
            except ProcessLookupError:
                return False
            return True
        return stat.rpartition(")")[2].split()[0] not in ("Z", "X")

    def assert_report_written(self, err: str, sig: signal.Signals) -> None:
        assert self.run.returncode == 128 + sig, err[-2000:]
        assert not self.pytest_alive()  # pytest ended with it: no orphan
        document = json.loads((self.reports / "cancelled.json").read_text())
        outcomes = {r["feature"]: r["outcome"] for r in document["results"]}
        assert outcomes["operators/a_quick"] == "passed" and document["interrupted"] is True
        assert "operators/a_quick" in (self.reports / "cancelled.md").read_text()
        assert f"{signal.Signals(sig).name} passed on to pytest" in err
        assert "Traceback" not in err


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_reaches_pytest_and_the_finished_results_are_written(tmp_path: Path, sig: signal.Signals) -> None:
    cancelled = CancelledRun(tmp_path)
    cancelled.run.send_signal(sig)
    cancelled.assert_report_written(cancelled.finish(), sig)


def test_a_run_started_with_ctrl_c_ignored_still_stops_its_pytest(tmp_path: Path) -> None:
    # an ignored SIGINT outlives exec: had pytest inherited it, the forwarded stop would never
    # reach it, and it would be killed at the grace with its report unwritten
    cancelled = CancelledRun(tmp_path, launcher=IGNORING_SIGINT)
    cancelled.run.send_signal(signal.SIGTERM)
    cancelled.assert_report_written(cancelled.finish(), signal.SIGTERM)


def test_one_stop_delivered_twice_is_one_stop(tmp_path: Path) -> None:
    # GNU timeout at its limit signals the command and then its whole process group, so the
    # command gets SIGTERM twice within microseconds: that is one stop, and the report is written
    from pytest_rocm._lifetime import SAME_STOP_S

    # pytest still finishing when the second one comes (a real one comes microseconds later)
    cancelled = CancelledRun(tmp_path, conftest=SLOW_FINISH.format(seconds=3))
    sent = time.monotonic()
    cancelled.run.send_signal(signal.SIGTERM)
    time.sleep(0.2)  # the first one handled (pytest already told) before the second arrives
    gap = time.monotonic() - sent
    cancelled.run.send_signal(signal.SIGTERM)
    err = cancelled.finish()
    if gap >= SAME_STOP_S:  # a machine so loaded that 0.2 s took a second: a second request now
        pytest.skip(f"the two signals were {gap:.1f} s apart, not one stop delivered twice")
    cancelled.assert_report_written(err, signal.SIGTERM)


def test_a_second_signal_later_ends_pytest_and_its_sidecar_keeps_the_results(tmp_path: Path) -> None:
    cancelled = CancelledRun(tmp_path, conftest=SLOW_FINISH.format(seconds=60))
    cancelled.run.send_signal(signal.SIGINT)
    time.sleep(2.0)  # a deliberate second Ctrl-C, well after the first
    assert cancelled.pytest_alive()
    cancelled.run.send_signal(signal.SIGINT)
    err = cancelled.finish()
    assert cancelled.run.returncode == 128 + signal.SIGINT, err[-2000:]
    assert not cancelled.pytest_alive()
    assert not (cancelled.reports / "cancelled.json").exists()
    records = [json.loads(line) for line in cancelled.sidecar.read_text().splitlines()[1:]]
    # finished records (the "collected" line also names the test that was running when it was killed)
    assert [r["feature"] for r in records if "outcome" in r] == ["operators/a_quick"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_a_killed_command_takes_its_pytest_with_it(tmp_path: Path) -> None:
    # timeout -k, a CI runner's last resort: no pytest is left running on the GPU (or holding the
    # pipe of a `| tee` open, which would hang the script that ran the command)
    cancelled = CancelledRun(tmp_path)
    cancelled.run.kill()
    cancelled.run.wait()
    deadline = time.monotonic() + 30
    while cancelled.pytest_alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    orphaned = cancelled.pytest_alive()
    if orphaned:
        os.kill(cancelled.pytest_pid, signal.SIGKILL)
    cancelled.finish()
    assert not orphaned


def test_a_run_on_a_report_another_run_is_writing_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_rocm import cli
    from pytest_rocm.cli import run as runner
    from pytest_rocm.env.model import Environment
    from pytest_rocm.report.files import Sidecar, sidecar_path

    monkeypatch.setattr(runner, "detect", lambda: Environment.load(ROOT / "tests" / "data" / "envs" / "mi300x_8.json"))
    monkeypatch.setattr(runner, "run_pytest", lambda *a, **k: pytest.fail("must not run pytest"))
    (tmp_path / "suites").mkdir()
    report = tmp_path / "r" / "gate.json"
    holder = Sidecar(sidecar_path(report), {"label": "gate"})  # the other run, still going
    try:
        before = sidecar_path(report).read_bytes()
        status = cli.main(
            ["run", "--suites", str(tmp_path / "suites"), "--reports-dir", str(tmp_path / "r"), "--label", "gate"]
        )
        assert status == 2
        err = capsys.readouterr().err.strip()
        assert err == (
            f"rocm-compat run: another run (pid {os.getpid()}) is writing {report}: wait for it, or give this run"
            " another --label"
        )
        assert sidecar_path(report).read_bytes() == before  # its results are untouched
    finally:
        holder.close()


# rocm-compat run's wait, with a 1 s grace, on a "pytest" that ignores the forwarded SIGINT
GRACE_RUNNER = """
import sys, time
from pytest_rocm import _lifetime
from pytest_rocm.cli import run
_lifetime.GRACE_S = 1.0
marker = sys.argv[1]
deaf = ("import pathlib, signal, sys, time; signal.signal(signal.SIGINT, signal.SIG_IGN); "
        "pathlib.Path(sys.argv[1]).touch(); time.sleep(60)")
start = time.monotonic()
status = run.run_pytest([sys.executable, "-c", deaf, marker])
print(status, round(time.monotonic() - start, 1))
"""


def test_pytest_still_running_past_the_grace_period_is_ended(tmp_path: Path) -> None:
    marker = tmp_path / "deaf"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    runner = subprocess.Popen(
        [sys.executable, "-c", GRACE_RUNNER, str(marker)], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():  # the child ignores SIGINT from now on
            assert runner.poll() is None and time.monotonic() < deadline, "the deaf child never started"
            time.sleep(0.05)
        sent = time.monotonic()
        runner.send_signal(signal.SIGTERM)
        out, _ = runner.communicate(timeout=45)
        waited = time.monotonic() - sent
    finally:
        if runner.poll() is None:
            runner.kill()
    assert out.split()[0] == str(128 + signal.SIGTERM)
    assert 1.0 <= waited < 30, waited  # the grace, then the kill: not its 60 s sleep
