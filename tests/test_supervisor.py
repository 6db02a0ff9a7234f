"""The supervisor is a module run in front of a command: it contains the command (a time limit, a
status that says a signal), and nothing from the command's environment or working folder runs in
it. (The live check's own tests, tests/vet/test_vet_live_contained.py, hold the reaping.)"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_rocm import _supervisor
from pytest_rocm._supervisor import contained_ending, supervised

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the supervisor runs on Linux")

MEMORY = 4 * 1024**3


def _run(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[int | None, str]:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    return contained_ending(done.returncode, done.stderr)


def test_the_supervisor_runs_none_of_the_commands_python_environment(tmp_path: Path) -> None:
    """A ``sitecustomize`` on the command's PYTHONPATH (a vetted folder's) runs in the command,
    where the sandbox holds it, never in the supervisor; a ``pytest_rocm`` folder where it starts
    does not replace the supervisor either."""
    site = tmp_path / "site"
    site.mkdir()
    log = tmp_path / "ran.log"
    (site / "sitecustomize.py").write_text(f"import os\nopen({str(log)!r}, 'a').write(str(os.getpid()) + '\\n')\n")
    fake = tmp_path / "pytest_rocm"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise SystemExit('the folder it started in was imported')\n")
    env = {**os.environ, "PYTHONPATH": str(site)}
    command = [sys.executable, "-c", "import sys; sys.exit(3)"]
    status, stderr = _run(supervised(command, timeout=30, memory=MEMORY), tmp_path, env)
    assert (status, stderr) == (3, "")
    assert len(log.read_text().splitlines()) == 1  # the command's own start, not the supervisor's


def test_a_time_limit_and_a_signal_are_said(tmp_path: Path) -> None:
    sleeper = [sys.executable, "-c", "import time; time.sleep(30)"]
    assert _run(supervised(sleeper, timeout=0.5, memory=MEMORY), tmp_path) == (None, "")
    # a command may exit 124 itself: that is its status, not a timeout
    own = [sys.executable, "-c", "import sys; sys.exit(124)"]
    assert _run(supervised(own, timeout=30, memory=MEMORY), tmp_path) == (124, "")
    killed = [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"]
    assert _run(supervised(killed, timeout=30, memory=MEMORY), tmp_path) == (-int(signal.SIGSEGV), "")


def test_the_memory_limit_is_the_commands_alone(tmp_path: Path) -> None:
    grow = [sys.executable, "-c", "b = bytearray(512 * 1024 * 1024)"]
    status, stderr = _run(supervised(grow, timeout=60, memory=256 * 1024**2), tmp_path)
    assert status == 1 and "MemoryError" in stderr
    assert _run(supervised(grow, timeout=60, memory=MEMORY), tmp_path) == (0, "")


def test_dying_with_a_parent_becomes_the_command(tmp_path: Path) -> None:
    """With ``--parent`` nothing stays in between: the command's pid is the one started."""
    argv = supervised([sys.executable, "-c", "import os; print(os.getpid())"], parent=os.getpid())
    proc = subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.PIPE, text=True)
    out, _ = proc.communicate(timeout=60)
    assert (proc.returncode, out.strip()) == (0, str(proc.pid))


def test_one_job_per_supervisor_and_a_usage_line() -> None:
    with pytest.raises(ValueError, match="one job"):
        supervised(["true"], parent=1, timeout=1, memory=1)
    with pytest.raises(ValueError, match="one job"):
        supervised(["true"], timeout=1)
    with pytest.raises(ValueError, match="one job"):
        supervised(["true"])
    assert _supervisor.main(["--time", "1", "--", "true"]) == 2
    assert _supervisor.main(["--parent", "1"]) == 2  # no command
    assert _supervisor.main(["--", "true"]) == 2  # no job
    assert _supervisor.main(["--parent", "--", "true"]) == 2  # a flag without its value
    assert _supervisor.main(["--timeout", "1", "--", "true"]) == 2  # a time limit without a memory limit
    assert _supervisor.main(["--parent", "1", "--timeout", "1", "--memory", "1", "--", "true"]) == 2  # two jobs
