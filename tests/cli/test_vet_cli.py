"""``rocm-compat vet`` at its command line: numbers that are not numbers, an empty TARGET, and
``--report`` that never replaces what is at the path (a FIFO, a device-like node) nor deletes
files next to it (``FILE.tmp``, ``FILE.probe``)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from fake_packages import write_tree

from pytest_rocm.cli import main


@pytest.fixture
def pkg(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "pkg", {"okvet/__init__.py": "VALUE = 1\n"})


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--timeout", "-5"),
        ("--timeout", "0"),
        ("--timeout", "nan"),
        ("--timeout", "inf"),
        ("--timeout", "soon"),
        ("--suite-timeout", "-1"),
        ("--show", "-3"),
        ("--show", "\u0663"),  # ARABIC-INDIC DIGIT THREE: str.isdigit() says yes
        ("--show", "2.5"),
    ],
)
def test_numbers_that_are_not_numbers_are_refused(
    pkg: Path, capsys: pytest.CaptureFixture[str], option: str, value: str
) -> None:
    assert main(["vet", str(pkg), f"{option}={value}"]) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if repr(value) in line]
    assert len(errors) == 1 and option in errors[0], err
    assert "Traceback" not in err


def test_good_numbers_are_taken(pkg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["vet", str(pkg), "--timeout", "1.5", "--suite-timeout", "30", "--show", "0"]) == 0


def test_an_empty_target_names_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["vet", ""]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("rocm-compat vet: ''") and "\n" not in err


def _run_with_report(pkg: Path, report: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(
        "pytest_rocm.vet.live.live_check",
        lambda *a, **k: {"check": "import", "module": None, "suite": None, "records": []},
    )
    return main(["vet", str(pkg), "--run", "--report", str(report)])


def test_report_onto_a_fifo_is_refused_and_the_fifo_stays(
    pkg: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "report.json"
    os.mkfifo(fifo)
    assert _run_with_report(pkg, fifo, monkeypatch) == 2
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    err = capsys.readouterr().err.strip()
    assert "report.json" in err and "\n" not in err


@pytest.mark.skipif(os.geteuid() != 0, reason="mknod of a character device needs root")
def test_report_onto_a_device_node_is_refused_and_the_node_stays(
    pkg: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    node = tmp_path / "null"  # a /dev/null look-alike in a temporary folder, never a real /dev path
    os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    assert _run_with_report(pkg, node, monkeypatch) == 2
    assert stat.S_ISCHR(os.lstat(node).st_mode)
    assert "\n" not in capsys.readouterr().err.strip()


def test_report_keeps_helper_files_next_to_it_and_writes_a_regular_file(
    pkg: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = tmp_path / "report.json"
    helpers = {report.with_name("report.json.tmp"): "mine", report.with_name("report.json.probe"): "also mine"}
    for path, text in helpers.items():
        path.write_text(text)
    assert _run_with_report(pkg, report, monkeypatch) == 0
    assert json.loads(report.read_text())["schema"] == "pytest-rocm/report/1"
    assert {p: p.read_text() for p in helpers} == helpers
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pkg", "report.json", "report.json.probe", "report.json.tmp"]
