"""``--rocm-report`` on a full disk, on a real full file system: a 1 MiB tmpfs mounted in a mount
namespace of its own (``unshare -rm``), filled by the first test. Every test still runs; the
sidecar's failure is said once; the final write is tried again (and succeeds when a test made
room); a report that cannot be written ends the run with one line and exit status 6; a disk
already full at the start is a usage error (exit 4), like any other unwritable path."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_rocm.plugin.report import EXIT_REPORT_UNWRITTEN
from pytest_rocm.report import files

ROOT = Path(__file__).resolve().parents[2]
CPU_ENV = f"--rocm-env={ROOT / 'tests' / 'data' / 'envs' / 'cpu_only.json'}"

FILL = """
import os
def fill(folder):
    fd = os.open(os.path.join(folder, "filler"), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    for size in (65536, 4096, 256, 1):  # to the last byte
        try:
            while True:
                os.write(fd, b"x" * size)
        except OSError:
            pass
    os.close(fd)
"""
TESTS = (
    FILL
    + """
import pytest
MNT = os.environ["FULL_MNT"]
def test_0_fills_the_disk():
    fill(MNT)
@pytest.mark.parametrize("n", range(20))
def test_1_after_the_disk_is_full(n):
    assert n >= 0
def test_2_last():
    if os.environ.get("FREE_AT_END"):
        os.unlink(os.path.join(MNT, "filler"))
"""
)


def _can_mount() -> bool:
    tool = shutil.which("unshare")
    if tool is None or not sys.platform.startswith("linux"):
        return False
    probe = subprocess.run([tool, "-rm", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"], capture_output=True)
    return probe.returncode == 0


pytestmark = pytest.mark.skipif(not _can_mount(), reason="no mount namespace here (unshare -rm): no tiny tmpfs")


def run_on_tiny_disk(tmp_path: Path, full_at_start: bool = False, free_at_end: bool = False) -> tuple[int, str, Path]:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    (tmp_path / "test_full.py").write_text(TESTS)
    (tmp_path / "fill.py").write_text(FILL + "import sys\nfill(sys.argv[1])\n")
    before = f'"{sys.executable}" "{tmp_path / "fill.py"}" "{mnt}" && ' if full_at_start else ""
    script = f'mount -t tmpfs -o size=1m tmpfs "{mnt}" && {before}exec "$@"'
    pytest_args = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "-q"]
    pytest_args += [str(tmp_path / "test_full.py"), f"--rocm-report={mnt / 'r.json'}", CPU_ENV]
    env = {**os.environ, "FULL_MNT": str(mnt), "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    if free_at_end:
        env["FREE_AT_END"] = "1"
    # the report is read inside the namespace (the tmpfs is gone with it): printed after the run
    show = f'; code=$?; cat "{mnt / "r.json"}" 2>/dev/null; exit $code'
    script = script.replace('exec "$@"', '"$@"' + show)
    done = subprocess.run(
        ["unshare", "-rm", "sh", "-c", script, "sh", *pytest_args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=tmp_path,
    )
    return done.returncode, done.stdout + done.stderr, mnt


def test_a_disk_that_fills_up_loses_no_test_and_the_report_is_written_when_room_returns(tmp_path: Path) -> None:
    code, out, mnt = run_on_tiny_disk(tmp_path, free_at_end=True)
    assert code == 0, out[-3000:]
    assert "INTERNALERROR" not in out
    warnings = [ln for ln in out.splitlines() if "cannot write the sidecar" in ln]
    assert len(warnings) == 1 and f"{mnt}/r.json.partial.jsonl: No space left on device" in warnings[0], out[-3000:]
    report, _ = json.JSONDecoder().raw_decode(out[out.index('{\n "schema"') :])  # stderr may follow
    assert len(report["results"]) == 22 and {r["outcome"] for r in report["results"]} == {"passed"}


def test_a_report_that_cannot_be_written_ends_with_one_line_and_its_own_exit_status(tmp_path: Path) -> None:
    code, out, mnt = run_on_tiny_disk(tmp_path)
    assert code == EXIT_REPORT_UNWRITTEN == 6, out[-3000:]
    assert "INTERNALERROR" not in out and "22 passed" in out  # every test ran to the end
    errors = [ln for ln in out.splitlines() if ln.startswith("rocm report: ERROR")]
    assert len(errors) == 1, out[-3000:]
    assert f"cannot write {mnt}/r.json (No space left on device): 22 results not saved" in errors[0]
    assert len([ln for ln in out.splitlines() if "cannot write the sidecar" in ln]) == 1


def test_a_disk_full_at_the_start_is_a_usage_error(tmp_path: Path) -> None:
    code, out, mnt = run_on_tiny_disk(tmp_path, full_at_start=True)
    assert code == pytest.ExitCode.USAGE_ERROR, out[-3000:]
    assert "INTERNALERROR" not in out
    errors = [ln for ln in out.splitlines() if ln.startswith("ERROR")]
    assert len(errors) == 1 and "no space left on device" in errors[0] and str(mnt) in errors[0], out[-3000:]


def test_a_failed_sidecar_write_leaves_whole_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ENOSPC mid-line (the seam: os.write takes part of a line, then fails): the sidecar is cut
    back to its last whole line, stops, and says why."""
    from pytest_rocm.report.load import load_report

    sidecar = files.Sidecar(tmp_path / "r.json.partial.jsonl", {"label": "x", "created": "2025-01-01T00:00:00+00:00"})
    record = {"nodeid": "t.py::a", "feature": "a", "outcome": "passed", "duration": 0.1}
    sidecar.append(record)  # type: ignore[arg-type]
    real_write = os.write
    calls = {"n": 0}

    def full(fd: int, data: bytes | memoryview) -> int:
        calls["n"] += 1
        if calls["n"] == 1:
            return real_write(fd, bytes(data)[:7])  # a part of the line went in
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", full)
    sidecar.append({**record, "nodeid": "t.py::b"})  # type: ignore[arg-type]
    sidecar.append({**record, "nodeid": "t.py::c"})  # type: ignore[arg-type]
    monkeypatch.setattr(os, "write", real_write)
    assert sidecar.problem == f"{tmp_path / 'r.json.partial.jsonl'}: No space left on device"
    sidecar.close()
    assert [r["nodeid"] for r in load_report(tmp_path / "r.json.partial.jsonl")["results"]] == ["t.py::a"]


def test_the_final_write_is_tried_again(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """The seam: the first final write meets ENOSPC (room came back a moment later)."""
    real = files.write_text_atomic
    tries: list[str] = []

    def once_full(path: object, text: str, make_folders: bool = False) -> None:
        tries.append(str(path))
        if len(tries) == 1:
            raise OSError(28, "No space left on device")
        real(path, text, make_folders)  # type: ignore[arg-type]

    monkeypatch.setattr(files, "write_text_atomic", once_full)
    monkeypatch.setattr(files.time, "sleep", lambda s: None)
    pytester.makepyfile(test_x="def test_a(): pass\ndef test_b(): pass\n")
    result = pytester.runpytest_inprocess("--rocm-report=r.json", "-p", "no:cacheprovider", CPU_ENV)
    assert result.ret == 0 and len(tries) == 2
    assert len(json.loads((pytester.path / "r.json").read_text())["results"]) == 2
