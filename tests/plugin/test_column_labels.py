"""One label scheme: a machine's column has one default name, whoever ran the suites (``rocm-compat
run`` or a nox matrix session), and the command ``run`` prints can be pasted into a shell."""

from __future__ import annotations

import importlib.util
import json
import shlex
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from pytest_rocm import cli
from pytest_rocm.cli import run as runner
from pytest_rocm.env.model import Environment
from pytest_rocm.matrix import load_combos
from pytest_rocm.report.files import write_json
from pytest_rocm.report.records import assemble, default_label

ROOT = Path(__file__).parents[2]
ENVS = Path(__file__).parents[1] / "data" / "envs"
CPU_ENV = ENVS / "cpu_only.json"


def _noxfile() -> ModuleType:
    pytest.importorskip("nox")
    spec = importlib.util.spec_from_file_location("noxfile_under_test", ROOT / "noxfile.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class FakeSession:
    """What a nox session's body calls: installs are no-ops, the pytest command is kept."""

    def __init__(self) -> None:
        self.posargs: list[str] = []
        self.commands: list[tuple[str, ...]] = []

    def skip(self, reason: str) -> None:
        raise AssertionError(f"skipped: {reason}")

    def install(self, *args: str) -> None:
        pass

    def run(self, *args: str, **kwargs: Any) -> None:
        self.commands.append(args)
        return None  # as under --install-only: nothing ran, no report expected

    def log(self, text: str) -> None:
        pass


def test_a_nox_session_and_rocm_compat_run_label_one_machine_alike(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, only_this_plugin: None
) -> None:
    noxfile = _noxfile()
    combo = next(c for c in load_combos(ROOT / "matrix" / "combos.toml") if c.name == "cpu-torch2.13")
    session = FakeSession()
    noxfile._suite_session(combo)(session)
    (command,) = session.commands
    assert "--rocm-label" not in command  # the plugin names the column
    # what the plugin names it, on this machine (recorded), with the session's options
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    report = pytester.path / "r.json"
    device = [a for a in command if a.startswith("--rocm-device")]
    pytester.runpytest_inprocess(f"--rocm-env={CPU_ENV}", f"--rocm-report={report}", *device, "-p", "no:cacheprovider")
    nox_label = json.loads(report.read_text())["label"]
    # what `rocm-compat run` names it on the same machine
    run_label = default_label(Environment.load(CPU_ENV), "cpu")
    assert nox_label == run_label == "cpu torch2.6.0"


def test_the_command_run_prints_can_be_pasted_into_a_shell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    suites = tmp_path / "suites" / "operators"
    suites.mkdir(parents=True)
    (suites / "test_a.py").write_text("def test_a():\n    pass\n")
    monkeypatch.setattr(runner, "detect", lambda: Environment.load(ENVS / "mi300x_8.json"))
    ran: list[list[str]] = []

    def fake_pytest(command: list[str]) -> int:
        ran.append(command)
        path = Path(command[command.index("--rocm-report") + 1])
        write_json(path, assemble(command[command.index("--rocm-label") + 1], {}, []))
        return 0

    monkeypatch.setattr(runner, "run_pytest", fake_pytest)
    argv = ["run", "--suites", str(tmp_path / "suites"), "--reports-dir", str(tmp_path / "r"), "-k", "a and not b"]
    assert cli.main(argv) == 0
    printed = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("rocm-compat run: "))
    words = shlex.split(printed.removeprefix("rocm-compat run: "))
    assert words == ran[0][2:]  # the label's spaces and the -k expression survive the shell
    assert words[words.index("--rocm-label") + 1] == "rocm torch2.6.0 rocm6.2.4 gfx942"
    assert sys.executable not in printed  # the pytest part, as before
