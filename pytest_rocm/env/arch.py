"""Architecture names: gfx arithmetic, target features, families, patterns, usual overrides.

The knowledge (which gfx belongs to which family, marketing names, the usual
``HSA_OVERRIDE_GFX_VERSION``) lives in ``pytest_rocm/data/gfx.json``; this module only reads it.
Pure functions, no I/O beyond reading that file once, no torch.

Names: AMD targets are ``gfx`` + decimal major + hex minor + hex stepping (``gfx90a`` is 9.0.10),
optionally followed by target features (``gfx90a:sramecc+:xnack-``). NVIDIA ones are ``sm_NN``.
LLVM's generic targets (``gfx11-generic``) name a group of gfx whose common ISA a code object may
be built for; their member lists are data (``generic`` in gfx.json), never derived from digits.

The runtime's own rules are followed where they decide something: ``HSA_OVERRIDE_GFX_VERSION`` is
read as libhsakmt reads it (``env.overrides.scan_override``), and a KFD ``gfx_target_version``
must decode to a gfx name.

Why this module is long: it is the one vocabulary of architecture names. Patterns validate and
match against names, families, generic targets and their features, and all of them read one data
file; split in two, each half would import the other.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Collection
from typing import Any

from pytest_rocm._resources import load_json
from pytest_rocm.env.overrides import scan_override

#: ``gfx`` + major (decimal, 1-2 digits) + minor (one hex digit) + stepping (one hex digit)
_GFX_RE = re.compile(r"^gfx([0-9]{1,2})([0-9a-f])([0-9a-f])$")
_SM_RE = re.compile(r"^sm_([0-9])([0-9]+)[a-z]?$")
#: what a glob may contain: a gfx or sm prefix, then name characters and wildcards
_GLOB_RE = re.compile(r"^(gfx|sm_)[0-9a-z*?\[\]!-]*$")
#: an ISA name as rocminfo and the HSA runtime print it: amdgcn-amd-amdhsa--gfx11-generic:xnack-
_ISA_RE = re.compile(r"^amdgcn-amd-amdhsa--(gfx[0-9a-z-]+)((?::[a-z0-9-]+[+-]?)*)$")
#: the runtime keeps 6 bits of major (libhsakmt topology.c: ``major & 0x3f``)
_MAJOR_MAX = 63


def _data() -> dict[str, Any]:
    data: dict[str, Any] = load_json("gfx.json")
    return data


def known_gfx() -> list[str]:
    """Every gfx the data file knows, in its order (oldest first)."""
    return list(_data()["gfx"])


def families() -> list[str]:
    """Every family name (``gcn5``, ``cdna3``, ``rdna3.5`` ...)."""
    return list(_data()["families"])


# -- names ------------------------------------------------------------------------------------
def gfx_from_target_version(v: int) -> str:
    """KFD ``gfx_target_version`` -> gfx name: 110000 -> gfx1100, 90010 -> gfx90a, 90402 -> gfx942.

    Raises ValueError for 0 or a negative value (a CPU node, or an old kernel: unknown).
    Values not in the data file still decode (130000 -> gfx1300).
    """
    v = int(v)
    if v <= 0:
        raise ValueError(f"gfx_target_version {v} names no GPU architecture")
    major, minor, stepping = v // 10000, (v // 100) % 100, v % 100
    # a gfx name has one hex digit each for minor and stepping, and the runtime keeps 6 bits of
    # major: anything else is a corrupt file, not a GPU (999999999 must not become gfx999996363)
    if major > _MAJOR_MAX or minor > 15 or stepping > 15:
        raise ValueError(
            f"gfx_target_version {v} is no gfx (major*10000 + minor*100 + stepping needs major <= 63, "
            "minor and stepping <= 15)"
        )
    return f"gfx{major}{minor:x}{stepping:x}"


def target_version(gfx: str) -> int | None:
    """gfx name -> ``gfx_target_version`` (gfx90a -> 90010); None when not a gfx name."""
    m = _GFX_RE.match(split_arch(gfx)[0])
    if not m:
        return None
    return int(m.group(1)) * 10000 + int(m.group(2), 16) * 100 + int(m.group(3), 16)


def override_string(gfx: str) -> str | None:
    """gfx name -> the ``major.minor.stepping`` form HSA_OVERRIDE_GFX_VERSION uses (gfx90a -> 9.0.10)."""
    v = target_version(gfx)
    if v is None:
        return None
    return f"{v // 10000}.{(v // 100) % 100}.{v % 100}"


def parse_override(value: str, variable: str = "HSA_OVERRIDE_GFX_VERSION") -> str:
    """HSA_OVERRIDE_GFX_VERSION value -> the gfx it makes the runtime report (10.3.0 -> gfx1030).

    Raises ValueError when the runtime rejects the value (:func:`scan_override`) or when it names
    no gfx (0.0.0, or a minor or stepping above 15).
    """
    major, minor, stepping = scan_override(value, variable)
    if major == 0 or minor > 15 or stepping > 15:
        raise ValueError(f"{variable}={value!r} names no GPU architecture")
    return gfx_from_target_version(major * 10000 + minor * 100 + stepping)


def split_arch(arch: str) -> tuple[str, dict[str, bool]]:
    """``gfx90a:sramecc+:xnack-`` -> (``gfx90a``, {"sramecc": True, "xnack": False}).

    Features without a trailing ``+``/``-`` carry no setting and are dropped.
    """
    base, *rest = arch.strip().split(":")
    features: dict[str, bool] = {}
    for feature in rest:
        feature = feature.strip()
        if len(feature) > 1 and feature[-1] in "+-":
            features[feature[:-1]] = feature[-1] == "+"
    return base.strip().lower(), features


def is_gfx(name: str) -> bool:
    """Whether ``name`` is a well-formed gfx name (known or not)."""
    return bool(_GFX_RE.match(split_arch(name)[0]))


def is_nvidia(name: str) -> bool:
    """Whether ``name`` is an NVIDIA architecture (``sm_90``, ``sm_90a``)."""
    return bool(_SM_RE.match(split_arch(name)[0]))


# -- knowledge --------------------------------------------------------------------------------
def _entry(gfx: str) -> dict[str, Any] | None:
    entry: dict[str, Any] | None = _data()["gfx"].get(split_arch(gfx)[0])
    return entry


def family_of(gfx: str) -> str | None:
    """gfx -> family (gfx1100 -> rdna3, gfx942 -> cdna3); None when unknown (or an sm_NN)."""
    entry = _entry(gfx)
    return entry["family"] if entry else None


def wave_size(gfx: str) -> int | None:
    """Default wavefront size: 64 on GCN/CDNA, 32 on RDNA; None when the family is unknown."""
    family = family_of(gfx)
    return _data()["families"][family]["wave_size"] if family else None


def wave_sizes(gfx: str) -> list[int]:
    """Every wavefront size the family supports, its default first (gfx13: [32, 64]; rdna3: [32])."""
    family = family_of(gfx)
    if family is None:
        return []
    entry = _data()["families"][family]
    return [int(w) for w in entry.get("wave_sizes", [entry["wave_size"]])]


def name_disputes(gfx: str) -> list[str]:
    """Product names the sources put on this gfx and on another one (``Radeon 840M``, gfx1152 or gfx1153)."""
    base = split_arch(gfx)[0]
    disputes = _data().get("name_disputes", {})
    return [name for name, entry in disputes.items() if not name.startswith("_") and base in entry["candidates"]]


def marketing_names(gfx: str) -> list[str]:
    entry = _entry(gfx)
    return list(entry["names"]) if entry else []


def marketing_name(gfx: str) -> str | None:
    """``gfx1100`` -> ``Radeon RX 7900 XTX/XT/GRE, Radeon PRO W7900/W7800``; None when unknown. A name the
    sources dispute is shown with its candidates: ``Radeon 840M (disputed: gfx1152 or gfx1153)``."""
    names = marketing_names(gfx)
    for name in name_disputes(gfx):
        candidates = _data()["name_disputes"][name]["candidates"]
        names.append(f"{name} (disputed: {' or '.join(candidates)})")
    return ", ".join(names) if names else None


def override_for(gfx: str) -> str | None:
    """The HSA_OVERRIDE_GFX_VERSION users usually set for this gfx (gfx1031 -> 10.3.0).

    None when none is needed (the gfx is itself a build target, like gfx1030 or gfx1100) or no
    override is known to work.
    """
    entry = _entry(gfx)
    return entry.get("override") if entry else None


def override_unneeded(silicon: str, target: str, native: Collection[str] | None) -> bool:
    """Whether an override that makes ``silicon`` run ``target`` code is not needed: it names the
    silicon itself (11.0.2 on a gfx1102), or the software has native kernels for the silicon. The
    one rule of the PyTorch check (``native``: the wheel's arch list) and of the Ollama check (the
    gfx its bundled ROCm covers; None: not known)."""
    return target == silicon or (native is not None and silicon in native)


def reported_override(gfx: str) -> str | None:
    """An override users report working for this gfx where no build carries it (gfx1152 -> 11.5.0):
    weaker evidence than :func:`override_for`, so it is named as a last resort and decides nothing."""
    entry = _entry(gfx)
    return entry.get("override_reported") if entry else None


def therock_excludes(gfx: str) -> list[str]:
    """The ROCm libraries TheRock does not build for this gfx (gfx1103 -> [..., "rccl"]); [] when
    none or unknown."""
    entry = _entry(gfx)
    return list(entry.get("therock_excludes", [])) if entry else []


# -- generic targets --------------------------------------------------------------------------
def generic_targets() -> dict[str, list[str]]:
    """LLVM's generic targets and their members: {"gfx11-generic": ["gfx1100", ..., "gfx1153"]}."""
    return {name: list(members) for name, members in _data()["generic"].items()}


def is_generic(name: str) -> bool:
    return split_arch(name)[0] in _data()["generic"]


def generic_of(gfx: str) -> str | None:
    """The generic target whose member list holds this gfx (gfx1151 -> gfx11-generic); None if none."""
    base = split_arch(gfx)[0]
    for name, members in _data()["generic"].items():
        if base in members:
            return str(name)
    return None


#: the features a target ID may carry (LLVM "target ID" syntax: ``gfx90a:sramecc+:xnack-``); the
#: other features of LLVM's generic-processor table (wavefrontsize64, cumode) are -mattr options
TARGET_ID_FEATURES = ("sramecc", "xnack")


def generic_features(name: str) -> list[str] | None:
    """The features LLVM supports for a generic target (``gfx9-4-generic`` -> [xnack, sramecc]);
    None when LLVM's table has no row for it (then no feature may be written in its name)."""
    features = _data()["generic_features"].get(split_arch(name)[0])
    return None if features is None else list(features)


def _validate_generic(pattern: str, p: str) -> str:
    """A generic target, with the target-ID features LLVM allows for it (``gfx9-4-generic:sramecc+``)."""
    base, features = split_arch(p)
    allowed = [f for f in generic_features(base) or [] if f in TARGET_ID_FEATURES]
    for name in features:
        if name not in allowed:
            can = f"it takes {' and '.join(allowed)}" if allowed else "it takes no target-ID feature"
            raise ValueError(f"{pattern.strip()!r}: LLVM lists no {name} feature for {base} ({can})")
    if len(features) != p.count(":"):
        raise ValueError(f"{pattern.strip()!r}: a feature is written name+ or name- (gfx9-4-generic:sramecc+)")
    return p


def override_kinship(hardware: str, target: str) -> str | None:
    """Why code for ``target`` may run on ``hardware`` under an override: ``same gfx``, ``same
    family rdna3``, ``same generic target gfx11-generic``; None when they share neither (a
    different instruction set: the override crashes or hangs)."""
    if split_arch(hardware)[0] == split_arch(target)[0]:
        return "same gfx"
    family = family_of(hardware)
    if family is not None and family == family_of(target):
        return f"same family {family}"
    generic = generic_of(hardware)
    if generic is not None and generic == generic_of(target):
        return f"same generic target {generic}"
    return None


def parse_isa(name: str) -> tuple[str, dict[str, bool]]:
    """An ISA name as rocminfo prints it -> (target, features):
    ``amdgcn-amd-amdhsa--gfx11-generic`` -> (``gfx11-generic``, {}),
    ``amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`` -> (``gfx90a``, {"sramecc": True, "xnack": False}).
    Raises ValueError for anything else."""
    m = _ISA_RE.match(name.strip().lower())
    if not m:
        raise ValueError(f"not an amdgcn ISA name: {name.strip()[:60]!r}")
    return split_arch(m.group(1) + m.group(2))


def describe(gfx: str) -> str:
    """``gfx1100 (rdna3)``, or the bare name when the family is unknown: for messages."""
    family = family_of(gfx)
    return f"{gfx} ({family})" if family else gfx


# -- patterns ---------------------------------------------------------------------------------
def _is_glob(pattern: str) -> bool:
    return any(c in pattern for c in "*?[")


def validate_pattern(pattern: str) -> str:
    """Check a marker/option pattern; returns it normalised (lower case, stripped).

    Accepted: a known gfx (``gfx1100``, features allowed: ``gfx90a:xnack-``), an ``sm_NN``, a
    glob over gfx or sm names that matches a known gfx (``gfx11*``), a family (``rdna3``), an LLVM
    generic target (``gfx11-generic``: matches its members).
    Raises ValueError with a message naming the bad value and what would be accepted.
    """
    if not isinstance(pattern, str):
        raise ValueError(f"architecture pattern must be a string, got {pattern!r}")
    p = pattern.strip().lower()
    if not p:
        raise ValueError("empty architecture pattern")
    if p in _data()["families"]:
        return p
    if split_arch(p)[0] in _data()["generic"]:
        return _validate_generic(pattern, p)
    if _is_glob(p):
        if not _GLOB_RE.match(p):
            raise ValueError(f"bad architecture glob {pattern!r}: it must start with gfx or sm_")
        if p.startswith("gfx") and not any(fnmatch.fnmatchcase(g, p) for g in known_gfx()):
            raise ValueError(f"architecture glob {pattern!r} matches no known gfx")
        return p
    if _SM_RE.match(p):
        return p
    base, _ = split_arch(p)
    if base in _data()["gfx"]:
        return p
    if is_gfx(base):
        raise ValueError(
            f"unknown gfx {base!r} (known: {', '.join(known_gfx())}); a glob like "
            f"'{base[:5]}*' also matches future ones"
        )
    if base.endswith("-generic"):
        raise ValueError(f"unknown generic target {base!r} (known: {', '.join(_data()['generic'])})")
    raise ValueError(
        f"bad architecture pattern {pattern!r}: expected a gfx name (gfx1100), a glob (gfx11*), "
        f"an sm_NN, a generic target (gfx11-generic) or a family ({', '.join(families())})"
    )


def matches(pattern: str, gfx: str) -> bool:
    """Whether the architecture ``gfx`` (features allowed) matches ``pattern``.

    Exact names compare base names; a pattern with features also requires those feature settings
    (``gfx90a:xnack+`` does not match ``gfx90a:xnack-``). Globs match the base name; a family name
    matches every gfx of that family; a generic target matches itself and its members, and with
    features (``gfx9-4-generic:sramecc+``) only those members with the same settings.
    """
    p = pattern.strip().lower()
    base, features = split_arch(gfx)
    if p in _data()["families"]:
        return family_of(base) == p
    if _is_glob(p):
        return fnmatch.fnmatchcase(base, p)
    p_base, p_features = split_arch(p)
    if p_base in _data()["generic"]:
        if base != p_base and base not in _data()["generic"][p_base]:
            return False
    elif p_base != base:
        return False
    return all(features.get(name) == value for name, value in p_features.items())
