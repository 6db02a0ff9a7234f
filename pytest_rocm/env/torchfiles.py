"""What the installed torch says about itself without being imported, and detection built on it.

``import torch`` costs ~2 s of CPU; a report needs the environment whether or not the suite ever
imported torch. Much of what detection learns from the module is in its installed files:
``torch/version.py`` holds ``__version__``, ``hip`` and ``cuda`` (read here as data with ``ast``:
literal assignments only, nothing of it is run), and the dist-info's ``Version`` cross-checks it.
The rest, the devices and the build's arch list, comes from the GPU runtime, which finds **no
device** where the kernel shows none: a ROCm build without ``/dev/kfd``, without access to it or
without a GPU node; a CUDA build without the NVIDIA driver (``/proc/driver/nvidia``, ``/dev/nvidiactl``;
WSL's CUDA has neither, so it is left to torch). ``torch.cuda.get_arch_list()`` is then empty too.

:func:`detect_without_torch` runs the usual detection (``env.detect``) with a stand-in for the torch
module that answers only those facts, so its Environment is the one an import would give; where the
files cannot tell (a GPU build on a machine with a GPU, a ``version.py`` that is not plain literals,
a dist-info of another version, a fake torch in a test's seam) it gives None and the caller imports.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from types import ModuleType, SimpleNamespace
from typing import Any

from pytest_rocm.env.model import Environment, SystemInfo
from pytest_rocm.env.seam import Seam, SysrootError

#: the names of torch/version.py read here, and nothing else
_FIELDS = ("__version__", "hip", "cuda")


@dataclass(frozen=True)
class TorchBuild:
    """What torch/version.py says: ``2.6.0+rocm6.2.4``, ``torch.version.hip``, ``torch.version.cuda``."""

    version: str
    hip: str | None
    cuda: str | None


def parse_version_file(text: str) -> TorchBuild | None:
    """The build a ``torch/version.py`` describes, from its module-level literal assignments
    (``__version__ = '2.13.0+cpu'``, ``hip: Optional[str] = None``); None when it is not such a
    file (a value that is not a string or None, no ``__version__``, not Python at all)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    found: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name) and target.id in _FIELDS:
            try:
                found[target.id] = ast.literal_eval(value)
            except ValueError:  # an expression, not a literal: only an import would know its value
                return None
    version = found.get("__version__")
    if not isinstance(version, str) or not version:
        return None
    if not all(found.get(name) is None or isinstance(found[name], str) for name in ("hip", "cuda")):
        return None
    return TorchBuild(version, found.get("hip") or None, found.get("cuda") or None)


class _NotInstalled(ModuleNotFoundError):
    def __init__(self) -> None:
        super().__init__("No module named 'torch'", name="torch")


def installed_build(seam: Seam) -> TorchBuild | _NotInstalled | None:
    """The build ``import torch`` would load, read from its files: a TorchBuild, ``_NotInstalled``
    when nothing would be imported, None when the files cannot say (see the module docstring)."""
    text = seam.torch_version_text()
    if text == "":
        return _NotInstalled()
    build = parse_version_file(text) if text is not None else None
    if build is None:
        return None
    recorded = seam.distribution_version("torch")
    if recorded is not None and recorded != build.version:
        return None  # the metadata found is another torch's: let the import say which one runs
    return build


def runtime_finds_no_device(build: TorchBuild, system: SystemInfo, seam: Seam) -> bool:
    """Whether the GPU runtime of this build would see no device here (``torch.cuda.is_available()``
    False), told from the kernel's view alone; False where only the runtime can tell."""
    if build.hip:
        return not system.kfd or system.kfd_access is False or not system.gpus
    if build.cuda:
        driver = seam.exists("/proc/driver/nvidia/version") or seam.exists("/dev/nvidiactl")
        return not driver and not system.wsl
    return True  # a CPU build has no GPU runtime


def _stand_in(build: TorchBuild) -> ModuleType:
    """A torch module that answers what detection asks of a torch that sees no device."""
    torch = ModuleType("torch")
    vars(torch).update(
        __version__=build.version,
        version=SimpleNamespace(hip=build.hip, cuda=build.cuda),
        # what torch.cuda answers where the runtime finds no device (get_arch_list: [] then too)
        cuda=SimpleNamespace(get_arch_list=list, is_available=lambda: False, device_count=lambda: 0),
    )
    return torch


def detect_without_torch(seam: Seam | None = None) -> Environment | None:
    """The Environment ``env.detect.detect_environment`` gives, without importing torch; None where
    that needs the import (then detect as usual)."""
    from pytest_rocm.env.detect import detect_environment
    from pytest_rocm.env.system import detect_system

    try:
        seam = seam if seam is not None else Seam()
    except SysrootError:
        return None  # detect_environment says why
    build = installed_build(seam)
    if build is None:
        return None
    if isinstance(build, TorchBuild) and (build.hip or build.cuda):
        try:
            if not runtime_finds_no_device(build, detect_system(seam), seam):
                return None
        except Exception:  # a probe that fails here fails again in the detection that follows
            return None

    def load() -> ModuleType:
        if isinstance(build, _NotInstalled):
            raise build
        assert isinstance(build, TorchBuild)
        return _stand_in(build)

    return detect_environment(seam.with_torch_loader(load))
