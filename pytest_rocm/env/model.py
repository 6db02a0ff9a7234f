"""The Environment model (docs/design.md, schema ``pytest-rocm/environment/1``) and its JSON form.

Pure data: no I/O beyond reading/writing a JSON file, no torch. Detection lives in ``detect``.
Every decision the plugin makes (markers, skips, the report's columns, doctor's checks) is made
from one of these, so a recorded one (``--rocm-env FILE``) behaves exactly like a detected one.
"""

from __future__ import annotations

import json
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

SCHEMA = "pytest-rocm/environment/1"

#: what a run is on: a ROCm build of torch (torch.version.hip set), a CUDA build, or the CPU
Backend = Literal["rocm", "cuda", "cpu"]
BACKENDS: tuple[Backend, ...] = ("rocm", "cuda", "cpu")

#: Variables that change what a ROCm/CUDA run does; recorded in every environment (None: unset).
#: The per-node ``HSA_OVERRIDE_GFX_VERSION_<node>`` of each KFD GPU node is recorded too, under its
#: own name, when it is set (docs/detect.md).
VARIABLES: tuple[str, ...] = (
    "HSA_OVERRIDE_GFX_VERSION",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "CUDA_VISIBLE_DEVICES",
    "PYTORCH_TUNABLEOP_ENABLED",
    "MIOPEN_USER_DB_PATH",
    "HIP_FORCE_DEV_KERNARG",
    # flash / memory-efficient SDPA through AOTriton on RDNA3/3.5/4 ("no available kernel" without it)
    "TORCH_ROCM_AOTRITON_ENABLE_EXPERIMENTAL",
    "TORCH_BLAS_PREFER_HIPBLASLT",
    "PYTORCH_TUNABLEOP_ROTATING_BUFFER_SIZE",
    # not a PyTorch variable: recorded so that the doctor can say it does nothing
    "PYTORCH_TUNABLE_BACKEND",
    # WSL with ROCm 7.x: the runtime looks for /dev/dxg only when this is set
    "HSA_ENABLE_DXG_DETECTION",
    "NCCL_P2P_DISABLE",
    "HSA_FORCE_FINE_GRAIN_PCIE",
    "PYTORCH_HIP_ALLOC_CONF",
    "PYTORCH_CUDA_ALLOC_CONF",
)

#: Distributions whose versions are read from metadata (never imported).
LIBRARIES: tuple[str, ...] = (
    # the Triton torch uses: PyPI ``triton``, else ROCm's ``pytorch-triton-rocm`` (one entry, as
    # the suites see it); the two distributions are also recorded by name, to see both installed
    "triton",
    "pytorch-triton-rocm",
    "triton-pypi",
    "flash_attn",
    "bitsandbytes",
    "transformers",
    "peft",
    "accelerate",
    "xformers",
)


class EnvironmentFileError(ValueError):
    """A recorded environment that cannot be used; the message names the file and the fault."""


@dataclass
class Device:
    """A device torch can use."""

    index: int
    name: str
    #: what the runtime reports, with target features (``gfx90a:sramecc+:xnack-``, ``sm_90``)
    arch: str
    #: the base name of ``arch`` (``gfx90a``)
    gfx: str
    #: what the silicon is (from KFD); differs from ``gfx`` under HSA_OVERRIDE_GFX_VERSION
    hardware_gfx: str | None = None
    features: dict[str, bool] = field(default_factory=dict)
    total_memory: int | None = None
    compute_units: int | None = None
    #: whether the torch build ships kernels for this gfx (None: unknown)
    in_build: bool | None = None


@dataclass
class SystemGpu:
    """A GPU node of the kernel's KFD topology, whether or not torch can use it."""

    node: int
    gfx: str | None
    gfx_target_version: int | None = None
    vram: int | None = None
    render_minor: int | None = None
    simd_count: int | None = None
    vendor_id: int | None = None
    device_id: int | None = None
    unique_id: int | None = None
    name: str | None = None
    #: GTT (system memory the GPU can map) in bytes, from DRM ``mem_info_gtt_total``: on an APU the
    #: real pool, next to a BIOS carve-out in ``vram``
    gtt: int | None = None


@dataclass
class SystemInfo:
    """What the kernel and the OS say, read without torch and without ROCm user space."""

    kfd: bool = False
    kfd_access: bool | None = None
    groups: list[str] = field(default_factory=list)
    gpus: list[SystemGpu] = field(default_factory=list)
    amdgpu_loaded: bool | None = None
    amdgpu_version: str | None = None
    rocm_version: str | None = None
    memory_total: int | None = None
    wsl: bool = False
    #: files that exist but could not be read (EPERM in containers...): ``path: reason``
    errors: list[str] = field(default_factory=list)


@dataclass
class Environment:
    #: the build's backend when torch sees a device (:func:`torch_backend`), else ``cpu``
    backend: Backend = "cpu"
    torch: str | None = None
    hip: str | None = None
    rocm: str | None = None
    cuda: str | None = None
    arch_list: list[str] = field(default_factory=list)
    devices: list[Device] = field(default_factory=list)
    variables: dict[str, str | None] = field(default_factory=dict)
    system: SystemInfo = field(default_factory=SystemInfo)
    libraries: dict[str, str | None] = field(default_factory=dict)
    python: str = ""
    platform: str = ""
    #: why torch is unusable (not installed, import failed...), None when it imported
    torch_error: str | None = None

    # -- JSON ---------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        data = {"schema": SCHEMA}
        data.update(asdict(self))
        return data

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, sort_keys=False)

    @classmethod
    def from_dict(cls, data: Any, source: str = "environment", check: bool = True) -> Environment:
        """Build from parsed JSON; raises EnvironmentFileError naming ``source`` and the field.

        ``check=False`` skips the value checks (:func:`check_values`, jsonschema) but not the
        types: for what this package's own detection wrote (a child process's), whose values are
        as trusted as an in-process detection's, which is never checked either."""
        if not isinstance(data, dict):
            raise EnvironmentFileError(f"{source}: expected a JSON object, got {type(data).__name__}")
        schema = data.get("schema")
        if schema != SCHEMA:
            raise EnvironmentFileError(f"{source}: schema is {schema!r:.60}, expected {SCHEMA!r}")
        backend = data.get("backend", "cpu")
        if backend not in BACKENDS:
            raise EnvironmentFileError(f"{source}: backend is {backend!r:.60}, expected one of {', '.join(BACKENDS)}")
        if check:
            check_values(data, source)
        devices = [
            _build(Device, d, f"{source}: devices[{i}]")
            for i, d in enumerate(_list(data.get("devices"), f"{source}: devices"))
        ]
        system_raw = data.get("system") or {}
        if not isinstance(system_raw, dict):
            raise EnvironmentFileError(f"{source}: system: expected an object, got {type(system_raw).__name__}")
        gpus = [
            _build(SystemGpu, g, f"{source}: system.gpus[{i}]")
            for i, g in enumerate(_list(system_raw.get("gpus"), f"{source}: system.gpus"))
        ]
        system = _build(SystemInfo, {k: v for k, v in system_raw.items() if k != "gpus"}, f"{source}: system")
        system.gpus = gpus
        env: Environment = _build(
            cls, {k: v for k, v in data.items() if k not in ("schema", "devices", "system")}, source
        )
        env.devices = devices
        env.system = system
        return env

    @classmethod
    def load(cls, path: str | Path) -> Environment:
        """Read a recorded environment (``--rocm-env``); one clear EnvironmentFileError on any fault."""
        from pytest_rocm.env.textfile import UserFileError, read_json

        try:
            data = read_json(path, "recorded environment")
        except UserFileError as exc:
            raise EnvironmentFileError(str(exc)) from None
        return cls.from_dict(data, source=str(Path(path)))


def check_values(data: dict[str, Any], source: str) -> None:
    """The values, beyond their types: ranges, gfx names, PEP 440 versions (the JSON Schema
    ``data/schemas/environment-1.json``) and unique device indexes and KFD nodes."""
    from pytest_rocm.env.schemas import duplicates, first_problem  # imports jsonschema: only here

    problem = first_problem("environment", data)
    if problem:
        raise EnvironmentFileError(f"{source}: {problem}")
    for where, items, key in (
        ("devices", data.get("devices") or [], "index"),
        ("system.gpus", (data.get("system") or {}).get("gpus") or [], "node"),
    ):
        twice = duplicates(item.get(key) for item in items)
        if twice is not None:
            raise EnvironmentFileError(
                f"{source}: {where}: two entries have {key} {twice!r:.60} (each {key} must be unique)"
            )


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise EnvironmentFileError(f"{where}: expected a list, got {type(value).__name__}")
    return value


_SCALARS: dict[str, type] = {"int": int, "str": str, "bool": bool}


def _matches(value: Any, annotation: str) -> bool:
    """Whether a JSON value fits a field annotation of the model (``int | None``, ``list[str]``,
    ``dict[str, str | None]``); nested dataclasses are built and checked on their own."""
    if annotation.endswith(" | None"):
        return value is None or _matches(value, annotation[: -len(" | None")])
    if annotation in _SCALARS:
        # bool is an int in Python, not in the model
        return isinstance(value, _SCALARS[annotation]) and (annotation == "bool" or not isinstance(value, bool))
    if annotation.startswith("list[") and annotation.endswith("]"):
        return isinstance(value, list) and all(_matches(v, annotation[5:-1]) for v in value)
    if annotation.startswith("dict[str, ") and annotation.endswith("]"):
        inner = annotation[len("dict[str, ") : -1]
        return isinstance(value, dict) and all(isinstance(k, str) and _matches(v, inner) for k, v in value.items())
    return True


def _build(cls: type, data: Any, where: str) -> Any:
    """Instantiate a dataclass from a dict, ignoring unknown keys (forward compatibility); a
    missing field or a value of the wrong type is an EnvironmentFileError naming the field."""
    if not isinstance(data, dict):
        raise EnvironmentFileError(f"{where}: expected an object, got {type(data).__name__}")
    kwargs = {}
    for f in fields(cls):
        if f.name not in data:
            if f.default is MISSING and f.default_factory is MISSING:
                raise EnvironmentFileError(f"{where}: field {f.name!r} is missing")
            continue
        value = data[f.name]
        if f.name not in ("devices", "system", "gpus") and not _matches(value, str(f.type)):
            raise EnvironmentFileError(f"{where}: field {f.name!r} is {value!r:.60}, expected {f.type}")
        kwargs[f.name] = value
    return cls(**kwargs)


def torch_backend(torch: Any) -> Backend:
    """Which backend a torch module was built for: ``rocm`` when ``torch.version.hip`` is set,
    ``cuda`` when ``torch.version.cuda`` is, else ``cpu``. The build only, whether or not it sees a
    device (``Environment.backend`` is ``cpu`` without one). The one place this is decided: pass
    the imported module (this module never imports torch)."""
    version = getattr(torch, "version", None)
    if getattr(version, "hip", None):
        return "rocm"
    if getattr(version, "cuda", None):
        return "cuda"
    return "cpu"


def device_backend(device: Any, torch: Any) -> str:
    """The backend a ``torch.device`` runs on: ``rocm`` or ``cuda`` for a ``cuda`` device (one
    torch.cuda API drives both; the build says which), else the device type (``cpu``, ``mps``...)."""
    if device.type == "cuda":
        return torch_backend(torch)
    return str(device.type)


def has_accelerator(env: Environment) -> bool:
    """Whether torch can use a GPU here (a ROCm or CUDA build that sees a device)."""
    return env.backend in ("rocm", "cuda") and bool(env.devices)
