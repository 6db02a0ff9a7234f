"""Knowledge of torch's ROCm wheels (``data/torch_wheels.json``): which torch release PyTorch
published for which ROCm, which local versions are AMD's own builds, and which gfx targets each
release's wheels of each index carry.

Stdlib and ``packaging`` only (``matrix`` imports it from nox's interpreter); no I/O beyond
reading that file. The doctor's pair check and reinstall advice and ``rocm-compat matrix --gfx``
decide from here.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from pytest_rocm._resources import load_json
from pytest_rocm.env import arch

_INDEX_RE = re.compile(r"(?:^|/)(rocm[0-9]+(?:\.[0-9]+)*)/?$")


def _data() -> dict[str, Any]:
    data: dict[str, Any] = load_json("torch_wheels.json")
    return data


def published_pairs() -> dict[str, list[str]]:
    """torch minor -> the ROCm versions PyTorch published wheels for ({"2.14": ["7.2", "7.14"]})."""
    return {minor: list(entry["rocm"]) for minor, entry in _data()["pairs"]["releases"].items()}


def rocm_install_line(rocm: str) -> str:
    """``pip install torch==X.Y --index-url .../rocmR``: the newest torch release PyTorch published
    for ROCm ``rocm`` (a bare ROCm index goes stale: it serves whatever torch is newest there),
    or the bare index where the snapshot knows no release for it."""
    from packaging.version import Version

    releases = [torch for torch, rocms in published_pairs().items() if rocm in rocms]
    index = f"https://download.pytorch.org/whl/rocm{rocm}"
    if not releases:
        return f"pip install torch --index-url {index}"
    newest = max(releases, key=Version)
    return f"pip install torch=={newest}.* --index-url {index}"


def snapshot_date() -> str:
    """The date the bundled facts were last checked against their sources (``2026-12-02``)."""
    return str(_data()["_date"])


def cpu_index() -> str:
    """The index of PyTorch's CPU-only wheels (``https://download.pytorch.org/whl/cpu``)."""
    return str(_data()["cpu_index"]["url"])


def is_cpu_index(url: str) -> bool:
    """Whether ``url`` is a CPU-only wheel index: PyTorch's, or a mirror of it (last path part ``cpu``)."""
    return url.strip().rstrip("/").rsplit("/", 1)[-1] == "cpu"


def index_of(url_or_name: str) -> str | None:
    """``https://download.pytorch.org/whl/rocm6.4`` or ``rocm6.4`` -> ``rocm6.4``; None otherwise."""
    m = _INDEX_RE.search(url_or_name.strip())
    return m.group(1) if m else None


@dataclass(frozen=True)
class AmdBuild:
    id: str
    what: str


#: a local version naming a ROCm: ``rocm6.2.4``, ``rocm7.1``
_ROCM_LOCAL_RE = re.compile(r"^rocm([0-9]+(?:\.[0-9]+)+)$")


def pytorch_rocm_indexes() -> set[str]:
    """The names of PyTorch's own ROCm indexes (``rocm6.2.4``, ``rocm7.1`` ...): every ROCm of a
    published pair. A wheel whose local version is one of them came from PyTorch."""
    return {f"rocm{rocm}" for rocms in published_pairs().values() for rocm in rocms}


@dataclass(frozen=True)
class BuildOrigin:
    """Where a torch build comes from, read off its version string.

    ``kind``: ``pytorch-release`` (a wheel of one of PyTorch's ROCm indexes: the published-pairs
    check applies), ``pytorch-nightly``, ``amd`` (one of AMD's builds: ``amd`` names which) or
    ``other`` (a local version that is none of those: a distribution's or a source build)."""

    kind: str
    what: str
    amd: AmdBuild | None = None


def build_origin(torch_version: str | None) -> BuildOrigin | None:
    """Where the torch build ``2.6.0+rocm6.2.4`` comes from; None when it has no ``+rocm`` local
    version (PyPI's CUDA build, a CPU wheel, ``2.5.1`` from a distribution)."""
    if not torch_version or "+" not in torch_version:
        return None
    public, local = torch_version.split("+", 1)
    if not local.startswith("rocm"):
        return None
    if ".dev" in public:
        return BuildOrigin("pytorch-nightly", "a PyTorch nightly")
    if local in pytorch_rocm_indexes():
        return BuildOrigin("pytorch-release", f"a wheel of PyTorch's {local} index")
    for entry in _data()["amd_builds"]["list"]:
        if re.fullmatch(entry["pattern"], local):
            build = AmdBuild(entry["id"], entry["what"])
            return BuildOrigin("amd", build.what, build)
    if _ROCM_LOCAL_RE.match(local):  # rocm7.3: an index name PyTorch has not published (yet)
        return BuildOrigin("pytorch-release", f"a wheel of a {local} index")
    return BuildOrigin(
        "other",
        f"a local build (+{local}) that is none of PyTorch's or AMD's wheels: a distribution's or a source build",
    )


def amd_build(torch_version: str | None) -> AmdBuild | None:
    """The kind of AMD/TheRock build a torch version string is (``2.14.0+rocm7.15.0a20260718``:
    therock-nightly), from the shape of its local version; None for PyTorch's release wheels and
    the rest."""
    origin = build_origin(torch_version)
    return origin.amd if origin is not None else None


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


def kernels_for(listed: Collection[str] | None, gfx: str) -> str | None:
    """Whether a wheel whose kernels are ``listed`` (:func:`wheel_gfx`) runs on ``gfx``: ``yes``;
    ``override`` (only for the target of the gfx's usual HSA_OVERRIDE_GFX_VERSION); ``no``
    (hipErrorNoBinaryForGpu at the first kernel); None when the table does not know the wheel.
    The one rule: the doctor's advice and ``rocm-compat matrix --gfx`` both ask here."""
    if listed is None:
        return None
    base = arch.split_arch(gfx)[0]
    if base in listed:
        return "yes"
    usual = arch.override_for(base)
    return "override" if usual is not None and arch.parse_override(usual) in listed else "no"


def known_gfx_everywhere() -> set[str]:
    """Every gfx some PyTorch ROCm wheel carries (for "no pytorch.org wheel has gfx1152")."""
    return {g for entry in _data()["wheel_gfx"]["list"] for g in entry["gfx"]}


def amd_indexes_for(gfx: str) -> list[tuple[str, str]]:
    """(index URL, what to install) of AMD's own indexes whose wheels carry ``gfx``."""
    return [(e["url"], e["install"].format(gfx=gfx)) for e in _data()["amd_indexes"]["list"] if gfx in e["gfx"]]
