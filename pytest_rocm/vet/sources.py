"""What ``vet`` reads: an installed distribution, a wheel, an sdist or a source folder, as a
stream of members (path, kind, bytes) — read as data, never imported, built or extracted.

This module resolves what the user named to a :class:`Target`; the reading itself, with its
safety limits, is in :mod:`archives` (wheels, sdists) and :mod:`disk` (folders, installs).
"""

from __future__ import annotations

import os
import re
import stat
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

from pytest_rocm.vet.archives import is_archive_name, iter_archive
from pytest_rocm.vet.disk import iter_folder, open_installed
from pytest_rocm.vet.rules import ARCHIVE
from pytest_rocm.vet.target import BadTarget, Limits, Member, Target


def _folder_name(root: Path) -> tuple[str, str | None]:
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        try:
            if sys.version_info >= (3, 11):
                import tomllib
            else:  # pragma: no cover (3.10: tomli, a dependency there)
                import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

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
    if not spec.strip():
        raise BadTarget(f"{spec!r}: an empty TARGET names nothing (give a distribution, a file or a folder)")
    path = Path(spec)
    try:
        mode = path.stat().st_mode
    except (OSError, ValueError):
        mode = 0
    if mode and not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
        raise BadTarget(f"{spec}: not a regular file or folder (a FIFO, socket or device is never read)")
    if path.is_dir():
        name, version = _folder_name(path)
        target = Target(spec, "folder", name, version, _package_dirs(path), str(path.resolve()))
        target.members = iter_folder(path, limits, target.notes)
        return target
    if path.is_file():
        return _open_archive(path, limits)
    if "/" in spec or os.sep in spec or is_archive_name(spec):
        raise BadTarget(f"{spec}: no such file or folder")
    return open_installed(spec, limits)


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
        target = Target(
            str(path), "sdist", m.group(1) if m else stem, m.group(2) if m else None, set(), str(path.resolve())
        )
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
