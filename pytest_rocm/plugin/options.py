"""The plugin's options: one definition per option, used for the command line, the ini file and
the environment variable, and resolved once per session into :class:`Settings`.

Precedence, highest first: command line > environment variable > ini file > default (the same
order pytest-timeout uses). A bad value is a ``pytest.UsageError`` whose one line names where the
value came from (``--rocm-gfx``, ``PYTEST_ROCM_GFX`` or ``rocm_gfx in pytest.ini``), so the user
knows which of the three to fix. Resolution imports no torch and detects nothing.

Why this module is long: it is the one table of every option (``OPTIONS``), its parser and its
resolution; split up, the precedence and the error format would be written twice.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_rocm._values import label_problem, parse_size, path_problem
from pytest_rocm.env import arch
from pytest_rocm.plugin.inivalues import ini_file_name, ini_text
from pytest_rocm.report.features import DEFAULT_DEVICE_TOKENS, parse_device_tokens


@dataclass(frozen=True)
class OptionSpec:
    dest: str  # config.option attribute and ini name
    flag: str
    env: str
    help: str
    metavar: str | None = None
    is_flag: bool = False
    has_ini: bool = True


OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec(
        "rocm_gfx",
        "--rocm-gfx",
        "PYTEST_ROCM_GFX",
        "architectures under test, comma separated (gfx1100, gfx11*, rdna3): tests run on the "
        "first device that matches; no device at all makes the run a plan for the first one",
        metavar="PATTERNS",
    ),
    OptionSpec(
        "rocm_device",
        "--rocm-device",
        "PYTEST_ROCM_DEVICE",
        "force the device under test: cpu (reference baseline), cuda or cuda:N",
        metavar="DEVICE",
    ),
    OptionSpec(
        "rocm_env",
        "--rocm-env",
        "PYTEST_ROCM_ENV",
        "decide markers from an environment recorded by `rocm-compat env --json` instead of detecting this machine",
        metavar="FILE",
        has_ini=False,
    ),
    OptionSpec(
        "rocm_require_gpu",
        "--rocm-require-gpu",
        "PYTEST_ROCM_REQUIRE_GPU",
        "no accelerator to test on is a usage error, not a page of skips (CI runners)",
        is_flag=True,
    ),
    OptionSpec(
        "rocm_report",
        "--rocm-report",
        "PYTEST_ROCM_REPORT",
        "write the compatibility report (JSON, schema pytest-rocm/report/1) to FILE",
        metavar="FILE",
    ),
    OptionSpec(
        "rocm_label",
        "--rocm-label",
        "PYTEST_ROCM_LABEL",
        "the report's column label (default built from backend, torch, rocm and gfx)",
        metavar="TEXT",
    ),
    OptionSpec(
        "rocm_host_label",
        "--rocm-host-label",
        "PYTEST_ROCM_HOST_LABEL",
        "name this host in the report's machine field (a fleet's atlas shows it); default: no host "
        "name, only the machine id (a hash of the GPUs' PCI ids and gfx)",
        metavar="TEXT",
    ),
    OptionSpec(
        "rocm_scale",
        "--rocm-scale",
        "PYTEST_ROCM_SCALE",
        "shape profile of the suites: ci (smallest shapes that trigger each condition) or full (shapes "
        "of real model configs); default ci when the device under test is the CPU, full on a GPU",
        metavar="ci|full",
    ),
    OptionSpec(
        "rocm_short_markers",
        "--rocm-short-markers",
        "PYTEST_ROCM_SHORT_MARKERS",
        "auto: the short marker names (gpu, requires, tolerance...) alias the canonical rocm_* ones "
        "except where the project registers a marker of that name; off: canonical names only",
        metavar="auto|off",
    ),
    OptionSpec(
        "rocm_plan_rocm",
        "--rocm-plan-rocm",
        "PYTEST_ROCM_PLAN_ROCM",
        "the ROCm version a plan (--rocm-gfx with no device here) assumes, for rocm_version markers",
        metavar="VERSION",
    ),
    OptionSpec(
        "rocm_plan_torch",
        "--rocm-plan-torch",
        "PYTEST_ROCM_PLAN_TORCH",
        "the torch version a plan assumes, for rocm_torch_version markers (default: this machine's torch)",
        metavar="VERSION",
    ),
    OptionSpec(
        "rocm_plan_combo",
        "--rocm-plan-combo",
        "PYTEST_ROCM_PLAN_COMBO",
        "a ROCm combination of matrix/combos.toml whose ROCm and torch a plan assumes "
        "(--rocm-plan-rocm and --rocm-plan-torch win over it)",
        metavar="NAME",
    ),
    OptionSpec(
        "rocm_device_ids",
        "--rocm-device-ids",
        "PYTEST_ROCM_DEVICE_IDS",
        "device tokens in parametrize ids ([cpu-float32], [cuda:0-float32]) that become 'device' in the "
        "report's row names, so CPU and GPU columns share rows; comma separated, off keeps ids as they are "
        "(default cpu,cuda,hip,mps,xpu)",
        metavar="TOKENS",
    ),
    OptionSpec(
        "rocm_workload",
        "--rocm-workload",
        "PYTEST_ROCM_WORKLOAD",
        "replay a capture of `rocm-compat capture` (pytest-rocm/workload/1) as rows workload/<op>[<id>]",
        metavar="FILE",
    ),
    OptionSpec(
        "rocm_workload_perf",
        "--rocm-workload-perf",
        "PYTEST_ROCM_WORKLOAD_PERF",
        "time each workload row's device call and record it as the row's perf",
        is_flag=True,
    ),
    OptionSpec(
        "rocm_workload_max_memory",
        "--rocm-workload-max-memory",
        "PYTEST_ROCM_WORKLOAD_MAX_MEMORY",
        "the most a workload row may allocate, its inputs and outputs on the device and in float64 "
        "for the reference ('16GiB' or bytes; default 8GiB): a bigger row is skipped, naming it",
        metavar="SIZE",
    ),
)

#: the options that take a comma-separated list: registered as pytest's ``linelist`` (a TOML list of
#: strings, or lines of an ini file, are that list)
LIST_OPTIONS = frozenset({"rocm_gfx", "rocm_device_ids"})

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def add_options(parser: pytest.Parser) -> None:
    """Register every option on the command line and, where sensible, as an ini value."""
    group = parser.getgroup("rocm", "pytest-rocm (PyTorch on AMD ROCm GPUs)")
    for spec in OPTIONS:
        where = f"env {spec.env}" + (f", ini {spec.dest}" if spec.has_ini else "")
        text = f"{spec.help} ({where})"
        if spec.is_flag:
            group.addoption(spec.flag, action="store_true", default=None, dest=spec.dest, help=text)
        else:
            group.addoption(spec.flag, default=None, dest=spec.dest, metavar=spec.metavar, help=text)
        if spec.has_ini and spec.dest in LIST_OPTIONS:
            # pytest's own list type: a TOML list is pytest's to read, in an ini file one value per
            # line or comma separated; a string in a TOML-mode table, which pytest refuses for a
            # list type, is read from the file by ``ini_text`` (plugin.inivalues says why)
            parser.addini(spec.dest, f"{spec.help} (same as {spec.flag})", type="linelist", default=[])
        elif spec.has_ini:
            parser.addini(spec.dest, f"{spec.help} (same as {spec.flag})", type="string", default="")


# -- resolving -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Raw:
    """One option's winning value and where it came from (for messages)."""

    value: Any
    source: str  # "--rocm-gfx", "PYTEST_ROCM_GFX", "rocm_gfx in pytest.ini", "default"

    def where(self) -> str:
        """``--rocm-gfx=gfx11OO``: the value as the user wrote it, for one-line errors."""
        return f"{self.source}={self.value!r}" if self.source != "default" else "default"


def named(source: str, path: Any) -> str:
    """A path with the place it came from, for messages about the file rather than the text:
    ``--rocm-report r.json``, ``PYTEST_ROCM_REPORT=r.json``, ``rocm_report in tox.ini=r.json``."""
    return f"{source} {path}" if source.startswith("-") else f"{source}={path}"


def raw_value(config: pytest.Config, spec: OptionSpec) -> Raw:
    """The value by precedence: command line > environment variable > ini > default (None)."""
    cli = config.getoption(spec.dest, None)
    if cli is not None:
        return Raw(cli, spec.flag)
    env = os.environ.get(spec.env)
    if env is not None and env.strip() != "":
        return Raw(env.strip(), spec.env)
    if spec.has_ini:
        ini = ini_text(config, spec.dest, takes_list=spec.dest in LIST_OPTIONS, is_flag=spec.is_flag)
        if ini:
            return Raw(ini, f"{spec.dest} in {ini_file_name(config)}")
    return Raw(None, "default")


@dataclass(frozen=True)
class Settings:
    """The resolved options of one session."""

    gfx: tuple[str, ...] = ()
    gfx_source: str = ""
    #: "cpu", or a device index for cuda:N; None when not forced
    device: str | int | None = None
    device_source: str = ""
    env_file: Path | None = None
    env_source: str = ""
    require_gpu: bool = False
    require_gpu_source: str = ""
    report: str | None = None
    #: where the report path came from (``--rocm-report``, ``PYTEST_ROCM_REPORT``, ``rocm_report in tox.ini``)
    report_source: str = ""
    label: str | None = None
    #: --rocm-host-label: the host's name in the report's ``machine`` field (None: not named)
    host_label: str | None = None
    #: "ci" or "full" when given; None: decided from the device under test (plugin/scale.py)
    scale: str | None = None
    scale_source: str = ""
    #: whether the short marker names alias the canonical ones (where the project does not own them)
    short_markers: bool = True
    #: device tokens normalised in the report's row names (report.features)
    device_ids: tuple[str, ...] = DEFAULT_DEVICE_TOKENS
    #: the versions a plan assumes (plugin/plan.py), with the options that gave them
    plan_rocm: str | None = None
    plan_torch: str | None = None
    plan_source: str = ""
    #: the combination a plan installs (--rocm-plan-combo), whose wheel must carry the plan's gfx
    plan_combo: str | None = None
    #: --rocm-workload: the capture to replay as rows (plugin/workload.py), and whether to time them
    workload: Path | None = None
    workload_source: str = ""
    workload_perf: bool = False
    workload_max_bytes: int | None = None

    @property
    def forced_cpu(self) -> bool:
        return self.device == "cpu"


def parse_gfx(text: str) -> tuple[str, ...]:
    """``gfx1100, rdna3`` -> validated patterns; ValueError naming the bad one."""
    parts = [p.strip() for p in str(text).split(",")]
    if not any(parts):
        raise ValueError("no architecture given")
    return tuple(arch.validate_pattern(p) for p in parts if p)


def parse_device(text: str) -> str | int:
    """``cpu`` -> "cpu"; ``cuda`` -> 0; ``cuda:N`` -> N. ValueError otherwise."""
    value = str(text).strip().lower()
    if value == "cpu":
        return "cpu"
    if value == "cuda":
        return 0
    # ASCII digits only: str.isdigit() and int() take '٣' (Arabic-Indic three) for 3
    if value.startswith("cuda:") and re.fullmatch(r"[0-9]{1,4}", value[5:], re.ASCII):
        return int(value[5:])
    raise ValueError("expected cpu, cuda or cuda:N (N a device index in ASCII digits, 0-9999)")


#: the shape profiles of ``--rocm-scale``
SCALES: tuple[str, ...] = ("ci", "full")


def parse_scale(text: str) -> str:
    """``ci`` / ``full`` (any case); ValueError otherwise."""
    value = str(text).strip().lower()
    if value not in SCALES:
        raise ValueError(f"expected {' or '.join(SCALES)}")
    return value


def parse_short_markers(text: str) -> bool:
    """``auto`` -> True (aliases where free), ``off`` -> False; ValueError otherwise."""
    value = str(text).strip().lower()
    if value not in ("auto", "off"):
        raise ValueError("expected auto or off")
    return value == "auto"


def _checked_text(text: Any, problem_of: Callable[[str], str | None]) -> str:
    value = str(text)
    problem = problem_of(value)
    if problem is not None:
        raise ValueError(problem)
    return value


def parse_path(text: Any) -> str:
    """A file path as given (``--rocm-report``): not empty, no NUL; ValueError otherwise."""
    return _checked_text(text, path_problem)


def parse_label(text: Any) -> str:
    """A report label: not empty, no control characters (a newline would break the table)."""
    return _checked_text(text, label_problem)


def parse_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError("expected 1/0, true/false, yes/no or on/off")


def _parse_size(text: Any) -> int:
    return parse_size(int(text) if isinstance(text, str) and text.strip().isdigit() else text)


def _spec(dest: str) -> OptionSpec:
    return next(s for s in OPTIONS if s.dest == dest)


def resolve(config: pytest.Config) -> Settings:
    """Resolve and validate every option; ``pytest.UsageError`` (one line, naming the source)."""
    from pytest_rocm.plugin.numbers import check_timeout

    check_timeout(config)  # pytest-timeout's, when it is loaded
    values: dict[str, Any] = {}

    def checked(dest: str, parse: Any) -> tuple[Any, str]:
        raw = raw_value(config, _spec(dest))
        if raw.value is None:
            return None, ""
        try:
            return parse(raw.value), raw.source
        except ValueError as exc:
            raise pytest.UsageError(f"{raw.where()}: {exc}") from None

    gfx, values["gfx_source"] = checked("rocm_gfx", parse_gfx)
    values["gfx"] = gfx or ()
    values["device"], values["device_source"] = checked("rocm_device", parse_device)
    values["env_file"], values["env_source"] = checked("rocm_env", lambda v: Path(parse_path(v)).expanduser())
    require, values["require_gpu_source"] = checked("rocm_require_gpu", parse_bool)
    values["require_gpu"] = bool(require)
    values["report"], values["report_source"] = checked("rocm_report", parse_path)
    values["label"], _ = checked("rocm_label", parse_label)
    values["host_label"], _ = checked("rocm_host_label", parse_label)
    values["scale"], values["scale_source"] = checked("rocm_scale", parse_scale)
    short, _ = checked("rocm_short_markers", parse_short_markers)
    values["short_markers"] = short is not False
    device_ids, _ = checked("rocm_device_ids", parse_device_tokens)
    values["device_ids"] = DEFAULT_DEVICE_TOKENS if device_ids is None else device_ids
    values.update(_plan_versions(checked))
    values["workload"], values["workload_source"] = checked("rocm_workload", lambda v: Path(parse_path(v)).expanduser())
    values["workload_perf"] = bool(checked("rocm_workload_perf", parse_bool)[0])
    values["workload_max_bytes"] = checked("rocm_workload_max_memory", _parse_size)[0]
    settings = Settings(**values)
    if settings.require_gpu and settings.forced_cpu:
        raise pytest.UsageError(
            f"{settings.require_gpu_source} contradicts {settings.device_source}=cpu: the CPU is not an accelerator"
        )
    return settings


def _plan_versions(checked: Any) -> dict[str, Any]:
    """--rocm-plan-rocm / --rocm-plan-torch, each winning over what --rocm-plan-combo gives."""
    from pytest_rocm.plugin.plan import PlanVersions, parse_combo_option, parse_version_option

    combo, combo_source = checked("rocm_plan_combo", parse_combo_option)
    combo = combo or PlanVersions()
    rocm, rocm_source = checked("rocm_plan_rocm", parse_version_option)
    torch, torch_source = checked("rocm_plan_torch", parse_version_option)
    sources = [s for s in (combo_source, rocm_source, torch_source) if s]
    return {
        "plan_rocm": rocm or combo.rocm,
        "plan_torch": torch or combo.torch,
        "plan_source": ", ".join(sources),
        "plan_combo": combo.combo,
    }


def publish(config: pytest.Config, settings: Settings) -> None:
    """Write resolved values back to ``config.option`` so other plugins reading
    ``config.getoption("rocm_report")`` see ini and environment-variable values too."""
    config.option.rocm_report = settings.report
    config.option.rocm_label = settings.label
    config.option.rocm_host_label = settings.host_label
    config.option.rocm_scale = settings.scale
    config.option.rocm_require_gpu = settings.require_gpu
    config.option.rocm_gfx = ",".join(settings.gfx) or None
    config.option.rocm_env = str(settings.env_file) if settings.env_file else None
    config.option.rocm_short_markers = "auto" if settings.short_markers else "off"
    config.option.rocm_device_ids = ",".join(settings.device_ids) or "off"
    config.option.rocm_workload = str(settings.workload) if settings.workload else None
    if settings.device is None:
        config.option.rocm_device = None
    else:
        config.option.rocm_device = "cpu" if settings.forced_cpu else f"cuda:{settings.device}"
