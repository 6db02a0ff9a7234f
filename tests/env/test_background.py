"""env.background: detection in a child process gives what in-process detection gives, and every way
the child can fail ends in None with one line saying why (the caller then detects in-process)."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest
from fake_machines import detect_in_a_fresh_process

from pytest_rocm.env import background
from pytest_rocm.env.model import Environment


def _with_bootstrap(monkeypatch: pytest.MonkeyPatch, code: str) -> None:
    """The child runs ``code`` instead of the detection (the parent's side is what is tested)."""
    monkeypatch.setattr(background, "_BOOTSTRAP", code.replace("{", "{{").replace("}", "}}") + "  # {path!r}")


def test_the_child_detects_what_this_process_detects() -> None:
    pending = background.start()
    here = detect_in_a_fresh_process()  # not in this process: what it detects depends on earlier tests
    found = pending.result()
    assert found is not None, pending.failure
    assert pending.failure == ""
    assert json.loads(found.to_json()) == here
    assert pending.done() and pending.result() is found  # joined once, kept


def test_the_child_sees_the_variables_set_before_it_started(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HIP_VISIBLE_DEVICES", "1,0")
    monkeypatch.setenv("HSA_OVERRIDE_GFX_VERSION", "11.0.0")
    found = background.start().result()
    assert found is not None
    assert found.variables["HIP_VISIBLE_DEVICES"] == "1,0"
    assert found.variables["HSA_OVERRIDE_GFX_VERSION"] == "11.0.0"


def test_a_child_that_fails_says_its_status_and_last_error_line(monkeypatch: pytest.MonkeyPatch) -> None:
    _with_bootstrap(
        monkeypatch, "import sys; sys.stderr.write('warming up\\nImportError: libamdhip64.so.6\\n'); sys.exit(3)"
    )
    pending = background.start()
    assert pending.result() is None
    assert pending.failure == "detection in a child process exited with status 3: ImportError: libamdhip64.so.6"


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("not json", "Expecting value"),
        ('{"schema": "pytest-rocm/environment/9"}', "schema is 'pytest-rocm/environment/9'"),
        ('{"schema": "pytest-rocm/environment/1", "devices": 3}', "devices"),
    ],
)
def test_a_child_that_prints_no_environment_gives_none(
    monkeypatch: pytest.MonkeyPatch, output: str, expected: str
) -> None:
    _with_bootstrap(monkeypatch, f"import sys; sys.stdout.write({output!r})")
    pending = background.start()
    assert pending.result() is None
    assert expected in pending.failure and "\n" not in pending.failure


def test_a_child_that_hangs_is_killed_at_the_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    _with_bootstrap(monkeypatch, "import time; time.sleep(60)")
    pending = background.start()
    started = time.monotonic()
    assert pending.result(timeout=0.5) is None
    assert time.monotonic() - started < 10
    assert pending.failure == "detection in a child process ran out of time (0.5 s)"
    assert pending.process.returncode is not None  # killed and reaped, not left behind


def test_cancel_stops_a_running_child(monkeypatch: pytest.MonkeyPatch) -> None:
    _with_bootstrap(monkeypatch, "import time; time.sleep(60)")
    pending = background.start()
    assert not pending.done()
    pending.cancel()
    assert pending.done() and pending.process.returncode is not None
    assert pending.result() is None  # nothing to read, and no wait


def test_what_detection_prints_goes_to_stderr_and_stdout_holds_the_json(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    import pytest_rocm.env.detect as detect

    def noisy() -> Environment:
        print("torch says hello")  # Python-level, as a library's import may
        os.write(1, b"a C library says hello\n")  # and straight to file descriptor 1
        return Environment(torch="2.6.0+rocm6.2.4", backend="cpu")

    monkeypatch.setattr(detect, "detect_environment", noisy)
    ignored: list[int] = []
    monkeypatch.setattr(signal, "signal", lambda sig, handler: ignored.append(sig))  # and its Ctrl-C
    assert background.main() == 0
    sys.stdout.flush()
    out, err = capfd.readouterr()
    assert json.loads(out)["torch"] == "2.6.0+rocm6.2.4"
    assert "torch says hello" in err and "a C library says hello" in err
    assert ignored == [signal.SIGINT]


def _ignores_sigint(pid: int) -> bool:
    """Whether the process has set SIGINT to be ignored (Linux: the SigIgn mask of /proc/PID/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigIgn:"):
            return bool(int(line.split()[1], 16) & (1 << (signal.SIGINT - 1)))
    return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/PID/status")
def test_a_ctrl_c_does_not_stop_the_child() -> None:
    pending = background.start()
    # past its bootstrap, into main(), which ignores SIGINT before importing torch: waited for as
    # the event itself (the child's signal mask), not a guess at how long the bootstrap takes
    deadline = time.monotonic() + 120
    while not _ignores_sigint(pending.process.pid):
        assert pending.process.poll() is None, "the child finished before it was interrupted"
        assert time.monotonic() < deadline, "the child never got to main()"
        time.sleep(0.01)
    for _ in range(5):  # a few times, as a user at the keyboard would
        assert pending.process.poll() is None, "the child finished before it was interrupted"
        pending.process.send_signal(signal.SIGINT)
        time.sleep(0.05)
    found = pending.result()
    assert found is not None, pending.failure


# A parent that starts a detection hung in "the GPU driver" (it touches argv[1] when it gets
# there, past main()'s request to die with its parent), says the child's pid, and waits.
HUNG_DETECTION_PARENT = """
import sys, time
from pytest_rocm.env import background
background._BOOTSTRAP = background._BOOTSTRAP.replace(
    "from pytest_rocm.env.background import main",
    "import pathlib, time, pytest_rocm.env.detect as d; "
    f"d.detect_environment = lambda: (pathlib.Path({sys.argv[1]!r}).touch(), time.sleep(600)); "
    "from pytest_rocm.env.background import main",
)
pending = background.start()
print(pending.process.pid, flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")  # a zombie not yet reaped has ended


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_a_parent_killed_outright_takes_its_detection_with_it(tmp_path: Path) -> None:
    import subprocess

    detecting = tmp_path / "detecting"
    parent = subprocess.Popen(
        [sys.executable, "-c", HUNG_DETECTION_PARENT, str(detecting)], stdout=subprocess.PIPE, text=True
    )
    assert parent.stdout is not None
    pid = int(parent.stdout.readline())
    try:
        deadline = time.monotonic() + 60
        while not detecting.exists():  # in detect_environment: the request was made before it
            assert _alive(pid) and time.monotonic() < deadline, "the child never got to its detection"
            time.sleep(0.05)
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + 30
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        orphaned = _alive(pid)
    finally:
        if parent.poll() is None:
            parent.kill()
    if orphaned:
        os.kill(pid, signal.SIGKILL)
    assert not orphaned


def test_die_with_parent_says_whether_the_parent_is_still_there() -> None:
    import subprocess

    code = "import sys; from pytest_rocm._supervisor import die_with_parent; sys.exit(int(die_with_parent(int(sys.argv[1]))))"
    assert subprocess.run([sys.executable, "-c", code, str(os.getpid())]).returncode == 1  # its parent: True
    assert subprocess.run([sys.executable, "-c", code, "-5"]).returncode == 0  # nobody's pid: gone, False
