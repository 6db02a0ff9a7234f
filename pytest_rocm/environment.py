"""The Environment model (DESIGN.md, schema ``pytest-rocm/environment/1``) and its JSON form.

Pure data: no I/O beyond reading/writing a JSON file, no torch. Detection lives in ``detect``.
Every decision the plugin makes (markers, skips, the report's columns, doctor's checks) is made
from one of these, so a recorded one (``--rocm-env FILE``) behaves exactly like a detected one.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

SCHEMA = "pytest-rocm/environment/1"

Backend = Literal["rocm", "cuda", "cpu"]
BACKENDS: tuple[str, ...] = ("rocm", "cuda", "cpu")

#: Variables that change what a ROCm/CUDA run does; recorded in every environment.
VARIABLES: tuple[str, ...] = (
    "HSA_OVERRIDE_GFX_VERSION",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "CUDA_VISIBLE_DEVICES",
    "PYTORCH_TUNABLEOP_ENABLED",
    "MIOPEN_USER_DB_PATH",
    "HIP_FORCE_DEV_KERNARG",
)

#: Distributions whose versions are read from metadata (never imported).
LIBRARIES: tuple[str, ...] = (
    "triton",
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
    backend: str = "cpu"
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
    def from_dict(cls, data: Any, source: str = "environment") -> Environment:
        """Build from parsed JSON; raises EnvironmentFileError naming ``source`` and the field."""
        if not isinstance(data, dict):
            raise EnvironmentFileError(f"{source}: expected a JSON object, got {type(data).__name__}")
        schema = data.get("schema")
        if schema != SCHEMA:
            raise EnvironmentFileError(f"{source}: schema is {schema!r}, expected {SCHEMA!r}")
        backend = data.get("backend", "cpu")
        if backend not in BACKENDS:
            raise EnvironmentFileError(
                f"{source}: backend is {backend!r}, expected one of {', '.join(BACKENDS)}"
            )
        try:
            devices = [_build(Device, d, f"{source}: devices[{i}]") for i, d in enumerate(data.get("devices") or [])]
            system_raw = dict(data.get("system") or {})
            gpus = [
                _build(SystemGpu, g, f"{source}: system.gpus[{i}]")
                for i, g in enumerate(system_raw.pop("gpus", None) or [])
            ]
            system = _build(SystemInfo, system_raw, f"{source}: system")
            system.gpus = gpus
            top = {k: v for k, v in data.items() if k not in ("schema", "devices", "system")}
            env = _build(cls, top, source)
        except (TypeError, ValueError) as exc:
            if isinstance(exc, EnvironmentFileError):
                raise
            raise EnvironmentFileError(f"{source}: {exc}") from None
        env.devices = devices
        env.system = system
        return env

    @classmethod
    def load(cls, path: str | Path) -> Environment:
        """Read a recorded environment (``--rocm-env``); one clear EnvironmentFileError on any fault."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise EnvironmentFileError(f"{path}: no such file") from None
        except OSError as exc:
            raise EnvironmentFileError(f"{path}: cannot read ({exc.strerror})") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise EnvironmentFileError(
                f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
            ) from None
        return cls.from_dict(data, source=str(path))

    # -- convenience ----------------------------------------------------------------------
    @property
    def has_device(self) -> bool:
        return bool(self.devices)


def _build(cls: type, data: Any, where: str) -> Any:
    """Instantiate a dataclass from a dict, ignoring unknown keys (forward compatibility)."""
    if not isinstance(data, dict):
        raise EnvironmentFileError(f"{where}: expected an object, got {type(data).__name__}")
    names = {f.name for f in fields(cls)}
    kwargs = {k: v for k, v in data.items() if k in names}
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise EnvironmentFileError(f"{where}: {exc}") from None
