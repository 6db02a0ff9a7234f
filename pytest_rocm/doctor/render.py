"""The doctor's outputs: the probe of the facts beyond the Environment (``probe_extras``), the
one-line summary, the full text of ``rocm-compat doctor`` and the README's error table.

Every line about a check is its one-line form (``Check.line``), so the pytest header and
``rocm-compat env`` print exactly what the doctor prints. Reads the machine only through the seam
(tests drive it with fake sysfs trees), changes nothing, needs no GPU.
"""

from __future__ import annotations

import os
from typing import Any

from pytest_rocm._resources import load_json
from pytest_rocm.doctor.checks import Check, CheckStatus, Extras, knowledge, problems
from pytest_rocm.env.model import Environment

#: PCI classes of GPUs: display controllers (0x03xxxx) and processing accelerators (0x12xxxx, Instinct)
GPU_CLASSES = ("0x03", "0x12")


def probe_extras(seam: Any, env: Environment) -> Extras:
    """The facts doctor needs beyond the Environment; every probe failure means 'unknown'."""
    extras = Extras()
    vendors = knowledge()["pci_vendors"]
    try:
        for device in sorted(seam.listdir("/sys/bus/pci/devices")):
            base = f"/sys/bus/pci/devices/{device}"
            try:
                vendor = seam.read_text(f"{base}/vendor").strip().lower()
                klass = seam.read_text(f"{base}/class").strip().lower()
            except OSError:
                continue
            if not klass.startswith(GPU_CLASSES):
                continue
            if vendor == vendors["amd"]:
                extras.pci_amd_gpus.append(device)
            elif vendor == vendors["nvidia"]:
                extras.pci_nvidia_gpus.append(device)
    except OSError:
        pass
    extras.nvidia_driver = any(seam.exists(path) for path in vendors["nvidia_device_files"])
    try:
        extras.kernel_cmdline = seam.read_text("/proc/cmdline").strip()
    except (OSError, ValueError):
        extras.kernel_cmdline = None
    path = env.variables.get("MIOPEN_USER_DB_PATH") or knowledge()["miopen_default_db"]["path"]
    home = seam.getenv("HOME") or "~"
    path = path.replace("~", home, 1) if path.startswith("~") else path
    extras.miopen_path = path
    extras.miopen_writable = _writable(seam.path(path))
    torch_dir = seam.module_dir("torch") if hasattr(seam, "module_dir") else None
    prefix = seam.python_prefix() if hasattr(seam, "python_prefix") else None
    extras.install_paths = {k: v for k, v in (("torch", torch_dir), ("the Python environment", prefix)) if v}
    return extras


def probe_index(seam: Any, env: Environment, extras: Extras | None = None) -> Extras:
    """Ask PyTorch's index whether the installed torch build is one of its wheels (``rocm-compat
    doctor`` only: the pytest header never waits on a network). Offline with PYTEST_ROCM_OFFLINE=1."""
    from pytest_rocm.env import index, wheels

    extras = extras or Extras()
    origin = wheels.build_origin(env.torch)
    if origin is None or env.torch is None or origin.kind not in ("pytorch-release", "amd"):
        return extras
    local = env.torch.split("+", 1)[1]
    if origin.amd is not None and origin.amd.id != "amd-release":
        return extras  # a nightly or a git build: no PyTorch index can hold it
    environ = seam.environ
    if index.is_offline(environ):
        extras.index_note = f"the index was not asked ({index.OFFLINE_VARIABLE}=1)"
        return extras
    base = f"{index.pytorch_index(environ).rstrip('/')}/{local}"
    answer = index.lookup(base, "torch", env.torch, cache_dir=index.default_cache_dir(environ))
    if answer is None:
        extras.index_note = f"{base} could not be reached"
    extras.torch_on_index = answer
    return extras


def _writable(path: Any) -> bool:
    """Whether a folder can be written, or created below its nearest existing parent."""
    current = path
    while not current.exists():
        if current.parent == current:
            return False
        current = current.parent
    # a file where a folder should be cannot hold the cache, whoever we are (even root)
    return current.is_dir() and os.access(current, os.W_OK | os.X_OK)


#: how the summary names each problem status
SUMMARY_LABELS: tuple[tuple[CheckStatus, str], ...] = (("fail", "failing"), ("warn", "warnings"))


def summary_line(checks: list[Check]) -> str | None:
    """The line that closes the doctor's output, and the header's doctor lines, when something is
    wrong; None when all is well."""
    found = problems(checks)
    if not found:
        return None
    noun = "problem" if len(found) == 1 else "problems"
    groups = []
    for status, label in SUMMARY_LABELS:
        ids = [c.id for c in found if c.status == status]
        if ids:
            groups.append(f"{label}: {', '.join(ids)}")
    return f"rocm doctor: {len(found)} {noun} ({'; '.join(groups)}), run `rocm-compat doctor`"


def render_text(checks: list[Check]) -> str:
    """``rocm-compat doctor``: every check's one-line form, the fix under each problem, the summary."""
    lines = []
    for c in checks:
        lines.append(c.line)
        if c.fix and c.is_problem:
            lines.append(f"       fix: {c.fix}")
    lines.append("")
    lines.append(summary_line(checks) or "rocm doctor: no problems found")
    return "\n".join(lines)


def known_errors() -> list[dict[str, Any]]:
    return list(load_json("known_errors.json")["errors"])


def errors_table() -> str:
    """The README's "common errors" table, generated from the same data doctor uses."""
    rows = ["| error | doctor check | fix |", "| --- | --- | --- |"]
    for e in known_errors():
        message = e["message"].replace("|", "\\|").replace("`", "'")
        check = f"`{e['check']}`" if e["check"] else "(library suites)"
        rows.append(f"| `{message}` | {check} | {e['fix'].replace('|', '/')} |")
    return "\n".join(rows)
