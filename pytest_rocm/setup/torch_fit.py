"""Whether a torch fits this machine, judged by the doctor's own checks, and which build a
version string from a package index is. Pure: no I/O."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from packaging.version import InvalidVersion, Version

from pytest_rocm.doctor.build import check_gfx_in_build, check_torch_build
from pytest_rocm.doctor.facts import Build, hardware_gfxs, reinstall_command
from pytest_rocm.doctor.model import Extras
from pytest_rocm.env import wheels
from pytest_rocm.env.model import Environment

#: absent: no torch; fits: a working torch this machine can use; misfit: one it cannot (or broken)
TorchState = Literal["absent", "fits", "misfit"]

NOT_INSTALLED = "torch is not installed"


@dataclass(frozen=True)
class TorchVerdict:
    state: TorchState
    #: one line: what the torch is and why it fits or not
    text: str
    #: the doctor's fix for a misfit (None otherwise)
    fix: str | None = None


def judge_torch(env: Environment, extras: Extras) -> TorchVerdict:
    """The installed torch against this machine: absent, fits (keep it), or misfit (a CUDA build
    on an AMD box, a wheel without this gfx, a torch that fails to import)."""
    if env.torch_error == NOT_INSTALLED:
        return TorchVerdict("absent", NOT_INSTALLED)
    if env.torch_error is not None:
        return TorchVerdict("misfit", f"the installed {env.torch_error}", reinstall_command(env))
    failing = [c for c in (check_torch_build(env, extras), check_gfx_in_build(env, extras)) if c.status == "fail"]
    if failing:
        return TorchVerdict(
            "misfit", f"torch {env.torch} does not fit this machine: {failing[0].evidence}", failing[0].fix
        )
    return TorchVerdict("fits", f"torch {env.torch} ({installed_build(env)} build) fits this machine: kept")


def installed_build(env: Environment) -> Build:
    """The build of the installed torch (a CUDA build without a GPU is still a CUDA build)."""
    if env.hip is not None:
        return "rocm"
    return "cuda" if env.cuda is not None else "cpu"


def build_of(version: str) -> Build | None:
    """The build a torch version from a package index is, by its local label: ``+cpu``,
    ``+cu130``, ``+rocm6.4``; a version without one is PyPI's, which on Linux is the CUDA build.
    None for a label this does not know."""
    local = version.partition("+")[2]
    if not local:
        return "cuda"
    if local.startswith("cpu"):
        return "cpu"
    if local.startswith("rocm"):
        return "rocm"
    if local.startswith("cu") and local[2:3].isdigit():
        return "cuda"
    return None


def fits_machine(version: str, build: Build, env: Environment) -> bool:
    """Whether the torch ``version`` (from a package index) is a ``build`` wheel this machine can
    use: the right build, and for ROCm one whose wheels carry every GPU's gfx (torch_wheels.json)."""
    if build_of(version) != build:
        return False
    if build != "rocm":
        return True
    index = wheels.index_of(version.partition("+")[2])
    gfxs = hardware_gfxs(env)
    if index is None:
        return False
    listed = wheels.wheel_gfx(version, index)
    return all(wheels.kernels_for(listed, g) in ("yes", "override") for g in gfxs)


def newest_fitting(versions: list[str], build: Build, env: Environment) -> str | None:
    """The newest of ``versions`` (``pip index versions torch``) that fits this machine."""
    fitting = []
    for v in versions:
        try:
            fitting.append((Version(v), v))
        except InvalidVersion:
            continue
    fitting.sort(reverse=True)
    return next((v for _, v in fitting if fits_machine(v, build, env)), None)
