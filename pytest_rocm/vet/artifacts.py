"""The artifacts of a ``--wheels DIR`` folder, and which one a pinned dependency is vetted from.

A folder holds wheels and sdists (``pip download`` leaves an sdist where a project publishes no
wheel: flash-attn, mamba-ssm and deepspeed, the native GPU packages that matter most on AMD).
For a pin, vet takes what pip would install from the folder: a wheel this interpreter can install
(its tags), the highest final release the pin admits; when no wheel fits, the sdist, read
statically like ``vet FILE.tar.gz`` (never built or run); a wheel for another platform only when
there is neither. Nothing there: the installed distribution.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlsplit

from packaging.specifiers import SpecifierSet
from packaging.tags import sys_tags
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from pytest_rocm.vet.target import BadTarget

_SDIST = re.compile(r"^(?P<name>.+?)-(?P<version>\d[^-]*)\.(?:tar\.gz|tgz|tar\.bz2|tar\.xz|zip)$", re.IGNORECASE)


@dataclass(frozen=True)
class Pin:
    name: str
    version: str | None  # the one version it is pinned to (the table's "pinned"); None: not one
    source: str  # where it was named: "requirements.txt:3"
    #: what a version must satisfy (PEP 440: ``==2.4.0`` takes 2.4.0+rocm6.1, ``>=2`` constrains
    #: too); empty: any version (or, with ``version`` set, a version PEP 440 cannot express)
    specifier: SpecifierSet = field(default_factory=SpecifierSet)
    #: a requirement that names no index version but a file: a URL (``name @ URL``, a bare URL,
    #: ``-e git+...``), a local path, an include by URL, an option vet does not read
    link: str | None = None
    link_kind: str = ""  # "url" | "editable" | "path" | "include" | "option"

    def admits(self, version: str) -> bool:
        """Whether ``version`` (a wheel's, the installed one) meets the pin. An unparsable
        version, or a pin PEP 440 cannot express: compared as text."""
        if self.version is not None and not self.specifier:
            return version == self.version
        try:
            return self.specifier.contains(Version(version), prereleases=True)
        except InvalidVersion:
            return version == self.version if self.version is not None else not self.specifier

    def wanted(self) -> str:
        """The pin in words for a note: ``2.4.0``, ``>=2``."""
        return self.version if self.version is not None else str(self.specifier)


@dataclass(frozen=True)
class Artifact:
    version: str
    path: Path
    kind: str  # "wheel" | "sdist"
    fits: bool = True  # a wheel this interpreter can install (an sdist: always)


#: artifacts of a folder by canonical distribution name
Artifacts = dict[str, list[Artifact]]


def sdist_name(file_name: str) -> tuple[str, str] | None:
    m = _SDIST.match(file_name)
    return (canonicalize_name(m.group("name")), m.group("version")) if m else None


def wheel_index(folder: Path | None) -> Artifacts:
    """The wheels and sdists of a folder by distribution name (the name says "wheel": the option
    is ``--wheels``; sdists are there too)."""
    index: Artifacts = {}
    if folder is None:
        return index
    if not folder.is_dir():
        raise BadTarget(f"--wheels {folder}: not a folder")
    supported = set(sys_tags())
    for path in sorted(p for p in folder.iterdir() if p.is_file()):
        if path.name.endswith(".whl"):
            try:
                name, version, _, tags = parse_wheel_filename(path.name)
            except InvalidWheelFilename:
                continue
            index.setdefault(str(name), []).append(Artifact(str(version), path, "wheel", bool(tags & supported)))
        elif (found := sdist_name(path.name)) is not None:
            index.setdefault(found[0], []).append(Artifact(found[1], path, "sdist"))
    return index


def _best(pin: Pin, candidates: list[Artifact]) -> Artifact | None:
    """What pip would pick of these: the highest final release the pin admits, a pre-release only
    when no final release is admitted (``pkg>=1`` with 1.2, 1.10 and 2.0rc1 is 1.10)."""
    admitted = {a.version: a for a in candidates if pin.admits(a.version)}
    parsable = [v for v in admitted if _parses(v)]
    preferred = list(SpecifierSet().filter(parsable))  # packaging's own preference: finals, else pre-releases
    if preferred:
        return admitted[max(preferred, key=Version)]
    return next(iter(admitted.values()), None)  # only versions PEP 440 cannot parse (compared as text)


def locate(pin: Pin, artifacts: Artifacts) -> tuple[str | None, str]:
    """What to vet for a pin (a file path or an installed name) and a note; None: not found."""
    found = artifacts.get(pin.name, [])
    for kind, fits, note in (
        ("wheel", True, ""),
        ("sdist", True, "sdist (no wheel for this platform in --wheels): read statically, never built"),
        ("wheel", False, "a wheel for another platform (no wheel for this one, no sdist in --wheels)"),
    ):
        best = _best(pin, [a for a in found if a.kind == kind and a.fits == fits])
        if best is not None:
            return str(best.path), note
    try:
        installed = metadata.version(pin.name)
    except metadata.PackageNotFoundError:
        return None, "not installed and no wheel or sdist for it in --wheels"
    if not pin.admits(installed):
        return pin.name, f"pinned {pin.wanted()}, installed {installed}: vetted the installed one"
    return pin.name, ""


def _parses(version: str) -> bool:
    try:
        Version(version)
    except InvalidVersion:
        return False
    return True


#: why a link row is not vetted, by its kind
_LINK_UNVETTED = {
    "include": "not vetted: an include by URL, not read (download it and name the file)",
    "option": "not vetted: an option vet does not read",
}


def locate_link(pin: Pin, artifacts: Artifacts) -> tuple[str | None, str]:
    """What to vet for a URL, ``-e`` or path requirement: the file of the same name in
    ``--wheels`` (or, for a URL that names no file, a VCS checkout, that name's artifact there), a
    local path itself; never the installed distribution, which may be another build."""
    link = pin.link or ""
    if pin.link_kind in _LINK_UNVETTED:
        return None, _LINK_UNVETTED[pin.link_kind]
    if pin.link_kind == "path":
        if Path(link).exists():
            return link, "a local path"
        return None, f"not vetted: the path {link} does not exist here"
    wanted = unquote(urlsplit(link).path).rstrip("/").rsplit("/", 1)[-1]
    every = [a for found in artifacts.values() for a in found]
    same = [a for a in every if a.path.name == wanted]
    if not same and pin.version is not None:
        same = [a for a in artifacts.get(pin.name, []) if a.version == pin.version]
    if same:
        return str(same[0].path), "from --wheels, the file the URL names"
    if pin.version is None and artifacts.get(pin.name):
        best = max(artifacts[pin.name], key=lambda a: (a.kind == "wheel" and a.fits, a.version))
        return str(best.path), f"the URL names no version: took {best.path.name} from --wheels"
    return None, f"not vetted: a URL requirement, download it into --wheels (pip download --no-deps -d DIR '{link}')"
