"""report.files: atomic writes that never replace what is not a regular file, leave no temporary
file behind, keep a symlink and the file's mode; the sidecar's lock (issue 19)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from pytest_rocm.report import files


def test_a_symlink_to_a_report_is_followed_and_kept(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("old", encoding="utf-8")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    files.write_text_atomic(link, "new")
    assert link.is_symlink() and real.read_text(encoding="utf-8") == "new"


def test_the_mode_of_an_existing_file_is_kept(tmp_path: Path) -> None:
    target = tmp_path / "r.json"
    target.write_text("old", encoding="utf-8")
    target.chmod(0o640)
    files.write_text_atomic(target, "new")
    assert stat.S_IMODE(target.stat().st_mode) == 0o640 and target.read_text(encoding="utf-8") == "new"


def test_a_failed_write_leaves_the_old_file_and_no_temporary_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "r.json"
    target.write_text("old", encoding="utf-8")

    def fail(*_: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "replace", fail)
    with pytest.raises(OSError, match="No space left"):
        files.write_text_atomic(target, "new")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"] and target.read_text(encoding="utf-8") == "old"


def test_a_fifo_is_refused_not_replaced(tmp_path: Path) -> None:
    fifo = tmp_path / "r.json"
    os.mkfifo(fifo)
    with pytest.raises(files.UnsafeTarget, match=r"r\.json: is a FIFO \(named pipe\), not a regular file: refusing"):
        files.write_text_atomic(fifo, "new")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert files.unwritable(fifo) == f"{fifo} is a FIFO (named pipe), not a regular file"


def test_the_sidecar_is_claimed_once(tmp_path: Path) -> None:
    path = files.sidecar_path(tmp_path / "r.json")
    first = files.Sidecar(path, {"label": "first"})
    try:
        with pytest.raises(files.UnsafeTarget, match=rf"another run \(pid {os.getpid()}\) is writing this report"):
            files.Sidecar(path)
        assert files.busy(tmp_path / "r.json") == f"another run (pid {os.getpid()}) is writing {tmp_path / 'r.json'}"
    finally:
        first.close(remove=True)
    assert not path.exists() and files.busy(tmp_path / "r.json") is None
    files.Sidecar(path, {"label": "second"}).close()  # released: the next run takes it
