"""Knowledge the checks decide from (``data/doctor.json``) and the small facts they derive from an
Environment. Pure: no I/O beyond reading the bundled data."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any, Literal, NamedTuple

from packaging.version import InvalidVersion, Version

from pytest_rocm._resources import load_json
from pytest_rocm.doctor.model import Extras
from pytest_rocm.env import arch, wheels
from pytest_rocm.env.model import Environment

ROCM_INDEX = "https://download.pytorch.org/whl/rocm{}"
#: the variables that hide GPUs from HIP (CUDA_VISIBLE_DEVICES is honoured by HIP too)
VISIBILITY = ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")


def knowledge() -> dict[str, Any]:
    data: dict[str, Any] = load_json("doctor.json")
    return data


@cache
def apu_gfxs() -> frozenset[str]:
    """The gfx targets of APUs (integrated GPUs sharing system memory), from doctor.json."""
    return frozenset(knowledge()["apu_gfx"]["list"])


def amd_present(env: Environment, extras: Extras) -> bool:
    return bool(env.system.gpus) or bool(extras.pci_amd_gpus)


def nvidia_present(env: Environment, extras: Extras) -> bool:
    """An NVIDIA GPU on the PCI bus, its driver's device files, or a CUDA torch that sees one."""
    return bool(extras.pci_nvidia_gpus) or bool(extras.nvidia_driver) or (env.backend == "cuda" and bool(env.devices))


#: the builds a torch wheel can be
Build = Literal["cpu", "cuda", "rocm"]


class TorchSource(NamedTuple):
    """Where this machine's torch comes from: an index URL, and why when it is not the obvious one."""

    #: the index to install torch from
    url: str
    #: a remark for the user (the gfx a ROCm index lacks, the CUDA index to pick by driver)
    note: str | None
    #: which build that index serves
    build: Build


def torch_source(env: Environment, extras: Extras) -> TorchSource:
    """The index of the torch build for this machine: the ROCm index fitting the AMD GPU's gfx, a
    CUDA index on an NVIDIA box, the CPU index on a machine with neither. The one choice: the
    doctor's install line and ``rocm-compat setup`` both take it from here."""
    if amd_present(env, extras):
        index, note, _ = wheel_advice(env)
        return TorchSource(index, note, "rocm")
    if nvidia_present(env, extras):
        cuda = knowledge()["torch_install"]
        return TorchSource(str(cuda["cuda_index"]), str(cuda["cuda_note"]), "cuda")
    return TorchSource(wheels.cpu_index(), None, "cpu")


def install_line(env: Environment, extras: Extras) -> str:
    """The torch install line for this machine, never a bare ``pip install torch`` (on Linux that
    is the CUDA build): ``pip install torch --index-url`` :func:`torch_source`, with its note."""
    url, note, _ = torch_source(env, extras)
    command = f"pip install torch --index-url {url}"
    return f"{command} ({note})" if note else command


def hardware_gfxs(env: Environment) -> list[str]:
    """The real silicon of every AMD GPU, in KFD order (the order HIP enumerates them)."""
    gfxs = [g.gfx for g in env.system.gpus if g.gfx]
    if not gfxs:
        gfxs = [d.hardware_gfx or d.gfx for d in env.devices if d.gfx.startswith("gfx")]
    return gfxs


def kernel_gpus(env: Environment) -> str:
    """``1 AMD GPU (gfx90a)``, ``2 AMD GPUs (gfx1030, gfx1036)``: the KFD topology's GPUs."""
    n = len(env.system.gpus)
    names = sorted({g.gfx or "unknown gfx" for g in env.system.gpus})
    return f"{n} AMD GPU{'s' if n != 1 else ''} ({', '.join(names)})"


def amd_seen(env: Environment, extras: Extras) -> str:
    """Where an AMD GPU was seen, to follow "but": ``the kernel reports 1 AMD GPU (gfx90a)``."""
    if env.system.gpus:
        return f"the kernel reports {kernel_gpus(env)}"
    return f"there is an AMD GPU at {', '.join(extras.pci_amd_gpus) or 'the PCI bus'}"


def built_gfx(env: Environment) -> set[str]:
    """The base gfx names of the build's arch list (a source build may list ``gfx90a:xnack-``)."""
    return {arch.split_arch(a)[0] for a in env.arch_list}


def torch_rocm_pair(env: Environment) -> tuple[str, str] | None:
    """(torch minor, ROCm version) of a ROCm wheel from ``2.6.0+rocm6.2.4``; None otherwise."""
    if not env.torch or "+rocm" not in env.torch:
        return None
    public, local = env.torch.split("+", 1)
    rocm = local.removeprefix("rocm").split(".git")[0]
    try:
        release = Version(public).release
    except InvalidVersion:
        return None
    return f"{release[0]}.{release[1]}", rocm


def _carries(listed: list[str] | None, gfxs: list[str]) -> bool:
    """Whether the wheel's kernels serve every GPU (its own gfx, or its usual override's target)."""
    return listed is not None and all(wheels.kernels_for(listed, g) in ("yes", "override") for g in gfxs)


class WheelAdvice(NamedTuple):
    #: the index URL to install torch from
    url: str
    #: why, when it is not the obvious one
    note: str | None
    #: whether a PyTorch wheel there carries every GPU's gfx (False: only AMD's index or a source build)
    carried: bool = True


def wheel_advice(env: Environment) -> WheelAdvice:
    """The index URL to install torch from, a note why when it is not the obvious one, and whether
    its wheels carry the GPUs at all.

    The index is one whose wheels carry every GPU's gfx (or its usual override's target): first
    the newest published for the installed ROCm's major.minor, else the newest of all. When no
    PyTorch wheel carries the gfx, the installed ROCm's index (or the newest) and a note that
    names AMD's own index for it."""
    pairs = wheels.published_pairs()
    gfxs = sorted(set(hardware_gfxs(env)))
    # (torch minor, ROCm) newest first: the newest torch an index has decides what it installs
    offers = sorted(
        ((minor, rocm) for minor, rocms in pairs.items() for rocm in rocms),
        key=lambda p: (Version(p[1]), Version(p[0])),
        reverse=True,
    )
    newest_torch: dict[str, str] = {}
    for minor, rocm in sorted(offers, key=lambda p: Version(p[0]), reverse=True):
        newest_torch.setdefault(rocm, minor)
    rocms = list(dict.fromkeys(rocm for _, rocm in offers))
    same = _same_rocm(env, rocms)
    if not gfxs:
        return WheelAdvice(ROCM_INDEX.format((same or rocms)[0]), None)
    fitting = [r for r in rocms if _carries(wheels.wheel_gfx(f"{newest_torch[r]}.0", f"rocm{r}"), gfxs)]
    for rocm in [r for r in same if r in fitting] or fitting:
        if same and rocm not in same:
            lacking = f"the ROCm {same[0]} wheels (torch {newest_torch[same[0]]}) lack {', '.join(gfxs)}"
            note = f"{lacking}; torch {newest_torch[rocm]} on rocm{rocm} carries it (the wheel brings its own ROCm libraries)"
            return WheelAdvice(ROCM_INDEX.format(rocm), note)
        return WheelAdvice(ROCM_INDEX.format(rocm), None)
    amd = [f"{url} ({install})" for g in gfxs for url, install in wheels.amd_indexes_for(g)]
    note = f"no PyTorch ROCm wheel carries {', '.join(gfxs)}" + (f"; AMD's index does: {amd[0]}" if amd else "")
    return WheelAdvice(ROCM_INDEX.format((same or rocms)[0]), note, carried=False)


def _same_rocm(env: Environment, rocms: list[str]) -> list[str]:
    """The published ROCm versions with the installed ROCm's major.minor, newest first."""
    installed = env.system.rocm_version
    if not installed:
        return []
    try:
        want = Version(installed.split("-")[0]).release[:2]
    except InvalidVersion:
        return []
    return [r for r in rocms if Version(r).release[:2] == want]


def reinstall_command(env: Environment) -> str:
    index, note, _ = wheel_advice(env)
    command = f"pip uninstall -y torch torchvision torchaudio && pip install torch --index-url {index}"
    return f"{command} ({note})" if note else command


def sdpa_not_offered_hint(arch_name: str, variables: Mapping[str, str | None]) -> str | None:
    """What to say when flash or memory-efficient SDPA is "not offered" on this architecture: on
    RDNA3/3.5/4 AOTriton's kernels are experimental and off unless
    TORCH_ROCM_AOTRITON_ENABLE_EXPERIMENTAL=1; None elsewhere, or when it is already set."""
    facts = knowledge()["sdpa_experimental"]
    gfx = arch.split_arch(arch_name)[0]
    if arch.family_of(gfx) not in facts["families"] or variables.get(facts["variable"]) == "1":
        return None
    return f"on {arch.describe(gfx)} AOTriton's flash/efficient kernels are experimental: export {facts['variable']}=1"
