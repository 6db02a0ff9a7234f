"""The report's files: the JSON-lines sidecar written as tests finish, and the final JSON.

Durability: each finished test is appended to the *sidecar* and flushed, one ``write`` to the
kernel per record, so a run killed with SIGKILL (or the OOM killer) keeps every finished result:
data the kernel holds survives the process. It is not fsynced per record (that only adds safety
against power loss and made a 5,000-test run take ~3x as long, benchmarks/bench_report_overhead.py);
the sidecar is fsynced once when the run closes it, and the final report is written atomically.

Safety (nothing the user had is destroyed):
- a report path that exists must be a regular file: a FIFO, a device node (``/dev/null`` as
  root), a socket or a directory is refused, never replaced or deleted;
- temporary files get unique names (``tempfile`` in the target's folder, then ``os.replace``),
  so no file of the user's (``FILE.tmp``, ``FILE.probe``) is overwritten or deleted;
- the sidecar is a name the user never typed: a symbolic link there (planted by anyone who can
  write the folder) is refused, never followed (``O_NOFOLLOW``), so its target is never truncated;
- a full disk loses no test: a sidecar write that fails (``ENOSPC``, ``EDQUOT``, ``EIO``) is cut
  back to its last whole line and stops taking records, saying why once (:attr:`Sidecar.problem`);
  the results stay in the writer's memory and the final write is tried again
  (:func:`write_json`); a disk already full at the start is refused like any unwritable path;
- one run at a time per report path: the sidecar is locked (``flock``) for the whole run, and
  a second run on the same path is refused with one line naming the first one's pid, so two
  runs never interleave one sidecar or claim one report.

Why this module is long: the sidecar, the final write and the JSON text they share (one encoder
for both, the same strictness) are one format's writer; split, the two halves would drift apart.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import stat
import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pytest_rocm.env.textfile import kind_of
from pytest_rocm.report.records import (
    SIDECAR_COLLECTED,
    SIDECAR_ENVIRONMENT,
    SIDECAR_FINISHED,
    SIDECAR_LINE_KIND,
    SIDECAR_SCHEMA,
    ReportDocument,
    ResultRecord,
)


class UnsafeTarget(OSError):
    """A path that must not be written (not a regular file, or another run's); one line."""


def sidecar_path(report_path: str | Path) -> Path:
    path = Path(report_path)
    return path.with_name(path.name + ".partial.jsonl")


def not_regular(path: Path) -> str | None:
    """Why ``path`` must not be written over: ``is a FIFO (named pipe)``...; None when it is a
    regular file (through symlinks) or does not exist."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return None if not path.is_symlink() else "is a dangling symlink"
    except OSError as exc:
        return f"cannot be examined ({exc.strerror or exc})"
    return None if stat.S_ISREG(mode) else f"is {kind_of(mode)}, not a regular file"


def link_problem(path: Path) -> str | None:
    """Why the sidecar path must not be opened: a symbolic link is there (None: no link)."""
    if not path.is_symlink():
        return None
    try:
        where = os.readlink(path)
    except OSError:
        where = "?"
    return (
        f"{path} is a symbolic link (to {where}): the report's sidecar is never followed,"
        " remove the link or give another --rocm-report"
    )


def _real_target(path: Path) -> Path:
    """Where a write to ``path`` lands: a symlink to a regular file is followed, so the link stays."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def _new_file_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def write_text_atomic(path: str | Path, text: str, make_folders: bool = False) -> None:
    """Write ``text`` to ``path`` atomically: a reader sees the old file or the new one, never
    half of it. ``path`` must be a regular file or not exist (UnsafeTarget otherwise); the
    temporary file has a unique name in the same folder and is removed if anything fails.
    ``make_folders``: create missing parent folders (else a missing folder is an OSError)."""
    target = Path(path)
    problem = not_regular(target)
    if problem:
        raise UnsafeTarget(f"{target}: {problem}: refusing to replace it")
    target = _real_target(target)
    if make_folders:
        target.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = _new_file_mode()
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


#: stands in for the results while the rest of a report is indented (what json.dumps writes for it)
_RESULTS_HERE = json.dumps("\x00results\x00")


def report_text(document: ReportDocument, lines: Iterable[str] | None = None) -> str:
    """The report's JSON: the envelope indented, each result on a line of its own. One line per
    record is as readable in a diff and several times cheaper to write: an indented dump of every
    record takes Python's pure-Python encoder, one line per record the C one (two 10,000-row
    reports are written at the end of two runs, and read by ``table``).

    ``lines``: the results already encoded (:func:`encode_line`, as the plugin keeps them:
    ``report.encoded``), written in place of ``document["results"]``."""
    if lines is None:
        lines = map(encode_line, document["results"])
    envelope = json.dumps({**document, "results": "\x00results\x00"}, indent=1, allow_nan=False)
    rows = ",\n  ".join(lines)
    return envelope.replace(_RESULTS_HERE, f"[\n  {rows}\n ]" if rows else "[]", 1) + "\n"


def write_json(
    path: Path, document: ReportDocument, attempts: int = 1, pause_s: float = 1.0, lines: Iterable[str] | None = None
) -> None:
    """The final report (:func:`report_text`, ``lines`` as there), atomically (``write_text_atomic``);
    a failed write (a full disk) is tried again ``attempts - 1`` times, ``pause_s`` apart, then its
    OSError raised."""
    text = report_text(document, lines)
    for attempt in range(1, attempts + 1):
        try:
            write_text_atomic(path, text, make_folders=True)
            return
        except UnsafeTarget:
            raise  # what is at the path will not change by waiting
        except OSError:
            if attempt == attempts:
                raise
            time.sleep(pause_s)


def remove_if_regular(path: Path) -> None:
    """Delete an earlier run's report so it cannot pass for this run's; anything but a regular
    file (a FIFO, a device) is left alone."""
    if path.is_file() and not path.is_symlink():
        path.unlink(missing_ok=True)


def unwritable(path: Path) -> str | None:
    """Why the report and its sidecar cannot be written there (checked before any test runs)."""
    link = link_problem(sidecar_path(path))
    if link:
        return link
    for target in (path, sidecar_path(path)):
        problem = not_regular(target)
        if problem:
            return f"{target} {problem}"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".probe")
        os.close(fd)
        os.unlink(probe)  # our own uniquely named file, nobody else's
    except FileExistsError as exc:  # mkdir met a file where a folder must be
        return f"{exc.filename} is a file, not a folder"
    except NotADirectoryError:
        return f"{path.parent} is not a folder"
    except OSError as exc:
        return exc.strerror or str(exc)
    return _no_space(path.parent)


#: below this much free space a report cannot be counted on (a sidecar line is ~0.5 KiB, a report's
#: header with its environment several)
MIN_FREE_BYTES = 64 * 1024


def _no_space(folder: Path) -> str | None:
    """``no space left on device (12 KiB free in FOLDER)`` when the disk is (nearly) full."""
    try:
        fs = os.statvfs(folder)
    except OSError:
        return None  # not every file system answers: the writes themselves will tell
    free = fs.f_bavail * fs.f_frsize
    no_inode = fs.f_files > 0 and fs.f_favail == 0  # f_files 0: a file system without an inode count
    if free >= MIN_FREE_BYTES and not no_inode:
        return None
    what = "no free inode" if no_inode else f"{free // 1024} KiB free"
    return f"no space left on device ({what} in {folder}, at least {MIN_FREE_BYTES // 1024} KiB needed)"


def _holder(path: Path) -> str:
    """The pid in a locked sidecar's header, for the message."""
    try:
        with open(path, encoding="utf-8", errors="replace") as stream:
            pid = json.loads(stream.readline() or "{}").get("pid")
    except (OSError, ValueError, AttributeError):
        pid = None
    return f"pid {pid}" if isinstance(pid, int) else "pid unknown"


def busy(report_path: Path) -> str | None:
    """``another run (pid 123) is writing ...`` when a live run holds this report's sidecar."""
    path = sidecar_path(report_path)
    if not path.is_file():
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return f"another run ({_holder(path)}) is writing {report_path}"
    finally:
        os.close(fd)
    return None


#: one encoder for every sidecar line (json.dumps with an option builds a new one per call)
_SIDECAR_ENCODER = json.JSONEncoder(allow_nan=False)


def _not_serializable(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


#: CPython's C encoder, made once: JSONEncoder.encode builds one per call (a quarter of the cost of
#: a sidecar line). No cycle check (a record is built fresh by records.build_record, never
#: circular); None where the C encoder is missing (PyPy), and _SIDECAR_ENCODER serves instead.
_MAKE_C_ENCODER: Any = getattr(json.encoder, "c_make_encoder", None)
_C_ENCODER: Any = (
    _MAKE_C_ENCODER(
        None, _not_serializable, json.encoder.encode_basestring_ascii, None, ": ", ", ", False, False, False
    )
    if _MAKE_C_ENCODER is not None
    else None
)


def encode_line(obj: Any) -> str:
    """One JSON line of a sidecar or report record: strict JSON (non-finite floats refused, as
    json.dumps(allow_nan=False)), the same text json.dumps writes."""
    if _C_ENCODER is None:
        return _SIDECAR_ENCODER.encode(obj)
    return "".join(_C_ENCODER(obj, 0))


class Sidecar:
    """Append-only JSON lines: a header, then one record per finished test, each handed to the
    kernel (flushed) as it is written, so it survives the process being killed.

    ``Sidecar(path)`` claims the file: it is opened without truncation and locked, so a second
    run on the same report refuses (UnsafeTarget naming the first run's pid) instead of writing
    into it; ``start(header)`` then empties it and writes this run's header."""

    def __init__(self, path: Path, header: dict[str, Any] | None = None) -> None:
        self.path = path
        #: why the sidecar stopped taking records (``r.json.partial.jsonl: No space left on
        #: device``); None while it works
        self.problem: str | None = None
        #: the offset after the last whole line: a failed write is cut back to it
        self._good = 0
        path.parent.mkdir(parents=True, exist_ok=True)
        #: the claimed file's descriptor: records go to it with one os.write each, no buffer between
        self._fd: int | None = self._claim(path)
        if header is not None:
            self.start(header)

    @staticmethod
    def _claim(path: Path) -> int:
        problem = link_problem(path)
        if problem:
            raise UnsafeTarget(problem)
        problem = not_regular(path)
        if problem:
            raise UnsafeTarget(f"{path} {problem}")
        for _ in range(5):
            try:  # a link swapped in after the check: the open refuses it (ELOOP)
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | os.O_NOFOLLOW, 0o666)
            except OSError as exc:
                if exc.errno != errno.ELOOP:
                    raise
                raise UnsafeTarget(
                    f"{path} is a symbolic link: the report's sidecar is never followed,"
                    " remove the link or give another --rocm-report"
                ) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise UnsafeTarget(
                    f"another run ({_holder(path)}) is writing this report: wait for it,"
                    " or give this run another --rocm-report"
                ) from None
            try:
                same = os.fstat(fd).st_ino == os.stat(path).st_ino
            except FileNotFoundError:
                same = False
            if same:  # not a file the previous holder unlinked as we opened it
                os.set_blocking(fd, True)
                return fd
            os.close(fd)
        raise UnsafeTarget(f"{path}: replaced repeatedly while being claimed")

    def start(self, header: dict[str, Any]) -> None:
        assert self._fd is not None
        os.lseek(self._fd, 0, os.SEEK_SET)
        os.ftruncate(self._fd, 0)
        self._good, self.problem = 0, None
        self._write({"schema": SIDECAR_SCHEMA, "pid": os.getpid(), **header})

    def _write(self, obj: Mapping[str, Any]) -> None:
        self._write_line(encode_line(obj))

    def _write_line(self, line: str) -> None:
        assert self._fd is not None
        if self.problem is not None:
            return  # stopped (a full disk): the records are in the writer's memory, the final write has them
        data = (line + "\n").encode("utf-8")
        # In the kernel once os.write returns: survives SIGKILL; fsync (power loss) waits for close.
        # One write per line (a regular file takes it whole; the loop covers a signal mid-write).
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._fd, view) :]
        except OSError as exc:  # ENOSPC, EDQUOT, EIO, EFBIG: never the run's end
            self.problem = f"{self.path}: {exc.strerror or exc}"
            with contextlib.suppress(OSError):  # a torn last line would hide the lines before it
                os.ftruncate(self._fd, self._good)
                os.lseek(self._fd, self._good, os.SEEK_SET)
            return
        self._good += len(data)

    def append(self, record: ResultRecord) -> None:
        self._write(record)

    #: a record already encoded (:func:`encode_line`): the writer encodes each record once
    append_line = _write_line

    def append_environment(self, fields: Mapping[str, Any]) -> None:
        """The header fields known only after the run began (environment, device, label, scale:
        detected in a child process), as a line of their own that the loader merges into the header."""
        self._write({SIDECAR_LINE_KIND: SIDECAR_ENVIRONMENT, **fields})

    def append_collected(self, tests: list[str], marked: Mapping[str, str], device_ids: tuple[str, ...]) -> None:
        """The tests a serial run will run, in order, once before the first: if the process dies,
        the loader names the first of them without a result (``report.partial.from_sidecar``); their
        rows are worked out only then, for that one test, from ``marked`` (node id -> its feature
        marker's name) and the session's ``device_ids``."""
        self._write(
            {
                SIDECAR_LINE_KIND: SIDECAR_COLLECTED,
                "tests": tests,
                "marked": dict(marked),
                "device_ids": list(device_ids),
            }
        )

    def append_finished(self) -> None:
        """The run ended in order and keeps its sidecar (its report could not be written): the
        tests it never ran did not crash."""
        self._write({SIDECAR_LINE_KIND: SIDECAR_FINISHED})

    def close(self, remove: bool = False) -> None:
        """Release the claim; ``remove``: delete the sidecar first (while still holding the lock,
        so the file removed is this run's)."""
        if self._fd is not None:
            if remove:
                self.path.unlink(missing_ok=True)
            else:
                with contextlib.suppress(OSError):
                    os.fsync(self._fd)
            os.close(self._fd)
            self._fd = None
