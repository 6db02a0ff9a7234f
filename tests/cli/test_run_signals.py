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

ROOT = Path(__file__).resolve().parents[2]
CPU_ENV = f"--rocm-env={ROOT / 'tests' / 'data' / 'envs' / 'cpu_only.json'}"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_reaches_pytest_and_the_finished_results_are_written(tmp_path: Path, sig: signal.Signals) -> None:
    suite = tmp_path / "suites" / "operators"
    suite.mkdir(parents=True)
    (suite / "test_slow.py").write_text(
        "import time\ndef test_a_quick():\n    pass\ndef test_b_slow():\n    time.sleep(120)\n", encoding="utf-8"
    )
    reports = tmp_path / "reports"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTEST_ROCM_SYSROOT": str(tmp_path)}  # no GPU to find
    run = subprocess.Popen(
        [sys.executable, "-m", "pytest_rocm.cli", "run", "--suites", str(tmp_path / "suites"), "--reports-dir",
         str(reports), "--label", "cancelled", "-n", "0", "-p", "no:randomly", CPU_ENV],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    sidecar = reports / "cancelled.json.partial.jsonl"
    try:
        deadline = time.monotonic() + 120
        while not (sidecar.exists() and sidecar.read_text().count("\n") >= 2):  # header + test_a_quick
            assert run.poll() is None and time.monotonic() < deadline, "the run did not get to its first result"
            time.sleep(0.1)
        pytest_pid = json.loads(sidecar.read_text().splitlines()[0])["pid"]
        run.send_signal(sig)
        _out, err = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 128 + sig, err[-2000:]
    with pytest.raises(ProcessLookupError):
        os.kill(pytest_pid, 0)  # pytest ended with it: no orphan
    document = json.loads((reports / "cancelled.json").read_text())
    outcomes = {r["feature"]: r["outcome"] for r in document["results"]}
    assert outcomes["operators/a_quick"] == "passed" and document["interrupted"] is True
    assert "operators/a_quick" in (reports / "cancelled.md").read_text()
    assert f"{signal.Signals(sig).name} passed on to pytest" in err
    assert "Traceback" not in err


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
