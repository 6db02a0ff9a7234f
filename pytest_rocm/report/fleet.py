"""What a fleet needs to merge reports safely: which machine measured, with which tool.

A report names its environment; many reports from many machines also need a **machine id** that
is stable across runs and dates but not personal, and the **tool version** that wrote them (a
newer pytest-rocm may name or judge rows differently). Both are envelope fields of report/1
(``machine``, ``tool``); the run date is the report's ``created``. Reports older than the fields
get the machine id computed here from their environment, so old and new reports of one machine
agree.

The id hashes the PCI vendor and device ids and the gfx of every GPU the kernel lists (sorted: the
order of KFD nodes does not matter); no host name, serial, MAC or board unique id goes in, so two
identical nodes share an id, on purpose: it names the hardware, not the person or the host. A
host is named only when the run was given one (``--rocm-host-label``). Stdlib only.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pytest_rocm._resources import VERSION

TOOL_NAME = "pytest-rocm"


def tool_record() -> dict[str, str]:
    """``{"name": "pytest-rocm", "version": "0.1.0"}``: the ``tool`` field of a report this writes."""
    return {"name": TOOL_NAME, "version": VERSION}


def _hex(value: Any) -> str:
    return f"{value:04x}" if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else "????"


def machine_basis(environment: Mapping[str, Any]) -> str:
    """What the machine id hashes, readable: ``pci 1002:164e gfx1036; pci 1002:73bf gfx1030``, ``8x pci 1002:74a1 gfx942``.

    The GPUs the kernel lists (KFD nodes: vendor, device id, gfx); without those (an NVIDIA
    machine, a recorded environment without sysfs facts), the devices torch saw (name and arch);
    ``no GPU`` for a CPU-only machine."""
    system = environment.get("system")
    gpus = system.get("gpus") if isinstance(system, Mapping) else None
    parts = [
        f"pci {_hex(g.get('vendor_id'))}:{_hex(g.get('device_id'))} {g.get('gfx') or 'unknown'}"
        for g in (gpus if isinstance(gpus, list) else [])
        if isinstance(g, Mapping)
    ]
    if not parts:
        devices = environment.get("devices")
        parts = [
            f"device {d.get('name') or 'unknown'} {d.get('gfx') or d.get('arch') or 'unknown'}"
            for d in (devices if isinstance(devices, list) else [])
            if isinstance(d, Mapping)
        ]
    counted = sorted(set(parts))  # 8 identical MI300X: "8x pci 1002:74a1 gfx942"
    return "; ".join(f"{parts.count(p)}x {p}" if parts.count(p) > 1 else p for p in counted) or "no GPU"


def machine_id(environment: Mapping[str, Any]) -> str:
    """``m-`` and 16 hex digits of the SHA-256 of :func:`machine_basis`: stable, not personal."""
    return "m-" + hashlib.sha256(machine_basis(environment).encode("utf-8")).hexdigest()[:16]


def machine_record(environment: Mapping[str, Any], host: str | None = None) -> dict[str, Any]:
    """The report's ``machine`` field: ``{"id", "basis", "host"}`` (``host``: --rocm-host-label, else null)."""
    return {"id": machine_id(environment), "basis": machine_basis(environment), "host": host}


def machine_of(document: Mapping[str, Any]) -> dict[str, Any]:
    """The machine of a report: its ``machine`` field, else computed from its environment (older reports)."""
    recorded = document.get("machine")
    environment = document.get("environment")
    derived = machine_record(environment if isinstance(environment, Mapping) else {})
    if isinstance(recorded, Mapping) and isinstance(recorded.get("id"), str) and recorded["id"]:
        return {**derived, **{k: v for k, v in recorded.items() if v is not None}}
    return derived


def columns_by_host(documents: Sequence[Mapping[str, Any]]) -> tuple[list[str], tuple[int, int] | None]:
    """The column label of each report: its label, or ``label on host`` where several share a
    label and each of them named a host of its own. Else None for the labels and the indices of
    the first two reports that share one."""
    labels = [str(d.get("label")) for d in documents]
    out = list(labels)
    for label in dict.fromkeys(labels):
        members = [i for i, other in enumerate(labels) if other == label]
        if len(members) < 2:
            continue
        hosts = [machine_of(documents[i]).get("host") for i in members]
        if None in hosts or len(set(hosts)) < len(hosts):
            return labels, (members[0], members[1])
        for i, host in zip(members, hosts, strict=True):
            out[i] = f"{label} on {host}"
    seen: dict[str, int] = {}
    for i, column in enumerate(out):  # a renamed column may meet a label given as such
        if column in seen:
            return labels, (seen[column], i)
        seen[column] = i
    return out, None


def machine_note(base: Mapping[str, Any], candidate: Mapping[str, Any]) -> str | None:
    """One line when the two reports were measured on different hardware (machine ids differ):
    the gate then compares machines as much as versions. None on the same hardware."""
    before, after = machine_of(base), machine_of(candidate)
    if before["id"] == after["id"]:
        return None

    def named(machine: Mapping[str, Any]) -> str:
        host = f", host {machine['host']}" if machine.get("host") else ""
        return f"{machine['id']} ({machine['basis']}{host})"

    return (
        f"measured on different machines (BASE {named(before)}; CANDIDATE {named(after)}): "
        "a difference may be the hardware's, not the upgrade's"
    )


def tool_version_of(document: Mapping[str, Any]) -> str | None:
    """The pytest-rocm version that wrote the report; None in reports older than the field."""
    tool = document.get("tool")
    version = tool.get("version") if isinstance(tool, Mapping) else None
    return version if isinstance(version, str) and version else None


def tool_version_note(documents: Sequence[Mapping[str, Any]], labels: Iterable[str]) -> str | None:
    """One line when the reports were written by different pytest-rocm versions (or some by a
    version too old to say): rows may be named or judged differently between them. None when all
    agree."""
    versions = [tool_version_of(d) or "not recorded" for d in documents]
    if len(set(versions)) <= 1:
        return None
    groups: dict[str, list[str]] = {}
    for version, label in zip(versions, labels, strict=False):
        groups.setdefault(version, []).append(label)
    said = "; ".join(f"{version}: {', '.join(names)}" for version, names in groups.items())
    # one recorded version beside reports that recorded none: they may be the same version, so
    # "different" would be a guess
    recorded = {version for version in versions if version != "not recorded"}
    differ = "different" if len(recorded) > 1 else "possibly different"
    return (
        f"reports written by {differ} pytest-rocm versions ({said}): a row may be named or judged "
        "differently between them; compare columns of one version where it matters"
    )
