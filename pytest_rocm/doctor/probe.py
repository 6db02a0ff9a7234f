"""This machine, probed and diagnosed: the one place the doctor reads the machine (through a Seam;
tests drive it with fake sysfs trees). Changes nothing, needs no GPU.

``diagnose_machine`` is what ``rocm-compat doctor``, ``rocm-compat env``, ``rocm-compat run`` and
the pytest header each ask: detect (or take a recorded environment), probe the facts beyond the
Environment (``probe_extras``: the PCI bus, the NVIDIA driver, the kernel command line, the
MIOpen cache folder), and judge. A recorded environment describes another machine, so nothing
here is probed for it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from pytest_rocm.doctor.checks import Check, Extras, diagnose, diagnose_system, knowledge
from pytest_rocm.env.model import Environment


@dataclass(frozen=True)
class MachineDiagnosis:
    env: Environment
    #: None for a recorded environment (this machine's probes would describe another one), unless the index was asked
    extras: Extras | None
    checks: list[Check]


def diagnose_machine(
    env: Environment | None = None,
    *,
    recorded: bool = False,
    system_only: bool = False,
    seam: Any = None,
    ask_index: bool = False,
    ollama: bool = False,
    ollama_log: tuple[str, str] | None = None,
) -> MachineDiagnosis:
    """The doctor's diagnosis of this machine, as ``rocm-compat doctor`` judges it.

    ``env``: the environment to judge; None detects it (``system_only``: only what needs no torch,
    judged by the system checks, for the header before any test ran). ``recorded``: ``env`` came
    from a file; judged as it is, nothing probed. Raises ``SysrootError`` when the machine must be
    read and ``PYTEST_ROCM_SYSROOT`` is bad. ``ask_index``: also ask PyTorch's index whether the
    torch build is one of its wheels (``rocm-compat doctor`` only: nothing else waits on a network).
    ``ollama``: also look for an Ollama install and, without ``ollama_log`` (its text and where it
    came from), read its service journal; with a recorded environment only the given log is read.
    """
    from pytest_rocm.env.seam import Seam

    if recorded:
        if env is None:
            raise ValueError("a recorded diagnosis needs the recorded environment")
        if not ask_index and ollama_log is None:
            return MachineDiagnosis(env, None, diagnose(env))
        asked = probe_index(seam if seam is not None else Seam(), env, None) if ask_index else Extras()
        asked = probe_ollama(None, asked, ollama_log)
        return MachineDiagnosis(env, asked, diagnose(env, asked))
    from pytest_rocm.env.detect import detect_environment, detect_system_environment

    seam = seam if seam is not None else Seam()
    if env is None:
        env = detect_system_environment(seam) if system_only else detect_environment(seam)
    extras = probe_extras(seam, env)
    if ask_index:
        extras = probe_index(seam, env, extras)
    if ollama or ollama_log is not None:
        extras = probe_ollama(seam if ollama else None, extras, ollama_log)
    return MachineDiagnosis(env, extras, diagnose_system(env, extras) if system_only else diagnose(env, extras))


def install_advice(env: Environment) -> str:
    """The torch install line for this machine, from the doctor's knowledge (the CPU index, a
    CUDA index, or the ROCm index that carries the AMD GPU's gfx)."""
    from pytest_rocm.doctor.facts import install_line
    from pytest_rocm.env.seam import Seam, SysrootError

    try:
        extras = probe_extras(Seam(), env)
    except SysrootError:
        extras = Extras()
    return install_line(env, extras)


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
    answer = index.ask(base, "torch", env.torch, cache_dir=index.default_cache_dir(environ))
    if isinstance(answer, str):
        extras.index_note = f"unknown: {answer}: fell back to the snapshot"
    else:
        extras.torch_on_index = answer
    return extras


def probe_ollama(seam: Any, extras: Extras, log: tuple[str, str] | None) -> Extras:
    """Ollama's install (``seam``: this machine; None: a recorded environment, not looked for) and
    its server log: the given one (text, where from), else its journal where readable."""
    from pytest_rocm.doctor import ollama, ollama_log

    if seam is not None:
        extras.ollama = ollama.find_install(seam)
    if log is None and seam is not None and extras.ollama is not None:
        journal = ollama.read_journal(seam)
        log = (journal, " ".join(ollama.JOURNAL_COMMAND)) if journal is not None else None
    if log is not None:
        extras.ollama_log, extras.ollama_log_from = ollama_log.parse(log[0]), log[1]
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
