"""Knowledge of torch's ROCm wheels (``data/torch_wheels.json``): which torch release PyTorch
published for which ROCm, which local versions are AMD's own builds, and which gfx targets each
release's wheels of each index carry.

Stdlib and ``packaging`` only (``matrix`` imports it from nox's interpreter); no I/O beyond
reading that file. The doctor's pair check and reinstall advice and ``rocm-compat matrix --gfx``
decide from here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from pytest_rocm._resources import load_json

_INDEX_RE = re.compile(r"(?:^|/)(rocm[0-9]+(?:\.[0-9]+)*)/?$")


def _data() -> dict[str, Any]:
    data: dict[str, Any] = load_json("torch_wheels.json")
    return data


def published_pairs() -> dict[str, list[str]]:
    """torch minor -> the ROCm versions PyTorch published wheels for ({"2.14": ["7.2", "7.14"]})."""
    return {minor: list(entry["rocm"]) for minor, entry in _data()["pairs"]["releases"].items()}


def cpu_index() -> str:
    """The index of PyTorch's CPU-only wheels (``https://download.pytorch.org/whl/cpu``)."""
    return str(_data()["cpu_index"]["url"])


def is_cpu_index(url: str) -> bool:
    """Whether ``url`` is a CPU-only wheel index: PyTorch's, or a mirror of it (last path part ``cpu``)."""
    return url.strip().rstrip("/").rsplit("/", 1)[-1] == "cpu"


def index_name(rocm: str) -> str:
    """``7.2`` -> ``rocm7.2`` (the name of a download.pytorch.org index)."""
    return f"rocm{rocm}"


def index_of(url_or_name: str) -> str | None:
    """``https://download.pytorch.org/whl/rocm6.4`` or ``rocm6.4`` -> ``rocm6.4``; None otherwise."""
    m = _INDEX_RE.search(url_or_name.strip())
    return m.group(1) if m else None


@dataclass(frozen=True)
class AmdBuild:
    id: str
    what: str


def amd_build(torch_version: str | None) -> AmdBuild | None:
    """The kind of AMD/TheRock build a torch version string is (``2.14.0+rocm7.15.0a20260718``:
    therock-nightly), from its local version; None for PyTorch's release wheels and the rest."""
    if not torch_version or "+" not in torch_version:
        return None
    local = torch_version.split("+", 1)[1]
    for entry in _data()["amd_builds"]["list"]:
        if re.fullmatch(entry["pattern"], local):
            return AmdBuild(entry["id"], entry["what"])
    return None


def _release(torch_version: str) -> Version | None:
    try:
        return Version(Version(torch_version.split("+", 1)[0]).base_version)
    except InvalidVersion:
        return None


def wheel_gfx(torch_version: str, index: str) -> list[str] | None:
    """The gfx targets of torch ``torch_version`` from index ``index`` (``rocm7.2`` or its URL);
    None when the table does not know that release and index."""
    release = _release(torch_version)
    name = index_of(index)
    if release is None or name is None:
        return None
    for entry in _data()["wheel_gfx"]["list"]:
        if name in entry["indexes"] and SpecifierSet(entry["torch"]).contains(release, prereleases=True):
            return list(entry["gfx"])
    return None


def indexes_for(gfx: str, torch_minor: str | None = None) -> list[tuple[str, str]]:
    """(torch minor, index) pairs whose wheels carry ``gfx``, newest torch first, then newest ROCm;
    only published pairs the gfx table knows. ``torch_minor`` keeps one release."""
    found: list[tuple[str, str]] = []
    for minor, rocms in published_pairs().items():
        if torch_minor is not None and minor != torch_minor:
            continue
        for rocm in rocms:
            listed = wheel_gfx(f"{minor}.0", index_name(rocm))
            if listed is not None and gfx in listed:
                found.append((minor, index_name(rocm)))
    return sorted(found, key=lambda p: (Version(p[0]), Version(p[1].removeprefix("rocm"))), reverse=True)


def known_gfx_everywhere() -> set[str]:
    """Every gfx some PyTorch ROCm wheel carries (for "no pytorch.org wheel has gfx1152")."""
    return {g for entry in _data()["wheel_gfx"]["list"] for g in entry["gfx"]}


def amd_indexes_for(gfx: str) -> list[tuple[str, str]]:
    """(index URL, what to install) of AMD's own indexes whose wheels carry ``gfx``."""
    return [(e["url"], e["install"]) for e in _data()["amd_indexes"]["list"] if gfx in e["gfx"]]
