"""rocm-compat capture -o FILE -- CMD: the command runs as given, in a child process, with capture on."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

SCRIPT = """
import sys, torch
x = torch.randn(16, 8)
for _ in range(4):
    (x @ x.t()).relu()
print("ran", sys.argv[1:])
raise SystemExit(int(sys.argv[1]))
"""


def capture(tmp_path: Path, *command: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_rocm.cli", "capture", "-o", str(tmp_path / "ops.json"), "--", *command],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )


@pytest.mark.parametrize("status", [0, 3])
def test_the_file_is_written_whatever_the_exit_status_and_the_status_passed_on(tmp_path: Path, status: int) -> None:
    (tmp_path / "train.py").write_text(SCRIPT)
    done = capture(tmp_path, sys.executable, "train.py", str(status), "--flag")
    assert done.returncode == status, done.stderr
    assert f"ran ['{status}', '--flag']" in done.stdout  # the script got its own arguments
    document = json.loads((tmp_path / "ops.json").read_text())
    assert document["exit_status"] == status
    assert document["command"][-3:] == ["train.py", str(status), "--flag"]
    (mm,) = [s for s in document["signatures"] if s["op"] == "aten.mm.default"]
    assert mm["calls"] == 4
    assert f"{tmp_path / 'ops.json'}: " in done.stdout or "ops.json: " in done.stdout
    if status:
        assert f"the command exited {status}; " in done.stderr and "holds the ops it ran until then" in done.stderr


def test_a_python_module_and_a_sitecustomize_of_the_users_own_still_run(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import os\nos.environ['USER_SITE_RAN'] = '1'\n")
    (tmp_path / "job.py").write_text(
        "import os, torch\ntorch.ones(3).sum()\nprint('site', os.environ.get('USER_SITE_RAN'))\n"
    )
    env = {**__import__("os").environ, "PYTHONPATH": str(site)}
    done = capture(tmp_path, sys.executable, "-m", "job", env=env)
    assert done.returncode == 0, done.stderr
    assert "site 1" in done.stdout
    ops = {s["op"] for s in json.loads((tmp_path / "ops.json").read_text())["signatures"]}
    assert "aten.sum.default" in ops


def test_processes_the_program_starts_do_not_overwrite_its_capture(tmp_path: Path) -> None:
    (tmp_path / "parent.py").write_text(
        "import subprocess, sys, torch\ntorch.ones(5).sum()\n"
        "subprocess.run([sys.executable, '-c', 'import torch; torch.ones(7).exp()'], check=True)\n"
    )
    done = capture(tmp_path, sys.executable, "parent.py")
    assert done.returncode == 0, done.stderr
    ops = {s["op"] for s in json.loads((tmp_path / "ops.json").read_text())["signatures"]}
    assert "aten.sum.default" in ops and "aten.exp.default" not in ops


def test_a_killed_command_and_a_missing_one_are_one_line(tmp_path: Path) -> None:
    (tmp_path / "die.py").write_text(
        "import os, signal, torch\ntorch.ones(2).sum()\nos.kill(os.getpid(), signal.SIGKILL)\n"
    )
    done = capture(tmp_path, sys.executable, "die.py")
    assert done.returncode == 128 + 9
    assert done.stderr.strip().endswith("no capture was written (killed by a signal)")
    assert not (tmp_path / "ops.json").exists()
    missing = capture(tmp_path, "no-such-program-here")
    assert missing.returncode == 127 and "no-such-program-here: cannot run" in missing.stderr
    assert "Traceback" not in missing.stderr
    nothing = capture(tmp_path)
    assert nothing.returncode == 2 and "no command given" in nothing.stderr


def test_an_output_that_cannot_be_written_is_one_line_before_the_program_runs(tmp_path: Path) -> None:
    (tmp_path / "job.py").write_text("import pathlib\npathlib.Path('ran.txt').write_text('ran')\n")
    (tmp_path / "folder").mkdir()
    (tmp_path / "a-file").write_text("")
    for output, problem in (
        ("folder", "is a folder; name the file to write (-o folder/ops.json)"),
        ("a-file/ops.json", "is not a folder"),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "pytest_rocm.cli", "capture", "-o", output, "--", sys.executable, "job.py"],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=300,
        )
        assert done.returncode == 2 and done.stderr.startswith(f"rocm-compat capture: -o {output}: ")
        assert problem in done.stderr and len(done.stderr.strip().splitlines()) == 1
        assert not (tmp_path / "ran.txt").exists()  # the program never ran


def test_a_forked_child_does_not_replace_the_parent_s_capture(tmp_path: Path) -> None:
    (tmp_path / "forks.py").write_text(
        "import os, sys, time, torch\n"
        "torch.ones(5).sum()\n"
        "if os.fork() == 0:\n"
        "    torch.ones(7).exp()\n"
        "    time.sleep(1.0)\n"  # exits after the parent: its exit handlers run last
        "    sys.exit(0)\n"
        "torch.ones(3).neg()\n"
    )
    done = capture(tmp_path, sys.executable, "forks.py")
    assert done.returncode == 0, done.stderr
    import time

    time.sleep(2.5)  # the child has exited by now
    ops = {s["op"] for s in json.loads((tmp_path / "ops.json").read_text())["signatures"]}
    assert {"aten.sum.default", "aten.neg.default"} <= ops and "aten.exp.default" not in ops
