"""Archive members (zip/wheel, tar/sdist, plain or gzip/bz2/xz) read one by one.

Nothing is extracted. Text members are read into memory (they are capped at 16 MiB); a binary
is decompressed once into a spooled temporary file that ELF parsing then seeks in (:mod:`spool`). A member with an absolute path or ``..`` escaping the tree, a link pointing
out of it, a special file, a member over the size limit, an archive expanding past the total limit,
or an archive nested deeper than the limit is not read; each becomes a finding (rule ids in
:data:`rules.SAFETY_RULES`) so the user sees what was skipped.
"""

from __future__ import annotations

import io
import posixpath
import re
import stat
import struct
import tarfile
import zipfile
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import BinaryIO

from pytest_rocm.vet.kinds import FileKind
from pytest_rocm.vet.rules import ARCHIVE, BINARY, Finding, kind_of, safety_finding
from pytest_rocm.vet.spool import once as _once
from pytest_rocm.vet.spool import spool
from pytest_rocm.vet.target import BadTarget, Limits, Member


def unsafe_name(name: str) -> str | None:
    """Why an archive member name is unsafe to honour, or None."""
    norm = name.replace("\\", "/")
    if norm.startswith("/") or re.match(r"^[A-Za-z]:", norm):
        return "absolute path"
    depth = 0
    for part in norm.split("/"):
        if part == "..":
            depth -= 1
            if depth < 0:
                return "'..' escapes the tree"
        elif part not in ("", "."):
            depth += 1
    return None


def link_escapes(member_name: str, link: str) -> bool:
    """Whether a link stored at member_name, pointing to link, leaves the archive's tree."""
    if link.startswith("/") or re.match(r"^[A-Za-z]:", link):
        return True
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(member_name), link))
    return joined == ".." or joined.startswith("../")


class Budget:
    """The bytes an archive may still expand to, shared by the archives nested in it."""

    def __init__(self, limit: int) -> None:
        self.limit, self.used = limit, 0

    def take(self, n: int) -> bool:
        self.used += n
        return self.used <= self.limit


class _TooLarge(Exception):
    pass


class _LimitedReader(io.RawIOBase):
    """Counts what a decompressor yields and stops past the budget (a gzip bomb stays cheap)."""

    def __init__(self, raw: BinaryIO, budget: Budget) -> None:
        self.raw, self.budget = raw, budget

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.raw.read(len(b))
        if not self.budget.take(len(data)):
            raise _TooLarge
        b[: len(data)] = data
        return len(data)


def is_archive_name(name: str) -> bool:
    return kind_of(name) == ARCHIVE


def iter_archive(
    data_or_path: bytes | Path,
    label: str,
    limits: Limits,
    notes: list[Finding],
    depth: int = 0,
    budget: Budget | None = None,
) -> Iterator[Member]:
    """Members of a zip/wheel or tar archive. Raises BadTarget when it is not a readable archive."""
    budget = budget or Budget(limits.total_bytes)
    source: BinaryIO = (
        io.BytesIO(data_or_path) if isinstance(data_or_path, bytes) else open(data_or_path, "rb")  # noqa: SIM115 (closed below)
    )
    try:
        head = source.read(6)
        source.seek(0)
        if head.startswith(b"PK"):
            yield from _iter_zip(source, label, limits, notes, depth, budget)
        else:
            yield from _iter_tar(source, label, head, limits, notes, depth, budget)
    finally:
        source.close()


def iter_nested(
    member: Member, data: bytes, limits: Limits, notes: list[Finding], depth: int, budget: Budget
) -> Iterator[Member]:
    """The members of an archive found inside another, within the depth, size and total limits."""
    if depth + 1 > limits.depth or len(data) > limits.nested_bytes:
        why = f"depth {depth + 1} > {limits.depth}" if depth + 1 > limits.depth else f"{len(data)} bytes"
        notes.append(safety_finding("nested-archive-skipped", member.path, why))
        return
    try:
        yield from iter_archive(data, member.path + "!", limits, notes, depth + 1, budget)
    except BadTarget as exc:
        notes.append(safety_finding("unreadable", member.path, str(exc)))


def _refused(name: str, path: str, notes: list[Finding]) -> bool:
    """Whether a member's name is unsafe (absolute, ``..``, ...): noted, never read."""
    why = unsafe_name(name)
    if why:
        notes.append(safety_finding("unsafe-path", path, why))
    return bool(why)


def _over_cap(kind: FileKind, size: int, cap: int, path: str, notes: list[Finding]) -> bool:
    """Whether a member's declared size is over what vet reads of its kind: noted, never read."""
    if size <= cap:
        return False
    rule = "nested-archive-skipped" if kind == ARCHIVE else "oversized-member"
    notes.append(safety_finding(rule, path, f"{size} bytes"))
    return True


def _iter_zip(
    source: BinaryIO, label: str, limits: Limits, notes: list[Finding], depth: int, budget: Budget
) -> Iterator[Member]:
    entries = _zip_entries(source)
    if entries > limits.zip_members:
        too_many = f"{entries} members, more than the {limits.zip_members} vet reads of a zip (Limits.zip_members)"
        if depth == 0:
            raise BadTarget(too_many)
        notes.append(safety_finding("too-many-members", label.rstrip("!") or "archive", too_many))
        return
    try:
        zf = zipfile.ZipFile(source)
        infos = zf.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise BadTarget(f"corrupt zip archive: {exc}") from None
    with zf:
        for info in infos:
            name, path = info.filename, label + info.filename
            if info.is_dir() or _refused(name, path, notes):
                continue
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                target = zf.read(info)[:4096].decode("utf-8", "replace")
                if link_escapes(name, target):
                    notes.append(safety_finding("unsafe-link", path, f"-> {target}"))
                continue
            if stat.S_IFMT(mode) and not stat.S_ISREG(mode):  # no type bits: a plain file
                notes.append(safety_finding("special-file", path, oct(mode)))
                continue
            kind = kind_of(name)
            if kind is None:  # no rule reads it: named, never read (the report lists it)
                yield Member(path, None, info.file_size)
                continue
            member = Member(path, kind, info.file_size)
            if kind == BINARY:
                if info.file_size > limits.binary_bytes:
                    notes.append(safety_finding("oversized-member", path, f"{info.file_size} bytes"))
                    continue
                if not budget.take(info.file_size):
                    notes.append(safety_finding("archive-too-large", path, f"over {limits.total_bytes} bytes"))
                    return
                try:
                    with zf.open(info) as fh:  # one decompression, not one per seek
                        spooled = spool(fh, min(limits.binary_bytes, info.file_size))
                except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as exc:
                    notes.append(safety_finding("unreadable", path, f"binary: {exc}"))
                    continue
                if spooled is None:
                    notes.append(safety_finding("oversized-member", path, f"more than its {info.file_size} bytes"))
                    continue
                member.opener = partial(_once, spooled)
                yield member
                spooled.close()
                continue
            cap = limits.nested_bytes if kind == ARCHIVE else limits.member_bytes
            if _over_cap(kind, info.file_size, cap, path, notes):
                continue
            try:
                with zf.open(info) as fh:
                    data = fh.read(cap + 1)  # the header's size may lie
            except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as exc:
                notes.append(safety_finding("unreadable", path, str(exc)))
                continue
            if len(data) > cap:
                notes.append(safety_finding("oversized-member", path, f"over {cap} bytes"))
                continue
            if not budget.take(len(data)):
                notes.append(safety_finding("archive-too-large", path, f"over {limits.total_bytes} bytes"))
                return
            member.data = data
            yield member
            if kind == ARCHIVE:
                yield from iter_nested(member, data, limits, notes, depth, budget)


def _zip_entries(source: BinaryIO) -> int:
    """The member count a zip's end-of-central-directory record claims (0 when not found):
    read before zipfile parses the whole directory into memory."""
    source.seek(0, io.SEEK_END)
    size = source.tell()
    tail_at = max(0, size - (65535 + 22 + 20))
    source.seek(tail_at)
    tail = source.read()
    source.seek(0)
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or at + 22 > len(tail):
        return 0
    count = int(struct.unpack_from("<H", tail, at + 10)[0])
    locator = tail.rfind(b"PK\x06\x07", 0, at)  # zip64: the real count is in the zip64 record
    if count == 0xFFFF and locator >= 0:
        (offset,) = struct.unpack_from("<Q", tail, locator + 8)
        source.seek(offset)
        record = source.read(56)
        source.seek(0)
        if record.startswith(b"PK\x06\x06") and len(record) >= 40:
            count = int(struct.unpack_from("<Q", record, 32)[0])
    return count


def _decompressor(source: BinaryIO, head: bytes) -> BinaryIO:
    import bz2
    import gzip
    import lzma

    if head.startswith(b"\x1f\x8b"):
        return gzip.GzipFile(fileobj=source)  # type: ignore[return-value]
    if head.startswith(b"BZh"):
        return bz2.BZ2File(source)  # type: ignore[return-value]
    if head.startswith(b"\xfd7zXZ"):
        return lzma.LZMAFile(source)  # type: ignore[return-value]
    return source


def _iter_tar(
    source: BinaryIO, label: str, head: bytes, limits: Limits, notes: list[Finding], depth: int, budget: Budget
) -> Iterator[Member]:
    import lzma
    import zlib

    stream = io.BufferedReader(_LimitedReader(_decompressor(source, head), budget), 1 << 20)
    try:
        # stream mode: members one after the other, nothing seeks back, nothing is extracted
        tf = tarfile.open(fileobj=stream, mode="r|")  # noqa: SIM115 (entered below, once it opened)
    except (tarfile.TarError, OSError, EOFError, zlib.error, lzma.LZMAError) as exc:
        raise BadTarget(f"not a readable archive: {exc}") from None
    except _TooLarge:
        notes.append(safety_finding("archive-too-large", label, f"over {limits.total_bytes} bytes"))
        return
    seen = 0
    try:
        with tf:
            for info in tf:
                seen += 1
                tf.members = []  # type: ignore[attr-defined]  # stream mode keeps every header: ~0.5 KB each
                if seen > limits.members:
                    cut = f"more than {limits.members} members (Limits.members): the rest not read"
                    notes.append(safety_finding("too-many-members", label.rstrip("!") or "archive", cut))
                    return
                name, path = info.name, label + info.name
                if info.isdir() or _refused(name, path, notes):
                    continue
                if info.issym() or info.islnk():
                    if (info.issym() and link_escapes(name, info.linkname)) or (
                        info.islnk() and unsafe_name(info.linkname)
                    ):
                        notes.append(safety_finding("unsafe-link", path, f"-> {info.linkname}"))
                    continue
                if not info.isfile():
                    notes.append(safety_finding("special-file", path, "device, FIFO or other"))
                    continue
                kind = kind_of(name)
                if kind is None:  # no rule reads it: named, never read (the report lists it)
                    yield Member(path, None, info.size)
                    continue
                cap = {BINARY: limits.binary_bytes, ARCHIVE: limits.nested_bytes}.get(kind, limits.member_bytes)
                if _over_cap(kind, info.size, cap, path, notes):
                    continue
                fh = tf.extractfile(info)
                if kind == BINARY:  # spooled like a zip's: never whole in memory
                    spooled = spool(fh, info.size) if fh else None
                    if spooled is not None:
                        yield Member(path, kind, info.size, opener=partial(_once, spooled))
                        spooled.close()
                    continue
                data = fh.read() if fh else b""
                member = Member(path, kind, info.size, data=data)
                yield member
                if kind == ARCHIVE:
                    yield from iter_nested(member, data, limits, notes, depth, budget)
    except _TooLarge:
        notes.append(safety_finding("archive-too-large", label or "archive", f"over {limits.total_bytes} bytes"))
    except (tarfile.TarError, OSError, EOFError, zlib.error, lzma.LZMAError) as exc:
        if depth == 0:  # the target itself is corrupt: bad input, not a finding
            raise BadTarget(f"corrupt archive after {seen} member(s): {exc}") from None
        notes.append(safety_finding("unreadable", label or "archive", f"corrupt after {seen} members: {exc}"))
