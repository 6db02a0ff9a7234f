"""A ``requirements.txt`` read the way pip reads it, so that every line that installs something
becomes a row of the stack: nothing pip would install may vanish from the gate.

- ``-r``/``--requirement FILE`` includes are followed, relative to the file that names them (as
  pip does); a file already read is not read again (a loop, or two files including a third).
- ``-c``/``--constraint FILE`` files install nothing: their version specifiers narrow the pins
  of the same names (a name only in a constraints file is no row).
- ``URL``, ``name @ URL``, ``-e``/``--editable`` and local paths are rows with a ``link``: a URL
  is vetted from the file of the same name in ``--wheels`` (:func:`artifacts.locate_link`), a
  local path from itself; else the row is "not vetted", which the stack's exit status counts.
- lines whose marker is false here are skipped, and said (``skipped``), not silently dropped.
- an option vet does not know is a row too, not vetted: pip would act on it, vet cannot.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import unquote, urlsplit

from packaging.markers import InvalidMarker, Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

from pytest_rocm.vet.artifacts import Pin, sdist_name
from pytest_rocm.vet.target import BadTarget

#: options that install nothing (indexes, resolver switches): no row
_GLOBAL = frozenset(
    {
        "-i",
        "--index-url",
        "--extra-index-url",
        "--no-index",
        "-f",
        "--find-links",
        "--pre",
        "--prefer-binary",
        "--only-binary",
        "--no-binary",
        "--trusted-host",
        "--require-hashes",
        "--use-feature",
        "-Z",
        "--always-unzip",
    }
)
_INCLUDE = {"-r": "requirement", "--requirement": "requirement", "-c": "constraint", "--constraint": "constraint"}
_EDITABLE = ("-e", "--editable")
_COMMENT = re.compile(r"(^|\s)#.*$")
_ARCHIVE = (".whl", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".zip")


@dataclass
class ReqFile:
    """What a requirements file (and what it includes) names: the pins, in order, and the lines
    skipped because their marker is false here (``common.txt:37 six (python_version > '3.11')``)."""

    pins: list[Pin] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    constraints: list[Pin] = field(default_factory=list)
    read: set[Path] = field(default_factory=set)


def logical_lines(lines: list[str]) -> list[tuple[int, str]]:
    """Physical lines joined where one ends in a backslash (as pip does: hashed files from
    ``pip-compile --generate-hashes`` or ``uv export``), each with its first line's number. A line
    with a comment does not continue."""
    joined: list[tuple[int, str]] = []
    parts: list[str] = []
    first = 0
    for number, raw in enumerate(lines, 1):
        has_comment = raw.lstrip().startswith("#") or " #" in raw or "\t#" in raw
        if raw.endswith("\\") and not has_comment:
            first = first or number
            parts.append(raw[:-1])
            continue
        joined.append((first or number, "".join([*parts, raw])))
        parts, first = [], 0
    if parts:  # a backslash on the last line
        joined.append((first, "".join(parts)))
    return joined


def read_requirements_txt(path: Path) -> ReqFile:
    """Every pin ``path`` and its includes name; raises BadTarget (one line) on a bad line or a
    missing include."""
    found = ReqFile()
    _read(path, found, "requirement")
    for c in found.constraints:
        found.pins = [_narrow(p, c) if p.name == c.name and p.link is None else p for p in found.pins]
    return found


def _narrow(pin: Pin, constraint: Pin) -> Pin:
    spec = pin.specifier & constraint.specifier
    version = pin.version or constraint.version
    return replace(pin, specifier=spec, version=version, source=f"{pin.source} (constrained by {constraint.source})")


def _read(path: Path, found: ReqFile, role: str) -> None:
    resolved = path.resolve()
    if resolved in found.read:
        return  # read already: an include loop, or a file two others include
    found.read.add(resolved)
    try:
        lines = path.read_bytes().decode("utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise BadTarget(f"{path}: not UTF-8 text (byte {exc.start})") from None
    for number, raw in logical_lines(lines):
        line = _COMMENT.sub("", raw).strip()
        if line:
            _line(path, f"{path.name}:{number}", line, found, role)


def _option(line: str) -> tuple[str, str]:
    """``-r x`` / ``-rx`` / ``--requirement=x`` / ``--requirement x`` -> (option, value)."""
    if not line.startswith("--"):
        return line[:2], line[2:].strip()
    head, _, rest = line.partition(" ")
    name, eq, value = head.partition("=")
    return name, f"{value} {rest}".strip() if eq else rest.strip()


def _line(path: Path, where: str, line: str, found: ReqFile, role: str) -> None:
    if line.startswith("-"):
        option, value = _option(line.replace("\t", " "))
        if option in _INCLUDE:
            _include(path, where, value, found, _INCLUDE[option] if role == "requirement" else "constraint")
        elif option in _EDITABLE:
            if role == "requirement":
                found.pins.append(_link_pin(path, where, value, "editable"))
        elif option not in _GLOBAL and role == "requirement":
            found.pins.append(Pin(line.split()[0], None, where, link=line, link_kind="option"))
        return
    text = line.replace("\t", " ").split(" --", 1)[0].strip()  # --hash=..., per-requirement options
    pin = _requirement(text, where, path, found)
    if pin is not None:
        (found.pins if role == "requirement" else found.constraints).append(pin)


def _include(path: Path, where: str, value: str, found: ReqFile, role: str) -> None:
    if not value:
        raise BadTarget(f"{where}: an include (-r/-c) names no file")
    if "://" in value:
        found.pins.append(Pin(value, None, where, link=value, link_kind="include"))
        return
    target = path.parent / value
    if not target.is_file():
        raise BadTarget(f"{where}: includes {value}, and {target} is no such file")
    _read(target, found, role)


def _marker_false(text: str, where: str, found: ReqFile) -> tuple[str, bool]:
    """The line without its marker (a URL line: ``URL ; marker``), and whether the marker is false here."""
    link, sep, marker = text.partition(";")
    if not sep or not _is_link(link.strip()):
        return text, False
    try:
        false = not Marker(marker.strip()).evaluate({"extra": ""})
    except InvalidMarker as exc:
        raise BadTarget(f"{where}: not a marker: {marker.strip()!r} ({exc})") from None
    if false:
        found.skipped.append(f"{where} {_label(link.strip())} ({marker.strip()})")
    return link.strip(), false


def parse_requirement(text: str, where: str) -> Requirement:
    """A PEP 508 requirement, or BadTarget naming where and why (a requirements file's line, a
    pyproject's dependency)."""
    try:
        return Requirement(text)
    except InvalidRequirement as exc:
        why = str(exc).splitlines()[0] if str(exc) else "unparsable"
        raise BadTarget(f"{where}: not a requirement: {text.strip()!r} ({why})") from None


def _requirement(text: str, where: str, path: Path, found: ReqFile) -> Pin | None:
    text, false = _marker_false(text, where, found)
    if false:
        return None
    if _is_link(text):
        return _link_pin(path, where, text, "url" if "://" in text else "path")
    req = parse_requirement(text, where)
    if req.marker is not None and not req.marker.evaluate({"extra": ""}):
        found.skipped.append(f"{where} {req.name} ({req.marker})")
        return None  # not for this platform/Python, or an extra's
    pinned = [s.version for s in req.specifier if s.operator in ("==", "===") and "*" not in s.version]
    name = canonicalize_name(req.name)
    if req.url:  # vetted from the file it names (a file: URL is a local path), never from the index
        link = _link_pin(path, where, req.url, "url")
        return Pin(name, link.version, where, req.specifier, link=link.link, link_kind=link.link_kind)
    return Pin(name, pinned[0] if pinned else None, where, req.specifier)


def _is_link(text: str) -> bool:
    """A URL or a local path, not a ``name[extras] specifier`` (``name @ URL`` is a requirement)."""
    if re.match(r"^[A-Za-z0-9][\w.\[\], -]*@", text):
        return False
    return "://" in text or text.startswith((".", "/", "~", "file:")) or text.lower().endswith(_ARCHIVE)


def _file_name(link: str) -> str:
    """The file a URL or path names (``%2B`` decoded), without a query or ``#egg=`` fragment."""
    return unquote(urlsplit(link).path if "://" in link else link).rstrip("/").rsplit("/", 1)[-1]


def _name_version(link: str) -> tuple[str | None, str | None]:
    """The distribution name and version a link's file name (or its ``#egg=name``) says."""
    file_name = _file_name(link)
    if file_name.endswith(".whl"):
        try:
            name, version, _, _ = parse_wheel_filename(file_name)
            return str(name), str(version)
        except InvalidWheelFilename:
            pass
    found = sdist_name(file_name)
    if found is not None:
        return found
    egg = re.search(r"[#&]egg=([A-Za-z0-9][\w.-]*)", link)
    return (canonicalize_name(egg.group(1)), None) if egg else (None, None)


def _file_version(link: str) -> str | None:
    return _name_version(link)[1]


def _label(link: str) -> str:
    name, _ = _name_version(link)
    if name:
        return name
    stem = _file_name(link.split("#", 1)[0].split("@", 1)[0] if "://" in link else link)
    return stem.removesuffix(".git") or link


def _link_pin(path: Path, where: str, link: str, kind: str) -> Pin:
    """A row for a URL, an editable or a local path; a local path is resolved against the
    requirements file's folder (then the working folder), where it exists."""
    name, version = _name_version(link)
    if link.startswith("file:"):  # a local file, written as a URL
        link, kind = unquote(urlsplit(link).path), "path"
    if kind in ("editable", "path") and "://" not in link:
        link = re.sub(r"\[[^\]]*\]$", "", link)  # `-e .[dev]`: the extras are not part of the path
        local = Path(link).expanduser()
        for candidate in (path.parent / local, local):
            if candidate.exists():
                link = str(candidate.resolve())  # `-e .` is named by its folder
                break
        kind = "path"
    return Pin(canonicalize_name(name) if name else _label(link), version, where, link=link, link_kind=kind)
