"""Members read from files on disk: a source folder, and an installed distribution (its RECORD
files, plus the source folder of an editable install). Links leaving the tree and files listed
outside the install are findings, never read.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

from pytest_rocm.vet.archives import Budget, iter_nested
from pytest_rocm.vet.rules import ARCHIVE, BINARY, Finding, kind_of, safety_finding
from pytest_rocm.vet.target import BadTarget, Limits, Member, Target

_SKIP_DIRS = {
    ".git",
    ".hg",
    ".svn",
    "__pycache__",
    ".tox",
    ".nox",
    ".venv",
    "venv",
    "node_modules",
    ".mypy_cache",
    ".pytest_cache",
    ".eggs",
}


def _file_member(path: Path, shown: str, limits: Limits, notes: list[Finding]) -> Member | None:
    kind = kind_of(shown)
    if kind is None:  # no rule reads it: named, never read (the report lists it)
        return Member(shown, None, 0)
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
        yield from iter_nested(member, member.data, limits, notes, 0, Budget(limits.total_bytes))


def iter_folder(root: Path, limits: Limits, notes: list[Finding], prefix: str = "") -> Iterator[Member]:
    root_real = root.resolve()
    seen = 0

    def walk_error(exc: OSError) -> None:  # an unreadable folder is a finding, not a crash
        shown = prefix + (Path(exc.filename).relative_to(root).as_posix() if exc.filename else "")
        notes.append(safety_finding("unreadable", shown or str(root), exc.strerror or str(exc)))

    for dirpath, dirnames, filenames in os.walk(root, followlinks=False, onerror=walk_error):
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
            seen += 1
            if seen > limits.members:
                why = f"more than {limits.members} files (Limits.members): the rest not read"
                notes.append(safety_finding("too-many-members", prefix + ".", why))
                return
            if p.is_symlink():
                _note_link(p, root, root_real, prefix, notes)
                continue  # inside links are read where they point; outside ones never
            try:
                st = p.lstat()
            except OSError as exc:
                notes.append(safety_finding("unreadable", shown, exc.strerror or str(exc)))
                continue
            if not stat.S_ISREG(st.st_mode):
                notes.append(safety_finding("special-file", shown, oct(st.st_mode)))
                continue
            yield from _with_nested(_file_member(p, shown, limits, notes), limits, notes)


def _note_link(p: Path, root: Path, root_real: Path, prefix: str, notes: list[Finding]) -> None:
    shown = prefix + p.relative_to(root).as_posix()
    try:
        target = os.readlink(p)
        resolved = p.resolve()
    except (OSError, RuntimeError) as exc:  # Python 3.11-3.12 raise RuntimeError on a link loop
        why = "a symlink loop" if isinstance(exc, RuntimeError) or "loop" in str(exc).lower() else str(exc)
        notes.append(safety_finding("unsafe-link", shown, why))
        return
    if not resolved.is_relative_to(root_real):
        notes.append(safety_finding("unsafe-link", shown, f"-> {target}"))


def open_installed(spec: str, limits: Limits) -> Target:
    """An installed distribution by name. Raises BadTarget when none is installed."""
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
        target.top_level = {
            f.parts[0].removesuffix(".py")
            for f in files
            if f.suffix == ".py"
            and not f.parts[0].endswith((".dist-info", ".data"))
            and not f.parts[0].startswith("..")
        }

    def members() -> Iterator[Member]:
        for f in sorted(files, key=str):
            shown = str(f).replace(os.sep, "/")
            if "__pycache__" in f.parts:
                continue
            full = Path(str(dist.locate_file(f)))
            try:
                inside = full.resolve().is_relative_to(root)
            except (OSError, RuntimeError):  # RuntimeError: a symlink loop (Python < 3.13)
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
