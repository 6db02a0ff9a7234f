"""Vet a whole dependency set at once: every distribution installed here (``--installed``), or
every pinned dependency of a ``requirements.txt``, ``pyproject.toml``, ``uv.lock`` or
``pylock.toml`` that is installed or present as a wheel in ``--wheels DIR``.

One row per package (name, version, class, confidence, the deciding evidence, and for class 3
the gfx targets its binaries were built for next to this machine's GPUs): the checklist a team
goes through by hand before a project moves to AMD. The stack's exit status is 1 when any
package is class 4 (a CI gate for the dependency set), and 3 when a row could not be vetted (no
artifact found, a target refused): unvetted is not safe, so the gate fails closed on it too.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from pytest_rocm.vet import gfx
from pytest_rocm.vet.artifacts import Artifacts, Pin, locate, locate_link
from pytest_rocm.vet.artifacts import wheel_index as wheel_index  # the CLI and tests name it here
from pytest_rocm.vet.gpu_fit import basis, loaded_variant, torch_build, variant_gpu_fit, variants
from pytest_rocm.vet.gpu_fit import gpu_fit as gpu_fit  # the tests name it here
from pytest_rocm.vet.reqfile import parse_requirement, read_requirements_txt
from pytest_rocm.vet.target import BadTarget

SCHEMA = "pytest-rocm/vet-stack/1"


def _exact(version: str) -> SpecifierSet:
    """The specifier of a lock file's (or an installed) version: ``==version``; ``===version``
    for one PEP 440 cannot parse; empty when not even that can be written."""
    try:
        Version(version)
        return SpecifierSet(f"=={version}")
    except InvalidVersion:
        pass
    try:
        return SpecifierSet(f"==={version}")
    except InvalidSpecifier:
        return SpecifierSet()


def _toml(path: Path) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]
    try:
        doc: dict[str, Any] = tomllib.loads(path.read_bytes().decode("utf-8"))
        return doc
    except UnicodeDecodeError as exc:
        raise BadTarget(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise BadTarget(f"{path}: not valid TOML ({exc})") from None


def _requirement(text: str, where: str) -> Pin | None:
    req = parse_requirement(text, where)
    if req.marker is not None and not req.marker.evaluate({"extra": ""}):
        return None  # not for this platform/Python, or an extra's
    pinned = [s.version for s in req.specifier if s.operator in ("==", "===") and "*" not in s.version]
    if req.url:  # name @ URL: vetted from the file it names, never from the index or this install
        return Pin(canonicalize_name(req.name), None, where, req.specifier, link=req.url, link_kind="url")
    return Pin(canonicalize_name(req.name), pinned[0] if pinned else None, where, req.specifier)


def _from_lock(path: Path, table: str) -> list[Pin]:
    doc = _toml(path)
    pins = []
    for i, pkg in enumerate(doc.get(table, [])):
        if not isinstance(pkg, dict) or not isinstance(pkg.get("name"), str):
            raise BadTarget(f"{path}: [[{table}]] entry {i + 1} has no name")
        version = pkg.get("version")
        version = str(version) if version else None
        spec = _exact(version) if version else SpecifierSet()
        pins.append(Pin(canonicalize_name(pkg["name"]), version, f"{path.name}", spec))
    return pins


def _from_pyproject(path: Path) -> list[Pin]:
    deps = _toml(path).get("project", {}).get("dependencies", [])
    if not isinstance(deps, list):
        raise BadTarget(f"{path}: [project] dependencies is not a list")
    pins = [_requirement(str(d), f"{path.name} [project] dependencies") for d in deps]
    return [p for p in pins if p is not None]


def read_stack(path: Path) -> tuple[list[Pin], list[str]]:
    """The dependencies a file names, and the requirement lines skipped because their marker is
    false here (said in the table, never silent). Raises BadTarget (one line) on a bad file."""
    if path.is_file() and path.name.lower().endswith((".txt", ".in")):
        found = read_requirements_txt(path)
        return found.pins, found.skipped
    return read_pins(path), []


def read_pins(path: Path) -> list[Pin]:
    """The dependencies a file names. Raises BadTarget (one line) on a bad or unknown file."""
    if not path.is_file():
        raise BadTarget(f"{path}: no such file (or not a regular file)")
    name = path.name.lower()
    if name == "uv.lock":
        return _from_lock(path, "package")
    if name == "pylock.toml" or (name.startswith("pylock.") and name.endswith(".toml")):
        return _from_lock(path, "packages")
    if name == "pyproject.toml":
        return _from_pyproject(path)
    if name.endswith((".txt", ".in")):
        return read_requirements_txt(path).pins
    raise BadTarget(f"{path}: not a requirements file, pyproject.toml, uv.lock or pylock.toml")


def installed_pins() -> list[Pin]:
    seen: dict[str, Pin] = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name:
            pin = Pin(canonicalize_name(name), dist.version, "installed", _exact(dist.version))
            seen.setdefault(pin.name, pin)
    return sorted(seen.values(), key=lambda p: p.name)


def machine_gpus() -> list[str]:
    """This machine's gfx names, from the kernel (no torch, no ROCm user space)."""
    try:
        from pytest_rocm.env.seam import Seam
        from pytest_rocm.env.system import detect_system

        return sorted({g.gfx for g in detect_system(Seam()).gpus if g.gfx})
    except Exception:  # detection records its own failures; here no GPU is the answer
        return []


VetOne = Callable[[str], dict[str, Any]]


def vet_stack(
    pins: list[Pin],
    wheels: Artifacts,
    vet_one: VetOne,
    gpus: list[str],
    rocm: str | None = None,
    skipped: list[str] | None = None,
    gpus_from: str = "this machine",
) -> dict[str, Any]:
    """The stack document: a row per pin (``rocm``: this environment's torch ROCm version, which
    picks the variant of a package that ships one library per ROCm version; ``skipped``: the
    lines whose marker is false here; ``gpus_from``: where ``gpus`` came from, ``--gpu`` or this
    machine)."""
    rows = [_row(pin, wheels, vet_one, gpus, rocm) for pin in pins]
    failing = [r["package"] for r in rows if r["class"] == 4]
    unvetted = [r["package"] for r in rows if r["class"] is None]
    partial = [r["package"] for r in rows if r.get("at_least")]
    return {
        "schema": SCHEMA,
        "machine_gpus": gpus,
        "gpus_from": gpus_from,
        "torch_rocm": rocm,
        "packages": rows,
        "class_4": failing,
        "unvetted": unvetted,
        "partial": partial,
        "skipped": skipped or [],
        "cpu_only_torch": next((r["cpu_build"] for r in rows if r.get("cpu_build")), None),
    }


def _row(pin: Pin, wheels: Artifacts, vet_one: VetOne, gpus: list[str], rocm: str | None) -> dict[str, Any]:
    spec, note = locate_link(pin, wheels) if pin.link is not None else locate(pin, wheels)
    row: dict[str, Any] = {"package": pin.name, "pinned": pin.version, "source": pin.source, "note": note}
    if pin.link is not None:
        row["link"] = pin.link
    if spec is None:
        return {**row, "version": None, "class": None, "confidence": None, "reason": note}
    try:
        doc = vet_one(spec)
    except BadTarget as exc:
        return {**row, "version": None, "class": None, "confidence": None, "reason": str(exc)}
    targets = gfx.order({t for ts in doc["gfx_targets"].values() for t in ts})
    by_variant = variants(doc["gfx_targets"])
    based_on = basis(doc)
    if by_variant:
        gpus_column = variant_gpu_fit(by_variant, gpus, rocm)
    else:
        gpus_column = gpu_fit(targets, gpus) if targets else based_on
    build = torch_build(doc.get("name", ""), doc["version"])
    reason = doc["reason"] if build is None else f"{build}; {doc['reason']}"
    return {
        **row,
        "version": doc["version"],
        "target": spec,
        "class": doc["class"],
        "at_least": doc.get("at_least") or None,  # a partial read: a floor, and not fully vetted
        "confidence": doc["confidence"],
        "reason": reason,
        "contrary": doc["contrary_notes"][:1],
        "gfx_targets": targets,
        "gfx_variants": by_variant,
        "torch_loads": loaded_variant(by_variant, rocm) if by_variant else None,
        "basis": based_on,
        "gpus": gpus_column if doc["class"] == 3 else None,
        "cpu_build": f"{doc['name']} {doc['version']}" if build and "CPU build" in build else None,
        "gfx_notes": doc.get("gfx_notes") or {},
    }


def unvetted_summary(doc: dict[str, Any]) -> str | None:
    """``2 of 5 packages not vetted: missingpkg (not installed and no wheel or sdist for it in --wheels),
    odd (...)``, and the rows vetted from a partial read; None when every row was vetted in full."""
    rows = [r for r in doc["packages"] if r["class"] is None]
    partial = [r for r in doc["packages"] if r.get("at_least")]
    words = []
    if rows:
        why = ", ".join(f"{r['package']} ({r['reason'] or 'no reason recorded'})" for r in rows)
        words.append(f"{len(rows)} of {len(doc['packages'])} packages not vetted: {why}")
    if partial:
        why = ", ".join(f"{r['package']} (at least class {r['class']}: {r['at_least']})" for r in partial)
        words.append(f"{len(partial)} of {len(doc['packages'])} packages not fully vetted: {why}")
    if not doc["packages"]:
        words.append("no package to vet: the file names none for this platform")
    return "; ".join(words) or None
