"""What ``vet`` reads: an installed distribution, a wheel, an sdist or a source folder, as a
stream of members (path, kind, bytes) — read as data, never imported, built or extracted.

Archives are read member by member in memory. A member with an absolute path or ``..`` escaping
the tree, a link pointing out of it, a special file, a member over the size limit, an archive
expanding past the total limit, or an archive nested deeper than the limit is not read; each
becomes a finding (rule ids in :data:`rules.SAFETY_RULES`) so the user sees what was skipped.
"""

from __future__ import annotations

import io
import json
import os
import posixpath
import re
import stat
import tarfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import BinaryIO

from pytest_rocm.vet.rules import ARCHIVE, BINARY, Finding, kind_of, safety_finding


#: binaries up to this size are read whole from an archive (ELF parsing seeks back and forth)
_IN_MEMORY_BINARY = 256 * 2**20


class BadTarget(ValueError):
    """The target cannot be vetted (missing, unknown distribution, corrupt archive)."""


@dataclass(frozen=True)
class Limits:
    member_bytes: int = 16 * 2**20  # a text file larger than this is not read
    binary_bytes: int = 1 * 2**30  # a binary larger than this is not parsed
    total_bytes: int = 4 * 2**30  # what an archive may expand to, all members together
    nested_bytes: int = 256 * 2**20  # a nested archive larger than this is not opened
    depth: int = 2  # archives inside archives: the target is depth 0


@dataclass
class Member:
    path: str
    kind: str | None
    size: int
    data: bytes | None = None  # the content, when read
    opener: Callable[[], BinaryIO] | None = None  # a seekable stream (large binaries)


@dataclass
class Target:
    spec: str  # what the user named
    origin: str  # installed | wheel | sdist | folder
    name: str  # distribution (or folder) name
    version: str | None
    top_level: set[str]
    root: str  # where it was read from (for the report)
    members: Iterator[Member] = field(default_factory=lambda: iter(()))
    notes: list[Finding] = field(default_factory=list)  # safety findings, filled while iterating


def _data_needed(kind: str | None) -> bool:
    return kind is not None and kind not in (ARCHIVE,)


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
    if link.startswith("/") or re.match(r"^[A-Za-z]:", link):
        return True
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(member_name), link))
    return joined == ".." or joined.startswith("../")


# archives ----------------------------------------------------------------------------------
class _Budget:
    def __init__(self, limit: int) -> None:
        self.limit, self.used = limit, 0

    def take(self, n: int) -> bool:
        self.used += n
        return self.used <= self.limit


class _TooLarge(Exception):
    pass


class _LimitedReader(io.RawIOBase):
    """Counts what a decompressor yields and stops past the budget (a gzip bomb stays cheap)."""

    def __init__(self, raw: BinaryIO, budget: _Budget) -> None:
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


def iter_archive(data_or_path: bytes | Path, label: str, limits: Limits, notes: list[Finding],
                 depth: int = 0, budget: _Budget | None = None) -> Iterator[Member]:
    """Members of a zip/wheel or tar archive. Raises BadTarget when it is not a readable archive."""
    budget = budget or _Budget(limits.total_bytes)
    source: BinaryIO = io.BytesIO(data_or_path) if isinstance(data_or_path, bytes) else open(data_or_path, "rb")
    try:
        head = source.read(6)
        source.seek(0)
        if head.startswith(b"PK"):
            yield from _iter_zip(source, label, limits, notes, depth, budget)
        else:
            yield from _iter_tar(source, label, head, limits, notes, depth, budget)
    finally:
        source.close()


def _nested(member: Member, data: bytes, limits: Limits, notes: list[Finding], depth: int,
            budget: _Budget) -> Iterator[Member]:
    if depth + 1 > limits.depth or len(data) > limits.nested_bytes:
        why = f"depth {depth + 1} > {limits.depth}" if depth + 1 > limits.depth else f"{len(data)} bytes"
        notes.append(safety_finding("nested-archive-skipped", member.path, why))
        return
    try:
        for inner in iter_archive(data, member.path + "!", limits, notes, depth + 1, budget):
            yield inner
    except BadTarget as exc:
        notes.append(safety_finding("unreadable", member.path, str(exc)))


def _iter_zip(source: BinaryIO, label: str, limits: Limits, notes: list[Finding], depth: int,
              budget: _Budget) -> Iterator[Member]:
    try:
        zf = zipfile.ZipFile(source)
        infos = zf.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise BadTarget(f"corrupt zip archive: {exc}") from None
    with zf:
        for info in infos:
            name, path = info.filename, label + info.filename
            if info.is_dir():
                continue
            why = unsafe_name(name)
            if why:
                notes.append(safety_finding("unsafe-path", path, why))
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
            if kind is None:
                continue
            member = Member(path, kind, info.file_size)
            if kind == BINARY:
                if info.file_size > limits.binary_bytes:
                    notes.append(safety_finding("oversized-member", path, f"{info.file_size} bytes"))
                    continue
                if not budget.take(info.file_size):
                    notes.append(safety_finding("archive-too-large", path, f"over {limits.total_bytes} bytes"))
                    return
                if info.file_size <= _IN_MEMORY_BINARY:  # one decompression, not one per seek
                    with zf.open(info) as fh:
                        member.data = fh.read(_IN_MEMORY_BINARY + 1)
                else:
                    member.opener = lambda info=info: zf.open(info)  # seekable; read lazily
                yield member
                continue
            cap = limits.nested_bytes if kind == ARCHIVE else limits.member_bytes
            if info.file_size > cap:
                rule = "nested-archive-skipped" if kind == ARCHIVE else "oversized-member"
                notes.append(safety_finding(rule, path, f"{info.file_size} bytes"))
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
                yield from _nested(member, data, limits, notes, depth, budget)


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


def _iter_tar(source: BinaryIO, label: str, head: bytes, limits: Limits, notes: list[Finding],
              depth: int, budget: _Budget) -> Iterator[Member]:
    import lzma
    import zlib

    stream = io.BufferedReader(_LimitedReader(_decompressor(source, head), budget), 1 << 20)
    try:
        # stream mode: members one after the other, nothing seeks back, nothing is extracted
        tf = tarfile.open(fileobj=stream, mode="r|")
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
                name, path = info.name, label + info.name
                if info.isdir():
                    continue
                why = unsafe_name(name)
                if why:
                    notes.append(safety_finding("unsafe-path", path, why))
                    continue
                if info.issym() or info.islnk():
                    if info.issym() and link_escapes(name, info.linkname) or (
                        info.islnk() and unsafe_name(info.linkname)
                    ):
                        notes.append(safety_finding("unsafe-link", path, f"-> {info.linkname}"))
                    continue
                if not info.isfile():
                    notes.append(safety_finding("special-file", path, "device, FIFO or other"))
                    continue
                kind = kind_of(name)
                if kind is None:
                    continue
                cap = {BINARY: min(limits.binary_bytes, 256 * 2**20), ARCHIVE: limits.nested_bytes}.get(
                    kind, limits.member_bytes)
                if info.size > cap:
                    rule = "nested-archive-skipped" if kind == ARCHIVE else "oversized-member"
                    notes.append(safety_finding(rule, path, f"{info.size} bytes"))
                    continue
                fh = tf.extractfile(info)
                data = fh.read() if fh else b""
                member = Member(path, kind, info.size, data=data)
                yield member
                if kind == ARCHIVE:
                    yield from _nested(member, data, limits, notes, depth, budget)
    except _TooLarge:
        notes.append(safety_finding("archive-too-large", label or "archive", f"over {limits.total_bytes} bytes"))
    except (tarfile.TarError, OSError, EOFError, zlib.error, lzma.LZMAError) as exc:
        if depth == 0:  # the target itself is corrupt: bad input, not a finding
            raise BadTarget(f"corrupt archive after {seen} member(s): {exc}") from None
        notes.append(safety_finding("unreadable", label or "archive", f"corrupt after {seen} members: {exc}"))


# files on disk -----------------------------------------------------------------------------
_SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", ".tox", ".nox", ".venv", "venv", "node_modules",
              ".mypy_cache", ".pytest_cache", ".eggs"}


def _file_member(path: Path, shown: str, limits: Limits, notes: list[Finding]) -> Member | None:
    kind = kind_of(shown)
    if kind is None:
        return None
    try:
        size = path.stat().st_size
    except OSError as exc:
        notes.append(safety_finding("unreadable", shown, exc.strerror or str(exc)))
        return None
    if kind == BINARY:
        if size > limits.binary_bytes:
            notes.append(safety_finding("oversized-member", shown, f"{size} bytes"))
            return None
        return Member(shown, kind, size, opener=lambda: open(path, "rb"))
    cap = limits.nested_bytes if kind == ARCHIVE else limits.member_bytes
    if size > cap:
        rule = "nested-archive-skipped" if kind == ARCHIVE else "oversized-member"
        notes.append(safety_finding(rule, shown, f"{size} bytes"))
        return None
    try:
        data = path.read_bytes()
    except OSError as exc:
        notes.append(safety_finding("unreadable", shown, exc.strerror or str(exc)))
        return None
    return Member(shown, kind, size, data=data)


def _with_nested(member: Member | None, limits: Limits, notes: list[Finding]) -> Iterator[Member]:
    if member is None:
        return
    yield member
    if member.kind == ARCHIVE and member.data is not None:
        yield from _nested(member, member.data, limits, notes, 0, _Budget(limits.total_bytes))


def iter_folder(root: Path, limits: Limits, notes: list[Finding], prefix: str = "") -> Iterator[Member]:
    root_real = root.resolve()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(dirpath)
        dirnames.sort()
        for d in list(dirnames):
            if d in _SKIP_DIRS:
                dirnames.remove(d)
            elif (here / d).is_symlink():
                _note_link(here / d, root, root_real, prefix, notes)
        for fname in sorted(filenames):
            p = here / fname
            shown = prefix + p.relative_to(root).as_posix()
            if p.is_symlink():
                _note_link(p, root, root_real, prefix, notes)
                continue  # inside links are read where they point; outside ones never
            st = p.lstat()
            if not stat.S_ISREG(st.st_mode):
                notes.append(safety_finding("special-file", shown, oct(st.st_mode)))
                continue
            yield from _with_nested(_file_member(p, shown, limits, notes), limits, notes)


def _note_link(p: Path, root: Path, root_real: Path, prefix: str, notes: list[Finding]) -> None:
    target = os.readlink(p)
    resolved = p.resolve()
    if not resolved.is_relative_to(root_real):
        notes.append(safety_finding("unsafe-link", prefix + p.relative_to(root).as_posix(), f"-> {target}"))


# opening a target --------------------------------------------------------------------------
def _folder_name(root: Path) -> tuple[str, str | None]:
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        try:
            import tomllib

            project = tomllib.loads(pyproject.read_text("utf-8", "replace")).get("project", {})
            if project.get("name"):
                return str(project["name"]), project.get("version")
        except (ValueError, OSError):
            pass
    return root.resolve().name, None


def _package_dirs(root: Path) -> set[str]:
    names: set[str] = set()
    for base in (root, root / "src"):
        if base.is_dir():
            names |= {p.parent.name for p in base.glob("*/__init__.py")}
            names |= {p.stem for p in base.glob("*.py") if p.stem not in ("setup", "conftest", "noxfile")}
    return names


def _pkg_info(data: bytes) -> tuple[str | None, str | None]:
    text = data.decode("utf-8", "replace")
    name = re.search(r"^Name:[ \t]*(\S+)", text, re.M)
    version = re.search(r"^Version:[ \t]*(\S+)", text, re.M)
    return (name.group(1) if name else None, version.group(1) if version else None)


def open_target(spec: str, limits: Limits | None = None) -> Target:
    """Resolve TARGET to something readable. Raises BadTarget with a one-line reason."""
    limits = limits or Limits()
    path = Path(spec)
    if path.is_dir():
        name, version = _folder_name(path)
        target = Target(spec, "folder", name, version, _package_dirs(path), str(path.resolve()))
        target.members = iter_folder(path, limits, target.notes)
        return target
    if path.is_file():
        return _open_archive(path, limits)
    if "/" in spec or os.sep in spec or is_archive_name(spec):
        raise BadTarget(f"{spec}: no such file or folder")
    return _open_installed(spec, limits)


def _open_archive(path: Path, limits: Limits) -> Target:
    lower = path.name.lower()
    if not is_archive_name(lower):
        raise BadTarget(f"{path}: not a wheel, sdist (.tar.gz/.zip) or folder")
    with open(path, "rb") as fh:
        head = fh.read(6)
    if lower.endswith((".whl", ".zip")) and not zipfile.is_zipfile(path):
        raise BadTarget(f"{path}: corrupt archive (not a zip file)")
    if lower.endswith((".tar.gz", ".tgz")) and not head.startswith(b"\x1f\x8b"):
        raise BadTarget(f"{path}: corrupt archive (not gzip data)")
    if lower.endswith(".whl"):
        from packaging.utils import InvalidWheelFilename, parse_wheel_filename

        try:
            name, version, _, _ = parse_wheel_filename(path.name)
        except InvalidWheelFilename as exc:
            raise BadTarget(f"{path}: {exc}") from None
        target = Target(str(path), "wheel", str(name), str(version), set(), str(path.resolve()))
    else:
        stem = re.sub(r"\.(tar\.gz|tgz|tar\.bz2|tar\.xz|tar|zip)$", "", path.name, flags=re.I)
        m = re.match(r"^(.+?)-(\d[^-]*)$", stem)
        target = Target(str(path), "sdist", m.group(1) if m else stem, m.group(2) if m else None,
                        set(), str(path.resolve()))
    # the archive's own file name is a member too (path rules: +cu121 wheels)
    own = Member(path.name, ARCHIVE, path.stat().st_size, data=b"")
    inner = iter_archive(path, "", limits, target.notes)
    try:
        first = next(inner, None)  # fail now (exit 2) on a corrupt archive, not mid-report
    except BadTarget as exc:
        raise BadTarget(f"{path}: {exc}") from None

    def members() -> Iterator[Member]:
        yield own
        if first is not None:
            yield first
            try:
                yield from inner
            except BadTarget as exc:
                raise BadTarget(f"{path}: {exc}") from None

    target.members = _learn_names(target, members())
    return target


def _learn_names(target: Target, members: Iterator[Member]) -> Iterator[Member]:
    """Fill the target's import names and, for sdists, its PKG-INFO name while streaming."""
    for m in members:
        parts = m.path.split("!")[-1].split("/")
        if m.kind == "python" and "!" not in m.path:
            rel = parts[1:] if target.origin == "sdist" else parts
            if rel and rel[0] == "src":
                rel = rel[1:]
            top = rel[0].removesuffix(".py") if len(rel) > 1 or (rel and rel[0].endswith(".py")) else ""
            if top and not top.endswith((".dist-info", ".data")) and top not in ("setup", "conftest", "noxfile"):
                target.top_level.add(top)
        if m.kind == "metadata" and "!" not in m.path and m.data and len(parts) <= 2:
            name, version = _pkg_info(m.data)
            if name:
                target.name, target.version = name, version or target.version
        yield m


def _open_installed(spec: str, limits: Limits) -> Target:
    try:
        dist = metadata.distribution(spec)
    except (metadata.PackageNotFoundError, ValueError):
        raise BadTarget(f"{spec}: no installed distribution, file or folder by that name") from None
    name = dist.metadata["Name"] or spec
    root = Path(str(dist.locate_file(""))).resolve()
    top = set((dist.read_text("top_level.txt") or "").split())
    target = Target(spec, "installed", name, dist.version, top, str(root))
    files = list(dist.files or [])
    if not top:
        target.top_level = {f.parts[0].removesuffix(".py") for f in files
                            if f.suffix == ".py" and not f.parts[0].endswith((".dist-info", ".data"))
                            and not f.parts[0].startswith("..")}

    def members() -> Iterator[Member]:
        for f in sorted(files, key=str):
            shown = str(f).replace(os.sep, "/")
            if "__pycache__" in f.parts:
                continue
            full = Path(str(dist.locate_file(f)))
            try:
                inside = full.resolve().is_relative_to(root)
            except OSError:
                inside = False
            if not inside:
                target.notes.append(safety_finding("outside-install", shown, str(full)))
                continue
            if full.is_file():
                yield from _with_nested(_file_member(full, shown, limits, target.notes), limits, target.notes)
        editable = _editable_folder(dist)
        if editable is not None:
            yield from iter_folder(editable, limits, target.notes, prefix=f"{editable.name}/")

    target.members = members()
    return target


def _editable_folder(dist: metadata.Distribution) -> Path | None:
    """The source folder of an editable install (its code is there, not in site-packages)."""
    raw = dist.read_text("direct_url.json")
    if not raw:
        return None
    try:
        info = json.loads(raw)
    except ValueError:
        return None
    if not info.get("dir_info", {}).get("editable") or not str(info.get("url", "")).startswith("file://"):
        return None
    from urllib.parse import unquote, urlparse

    folder = Path(unquote(urlparse(info["url"]).path))
    return folder if folder.is_dir() else None
