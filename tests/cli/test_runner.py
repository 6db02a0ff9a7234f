"""rocm-compat run: the main job (suites found, isolation on, CPU baseline said loudly, outputs)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

import pytest_rocm
from pytest_rocm import _resources, cli
from pytest_rocm.cli import run as runner
from pytest_rocm.env.model import Environment
from pytest_rocm.report.files import Sidecar, sidecar_path, write_json
from pytest_rocm.report.records import assemble
from pytest_rocm.suite_command import DEFAULT_MAX_WORKER_RESTART, DEFAULT_TIMEOUT_S, suite_command

ENVS = Path(__file__).parents[1] / "data" / "envs"


def parse(*argv: str) -> argparse.Namespace:
    return cli.parse_command("run", argv)[1]


@pytest.fixture
def suites(tmp_path: Path) -> Path:
    folder = tmp_path / "suites" / "operators"
    folder.mkdir(parents=True)
    (folder / "test_tiny.py").write_text(
        "import pytest\n"
        "@pytest.mark.parametrize('dtype', ['float16', 'bfloat16'])\n"
        "def test_add(dtype, record_property):\n"
        "    record_property('rocm_parity', [{'dtype': dtype, 'normwise': 1e-3}])\n"
        "def test_broken():\n"
        "    assert 0.1 + 0.2 == 0.3\n"
    )
    return folder.parent


def test_bundled_suites_in_a_checkout() -> None:
    assert _resources.bundled_suites() == Path(pytest_rocm.__file__).resolve().parent.parent / "suites"


def test_unknown_arguments_go_to_pytest() -> None:
    args = parse("-k", "matmul", "--label", "mine", "-n", "4", "--", "-x", "--timeout=60")
    assert args.label == "mine" and args.passthrough == ["-k", "matmul", "-n", "4", "-x", "--timeout=60"]
    assert parse("--lab", "x").passthrough == ["--lab", "x"]  # never an abbreviation of ours


def test_command_has_isolation_and_the_cpu_baseline(tmp_path: Path) -> None:
    command = suite_command(tmp_path, tmp_path / "r.json", "cpu torch2.13.0", device="cpu", user_args=["-k", "add"])
    assert command[1:3] == ["-m", "pytest"]
    assert {"--max-worker-restart", "--timeout", "--timeout-method", "--rocm-device=cpu"} <= set(command)
    assert command[command.index("-n") + 1] == "auto"
    assert command[command.index("--timeout") + 1] == str(DEFAULT_TIMEOUT_S)
    assert command[-2:] == ["-k", "add"]
    gpu = suite_command(tmp_path, tmp_path / "r.json", "x", user_args=["-n", "8"])
    assert "--rocm-device=cpu" not in gpu and gpu.count("-n") == 1
    mine = suite_command(tmp_path, tmp_path / "r.json", "x", device="cpu", user_args=["--rocm-device=cuda:1"])
    assert [a for a in mine if a.startswith("--rocm-device")] == ["--rocm-device=cuda:1"]


def test_command_without_isolation_runs_the_targets_only(tmp_path: Path) -> None:
    suite = tmp_path / "libraries" / "test_x.py"
    command = suite_command(tmp_path, tmp_path / "r.json", "vet", targets=[suite], isolation=False, user_args=["-q"])
    assert command[3] == str(suite) and command[command.index("--rootdir") + 1] == str(tmp_path)
    assert not {"-n", "--timeout", "--max-worker-restart"} & set(command)
    assert command[-1] == "-q"


def test_command_for_an_interpreter_that_has_the_plugins(tmp_path: Path) -> None:
    # nox: the session's python, where pytest-xdist and pytest-timeout were just installed
    command = suite_command(tmp_path, tmp_path / "r.json", "x", python="python", have_xdist=True, have_timeout=True)
    assert command[0] == "python"
    assert command[command.index("--max-worker-restart") + 1] == str(DEFAULT_MAX_WORKER_RESTART)
    assert command[command.index("--timeout") + 1] == str(DEFAULT_TIMEOUT_S)
    none = suite_command(tmp_path, tmp_path / "r.json", "x", have_xdist=False, have_timeout=False)
    assert not {"-n", "--timeout", "--max-worker-restart"} & set(none)


def test_cpu_baseline_end_to_end(
    suites: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(runner, "detect", lambda: Environment(torch="2.13.0+cpu"))
    reports = tmp_path / "reports"
    cpu_env = f"--rocm-env={ENVS / 'cpu_only.json'}"  # passed through; spares pytest detecting again
    status = cli.main(["run", "--suites", str(suites), "--reports-dir", str(reports), "-n", "0", cpu_env])
    captured = capsys.readouterr()
    assert status == 1, captured.out[-3000:]  # one suite test fails: the run measured it
    assert "NO ACCELERATOR: torch 2.13.0+cpu (cpu build) sees no GPU" in captured.err
    assert "REFERENCE BASELINE" in captured.err
    report = reports / "cpu-torch2.13.0.json"
    document = json.loads(report.read_text())
    assert document["label"] == "cpu torch2.13.0" and document["device"] == "cpu"
    assert {r["feature"]: r["outcome"] for r in document["results"]} == {
        "operators/add[float16]": "passed",
        "operators/add[bfloat16]": "passed",
        "operators/broken": "failed",
    }
    for path in (report, reports / "cpu-torch2.13.0.md", reports / "cpu-torch2.13.0.html"):
        assert path.exists() and f"{path}" in captured.out
    table = (reports / "cpu-torch2.13.0.md").read_text()
    assert "| operators/add | passed · fp16 1.0e-03 | passed · bf16 1.0e-03 |  | works everywhere |" in table
    assert "> **CPU reference baseline**: `cpu torch2.13.0" in table  # the run's device was the CPU


def test_require_gpu_without_one_is_an_error(
    suites: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(runner, "detect", lambda: Environment(torch="2.13.0+cpu"))
    monkeypatch.setattr(runner, "run_pytest", lambda *a, **k: pytest.fail("must not run pytest"))
    assert cli.main(["run", "--suites", str(suites), "--require-gpu"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("rocm-compat run: no accelerator found") and "--require-gpu" in err and "\n" not in err


def test_without_torch_one_line_with_the_install_line_for_this_machine(tmp_path: Path) -> None:
    """Issue 20: without torch every bundled test file failed to import it (15 tracebacks) and an
    empty report was written. Now: one line, the CPU index for a machine with no GPU, exit 2, and
    nothing written. torch is hidden from a real `rocm-compat run` process (sys.modules['torch'] =
    None makes `import torch` raise ModuleNotFoundError, as on a machine without it)."""
    import subprocess
    import sys

    (tmp_path / "root").mkdir()  # an empty sysroot: no /dev/kfd, no PCI GPU, no NVIDIA driver
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "from pytest_rocm import cli\n"
        "sys.exit(cli.main(['run', '--reports-dir', 'reports']))\n"
    )
    env = {**__import__("os").environ, "PYTEST_ROCM_SYSROOT": str(tmp_path / "root")}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        "rocm-compat run: torch is not installed; the build for this machine: "
        "pip install torch --index-url https://download.pytorch.org/whl/cpu"
    ]
    assert not (tmp_path / "reports").exists()


class FakePytest:
    """Stands in for the pytest subprocess: records the command, leaves a report or a sidecar."""

    def __init__(self, killed: bool = False) -> None:
        self.killed = killed
        self.command: list[str] = []

    def __call__(self, command: list[str], **_: Any) -> int:
        self.command = command
        path = Path(command[command.index("--rocm-report") + 1])
        label = command[command.index("--rocm-label") + 1]
        record = {"nodeid": "operators/test_a.py::test_a", "feature": "operators/a", "outcome": "passed"}
        if self.killed:
            sidecar = Sidecar(sidecar_path(path), {"label": label, "environment": {}})
            sidecar.append(record)
            sidecar.close()
            return -9
        write_json(path, assemble(label, {}, [record]))
        return 0


def test_on_a_gpu_machine_it_runs_on_the_gpu(
    suites: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(runner, "detect", lambda: Environment.load(ENVS / "mi300x_8.json"))
    fake = FakePytest()
    monkeypatch.setattr(runner, "run_pytest", fake)
    assert cli.main(["run", "--suites", str(suites), "--reports-dir", str(tmp_path / "r"), "--require-gpu"]) == 0
    _out, err = capsys.readouterr()
    assert "NO ACCELERATOR" not in err and "--rocm-device=cpu" not in fake.command
    assert fake.command[fake.command.index("--rocm-label") + 1] == "rocm torch2.6.0 rocm6.2.4 gfx942"
    assert (tmp_path / "r" / "rocm-torch2.6.0-rocm6.2.4-gfx942.html").exists()


def test_a_killed_run_still_gives_its_partial_report(
    suites: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(runner, "detect", lambda: Environment.load(ENVS / "mi300x_8.json"))
    monkeypatch.setattr(runner, "run_pytest", FakePytest(killed=True))
    assert cli.main(["run", "--suites", str(suites), "--reports-dir", str(tmp_path / "r"), "--label", "gate"]) == 2
    out, err = capsys.readouterr()
    assert "gate.json.partial.jsonl  (interrupted run: partial)" in out and "pytest exited -9" in err
    assert "operators/a" in (tmp_path / "r" / "gate.md").read_text()


def test_a_stale_report_from_an_earlier_run_is_not_taken_for_this_one(
    suites: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(runner, "detect", lambda: Environment.load(ENVS / "mi300x_8.json"))
    stale = tmp_path / "r" / "gate.json"
    write_json(stale, assemble("gate", {}, [{"nodeid": "x.py::test_old", "feature": "old", "outcome": "passed"}]))
    monkeypatch.setattr(runner, "run_pytest", FakePytest(killed=True))
    args = ["run", "--suites", str(suites), "--reports-dir", str(tmp_path / "r"), "--label", "gate", "--replace"]
    assert cli.main(args) == 2
    assert "gate.json.partial.jsonl  (interrupted run: partial)" in capsys.readouterr().out
    assert not stale.exists() and "| old |" not in (tmp_path / "r" / "gate.md").read_text()


def test_missing_suites_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "--suites", str(tmp_path / "nope")]) == 2
    assert capsys.readouterr().err.strip() == f"rocm-compat run: {tmp_path / 'nope'}: no suites folder there"


def test_one_suite_runs_from_its_parent_so_rows_keep_the_suite_name(tmp_path: Path) -> None:
    suites = tmp_path / "suites"
    (suites / "operators").mkdir(parents=True)
    (suites / "operators" / "test_gemm.py").write_text("def test_mm():\n    pass\n")
    assert runner.suite_root(suites) == (suites, [])
    assert runner.suite_root(suites / "operators") == (suites, [suites / "operators"])


@pytest.mark.parametrize("left", ["report", "sidecar", "not a report"])
def test_a_second_run_with_the_same_label_refuses_to_replace_what_the_first_left(
    left: str, suites: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # an upgrade keeps the label: a 32-minute base silently overwritten is a gate without a base
    monkeypatch.setattr(runner, "detect", lambda: Environment.load(ENVS / "mi300x_8.json"))
    first = tmp_path / "r" / "gate.json"
    record = {"nodeid": "x.py::test_old", "feature": "old", "outcome": "passed"}
    if left == "sidecar":
        first.parent.mkdir()
        first = sidecar_path(first)
        sidecar = Sidecar(first, {"label": "gate", "environment": {}})
        sidecar.append(record)
        sidecar.close()
    elif left == "report":
        write_json(first, assemble("gate", {}, [record], created="2026-12-01T10:00:00+00:00"))
    else:
        first.parent.mkdir()
        first.write_text("my notes")
    before = first.read_bytes()
    monkeypatch.setattr(runner, "run_pytest", lambda *a, **k: pytest.fail("must not run pytest"))
    args = ["run", "--suites", str(suites), "--reports-dir", str(tmp_path / "r"), "--label", "gate"]
    assert cli.main(args) == 2
    out, err = capsys.readouterr()
    (line,) = err.splitlines()
    assert line.startswith(f"rocm-compat run: {first}: ") and "--replace replaces it" in line, line
    assert {"report": "(created 2026-12-01T10:00:00+00:00, 1 result)", "sidecar": "interrupted earlier run"}.get(
        left, "(not a readable report)"
    ) in line
    assert first.read_bytes() == before and out == ""
    # --replace is the one way to replace it
    monkeypatch.setattr(runner, "run_pytest", FakePytest())
    assert cli.main([*args, "--replace"]) == 0
    assert "x.py::test_old" not in (tmp_path / "r" / "gate.json").read_text()
