"""Sizes and versions as the markers read them: ``min_vram("16GiB")``, ``rocm_version(">=6.1")``.

A build counts as its release (``2.7.0.dev20250306+rocm6.3`` and ``2.10.0a0+rocm7.10.0a20251120``
count as 2.7.0 and 2.10.0), so ``torch_version(">=2.7")`` holds on a 2.7 nightly. A specifier that
itself names a pre-release (``">=2.7.0.dev20250301"``) compares the full public version instead,
so nightlies can be told apart. packaging is imported inside the functions that need it: a suite
using no marker of ours should not pay for importing it (benchmarks/bench_plugin_overhead.py).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version


_UNITS = {
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")


def parse_size(value: Any) -> int:
    """``"16GiB"`` / ``"512 MiB"`` / ``"16GB"`` (decimal) / ``17179869184`` -> bytes."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"bad size {value!r}: give bytes (int) or a string like '16GiB'")
    if isinstance(value, int):
        if value <= 0:
            raise ValueError(f"bad size {value!r}: must be positive")
        return value
    m = _SIZE_RE.match(value)
    unit = m.group(2).lower() if m else ""
    if not m or (unit not in _UNITS and unit != ""):
        raise ValueError(f"bad size {value!r}: use bytes or a number with one of B, KB, MB, GB, TB, KiB, MiB, GiB, TiB")
    size = int(float(m.group(1)) * _UNITS.get(unit, 1))
    if size <= 0:
        raise ValueError(f"bad size {value!r}: must be positive")
    return size


def parse_specifier(spec: Any) -> SpecifierSet:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"bad version specifier {spec!r}: expected a string like '>=6.1,<6.3'")
    try:
        return SpecifierSet(spec)
    except InvalidSpecifier:
        hint = (
            f" (did you mean '>={spec.strip()}' or '=={spec.strip()}.*'?)"
            if _leading_version(spec) == spec.strip()
            else ""
        )
        raise ValueError(f"bad version specifier {spec!r}{hint}") from None


_LEADING_RE = re.compile(r"^\s*v?(\d+(?:\.\d+)*)")


def _leading_version(text: str) -> str | None:
    m = _LEADING_RE.match(text)
    return m.group(1) if m else None


def parse_version(text: str) -> Version | None:
    """A version from what builds report: PEP 440, else its leading numbers (hip ``6.2.41134-65d174c3e``)."""
    from packaging.version import InvalidVersion, Version

    try:
        return Version(text)
    except InvalidVersion:
        lead = _leading_version(text)
        return Version(lead) if lead else None


def satisfies(spec: SpecifierSet, version: str) -> bool:
    """Whether ``version`` satisfies ``spec``, counting nightlies/pre-releases by their release
    unless the specifier itself names a pre-release (see the module docstring)."""
    from packaging.version import Version

    parsed = parse_version(version)
    if parsed is None:
        return False
    if any(Version(s.version.rstrip(".*")).is_prerelease for s in spec if _is_version(s.version)):
        return spec.contains(Version(parsed.public), prereleases=True)
    return spec.contains(Version(parsed.base_version), prereleases=True)


def _is_version(text: str) -> bool:
    from packaging.version import InvalidVersion, Version

    try:
        Version(text.rstrip(".*"))
        return True
    except InvalidVersion:
        return False
