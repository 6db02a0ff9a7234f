"""Reading a file the user named (``--rocm-env``, ``PYTEST_ROCM_ENV``, ``env --env``, ``doctor
--env``, ``matrix --file``, reports for ``table``/``diff``): regular files only, UTF-8 only.

Why a check before ``open``: opening a FIFO for reading blocks until a writer comes (forever, on a
CI runner), and reading a character device (``/dev/zero``) never ends. So the path is opened with
``O_NONBLOCK`` and ``fstat``-ed before a byte is read: only a regular file is read. Non-UTF-8
bytes are a one-line error naming the byte offset, never a ``UnicodeDecodeError`` traceback.

Stdlib only: ``matrix`` (imported by noxfile.py from nox's own interpreter) reads through this.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import stat
from collections.abc import Iterator
from typing import Any

#: the largest file read (a recorded environment is a few KiB, a report a few MiB)
MAX_BYTES = 256 * 1024 * 1024


class UserFileError(ValueError):
    """A file that cannot be read as text; the message is one line naming the path and the fault."""


def kind_of(mode: int) -> str:
    """What a non-regular file is, for messages (``a FIFO``, ``a character device``...)."""
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def read_text(path: str | os.PathLike[str], what: str = "file", errors: str = "strict") -> str:
    """The UTF-8 text of a regular file; UserFileError (``PATH: is a FIFO ...``) otherwise.
    ``errors="replace"``: bytes that are not UTF-8 become U+FFFD (a log, where a line is enough)."""
    where = os.fspath(path)
    if where == "":
        raise UserFileError(f"'' (an empty path) names no {what}")
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(where, flags)
    except FileNotFoundError:
        raise UserFileError(f"{where}: no such file") from None
    except IsADirectoryError:
        raise UserFileError(f"{where}: is a directory, not a {what}") from None
    except OSError as exc:
        raise UserFileError(f"{where}: cannot read ({exc.strerror or exc})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UserFileError(f"{where}: is {kind_of(info.st_mode)}, not a {what}")
        if info.st_size > MAX_BYTES:
            raise UserFileError(f"{where}: {info.st_size} bytes, larger than any {what} ({MAX_BYTES} at most)")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    except OSError as exc:
        raise UserFileError(f"{where}: cannot read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    try:
        return data.decode("utf-8", errors=errors)
    except UnicodeDecodeError as exc:
        raise UserFileError(f"{where}: not UTF-8 text (byte {data[exc.start]:#04x} at offset {exc.start})") from None


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``{"a": 1, "a": 2}`` is an error: json keeps the last silently, and one of the two is lost."""
    out = dict(pairs)  # in C: a key loop in Python was a third of parsing a 10,000-row report
    if len(out) < len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise UserFileError(f"key {key!r} appears twice in one object")
            seen.add(key)
    return out


def _no_constant(name: str) -> Any:
    raise UserFileError(f'{name} is not JSON (write non-finite numbers as the strings "inf"/"nan")')


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic garbage collection inside (the caller's setting restored after): for work that
    makes many objects and no reference cycles (parsing a report, building its table), where the
    collector walks the growing heap again and again and frees nothing (7 % of `rocm-compat
    table` on two 10,000-row reports). Objects are still freed as their last reference goes."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def parse_json(text: str, where: str, what: str = "JSON document") -> Any:
    """``json.loads`` with one-line errors (``PATH: not valid JSON (line 3, column 7: ...)``), no
    duplicate keys and no ``NaN``/``Infinity`` literals (not JSON; Python's json accepts them)."""
    try:
        with collector_paused():  # parsed JSON holds no reference cycles: nothing for it to free
            return json.loads(text, object_pairs_hook=_no_duplicate_keys, parse_constant=_no_constant)
    except UserFileError as exc:
        raise UserFileError(f"{where}: {exc}") from None
    except RecursionError:
        raise UserFileError(f"{where}: nested too deeply to be a {what}") from None
    except json.JSONDecodeError as exc:
        if not text.strip():
            raise UserFileError(f"{where}: empty file, not a {what}") from None
        body = text.strip()
        cut_off = body[:1] in "{[" and body[-1:] not in "}]"  # a write that stopped part-way
        if exc.pos >= len(text.rstrip()) or (cut_off and exc.msg.startswith("Unterminated string")):
            raise UserFileError(f"{where}: truncated JSON (ends early at line {exc.lineno})") from None
        raise UserFileError(f"{where}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None


def read_json(path: str | os.PathLike[str], what: str = "JSON document") -> Any:
    """``read_text`` then ``parse_json``: a regular UTF-8 file holding one JSON value."""
    return parse_json(read_text(path, what), os.fspath(path), what)
