"""The matrix as tasks for a cluster: one per combination x gfx target (SLURM and Kubernetes).

A ROCm combination runs once per gfx it is meant for: the gfx of the site's partitions when the
site names them (``--partition gfx942=mi300x``), else the gfx labels of its ``runner``. A task whose
torch wheel is known to carry no kernels for the gfx (``Combo.kernels_for`` = ``no``: it would
fail with hipErrorNoBinaryForGpu at the first kernel) is left out and said so; one that needs the
gfx's usual override runs with ``HSA_OVERRIDE_GFX_VERSION`` set. CPU and CUDA combinations are one
task each. Stdlib only (imported by the command line; noxfile never needs it).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import Requirement

from pytest_rocm._resources import PACKAGE_DIR, VERSION
from pytest_rocm.env import arch
from pytest_rocm.matrix import Combo, grammar
from pytest_rocm.report.records import slug

#: the time a task gets besides its suites: a fresh venv and torch's wheel (GBs) from the index
INSTALL_MINUTES = 30
#: what the bundled suites may take on one GPU, per scale profile: benchmarks/gpu_run.sh gives every
#: suite of the full profile about 8 minutes together, the CPU baseline of the ci profile takes
#: about a minute on 2 cores; several times that, for slower GPUs and cold caches (docs/clusters.md)
SUITE_MINUTES = {"ci": 30, "full": 90}


class TaskError(ValueError):
    """Options that cannot make a task list (one line, naming the option)."""


@dataclass(frozen=True)
class Task:
    index: int
    combo: Combo
    #: the gfx the task measures (``gfx942``); ``cpu`` or ``cuda`` for those backends
    target: str
    #: the SLURM partition (or None: the site's default)
    partition: str | None
    #: ``HSA_OVERRIDE_GFX_VERSION`` the wheel needs for this gfx (``10.3.0``), else None
    override: str | None = None

    @property
    def label(self) -> str:
        """The report's column: ``rocm torch2.6.0 rocm6.2.4 gfx942`` / ``cpu torch2.13.0``,
        the plugin's default label for that machine (``report.records.default_label``)."""
        parts = [self.combo.backend, "torch" + torch_version(self.combo)]
        if self.combo.backend == "rocm":
            parts += ["rocm" + self.combo.rocm, self.target]
        return " ".join(parts)

    @property
    def report_file(self) -> str:
        """The file ``rocm-compat run --label`` writes under the reports folder."""
        return f"{slug(self.label)}.json"

    @property
    def gpus(self) -> int:
        return 0 if self.combo.backend == "cpu" else 1


@dataclass
class Plan:
    tasks: list[Task]
    #: why a combination x gfx was left out (``torch2.0-rocm5.4 x gfx942: the wheel has no gfx942 kernels``)
    left_out: list[str] = field(default_factory=list)


def torch_version(combo: Combo) -> str:
    """``torch==2.6.0`` -> ``2.6.0`` (the pinned release); the requirement's text otherwise."""
    pins = [s.version for s in Requirement(combo.torch).specifier if s.operator in ("==", "===")]
    return pins[0] if len(pins) == 1 else re.sub(r"[^A-Za-z0-9.]+", "", str(Requirement(combo.torch).specifier))


def parse_partitions(values: Sequence[str]) -> dict[str, str]:
    """``["gfx942=mi300x", "cpu=batch"]`` -> ``{"gfx942": "mi300x", "cpu": "batch"}``."""
    partitions: dict[str, str] = {}
    for value in values:
        key, sep, name = value.partition("=")
        key = key.lower()
        if not sep or grammar.shape_problem(name, grammar.SLURM_WORD_RE, "") is not None:
            raise TaskError(f"--partition {value!r}: expected GFX=PARTITION (gfx942=mi300x, cpu=batch)")
        if key not in ("cpu", "cuda") and not (arch.is_gfx(key) and key == arch.split_arch(key)[0]):
            raise TaskError(f"--partition {value!r}: {key!r} is not a gfx name (gfx942), cpu or cuda")
        partitions[key] = name
    return partitions


def plan_tasks(combos: Sequence[Combo], partitions: Mapping[str, str]) -> Plan:
    """Every combination x gfx target, numbered from 0 (the array index of SLURM, the completion
    index of a Kubernetes Job)."""
    gpu_targets = [key for key in partitions if key not in ("cpu", "cuda")]
    plan = Plan(tasks=[])
    for combo in combos:
        if combo.backend != "rocm":
            plan.tasks.append(Task(len(plan.tasks), combo, combo.backend, partitions.get(combo.backend)))
            continue
        # a runner label may carry features (gfx90a:xnack-): the task's target is the gfx itself
        labels = [arch.split_arch(label)[0] for label in combo.runner if arch.is_gfx(label)]
        targets = gpu_targets or list(dict.fromkeys(labels))
        if not targets:
            plan.left_out.append(f"{combo.name}: no gfx to run on (no --partition GFX=NAME, no gfx in its runner)")
        for gfx in targets:
            kernels = combo.kernels_for(gfx)
            if kernels == "no":
                plan.left_out.append(
                    f"{combo.name} x {gfx}: its torch wheel has no {gfx} kernels (hipErrorNoBinaryForGpu at the first kernel)"
                )
                continue
            override = arch.override_for(gfx) if kernels == "override" else None
            plan.tasks.append(Task(len(plan.tasks), combo, gfx, partitions.get(gfx), override))
    if not plan.tasks:
        raise TaskError("no task to run: " + ("; ".join(plan.left_out) or "no combination selected"))
    return plan


def time_limit(scale: str, minutes: int | None = None) -> int:
    """A task's time limit in minutes: given, else install time plus the scale profile's suite budget."""
    return minutes if minutes is not None else INSTALL_MINUTES + SUITE_MINUTES[scale]


def hhmmss(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}:00"


def combination_stamp(combo: Combo) -> str:
    """The combination's part of its venv's stamp (:func:`venv_stamp`)."""
    index = f" --index-url {combo.index_url}" if combo.index_url else ""
    return f"python{combo.python} | {combo.torch}{index} | {' '.join(combo.packages)}"


def venv_stamp(combo: Combo, package: str) -> str:
    """What a combination's venv was built with: a venv whose stamp file says this is reused (as
    nox's reuse_venv), any other is rebuilt. ``package``: the pytest-rocm, as the scripts' own
    ``package_id`` says it (a file's sha256, else the text)."""
    return f"{combination_stamp(combo)} | {package}"


def checkout_root() -> Path | None:
    """The source checkout this pytest-rocm runs from (a ``pyproject.toml`` of pytest-rocm above
    the package), None when it runs from an installed wheel: what a job builds its wheel from."""
    root = PACKAGE_DIR.parent
    try:
        text = (root / "pyproject.toml").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return root if re.search(r'^name = "pytest-rocm"$', text, re.M) else None


def package_source(package: str | None) -> str | None:
    """The checkout a job builds its pytest-rocm wheel from, when no ``--package`` was given;
    TaskError (one line) when this pytest-rocm runs from no checkout."""
    if package is not None:
        problem = grammar.package_problem(package)
        if problem is not None:
            raise TaskError(f"--package {package!r} {problem}")
        return None
    root = checkout_root()
    if root is None:
        raise TaskError(
            f"this pytest-rocm ({VERSION}) runs from an installed copy ({PACKAGE_DIR}), not a checkout to build a "
            "wheel from: give --package (a wheel file on the shared file system, or a requirement your index serves)"
        )
    problem = grammar.text_problem(str(root), 4096)
    if problem is not None:
        raise TaskError(f"the checkout's path {str(root)!r} {problem}: give --package")
    return str(root)


def package_header(package: str | None, source: str | None) -> list[str]:
    """The SLURM script's header lines that say which pytest-rocm its tasks install."""
    if package is not None:
        return [f"pytest-rocm: every task installs {package} (--package; ROCM_COMPAT_PACKAGE overrides it)."]
    return [
        "pytest-rocm: every task installs a wheel built at submission from the checkout this was emitted from,",
        f"{source} (pip wheel --no-deps); ROCM_COMPAT_PACKAGE (a wheel, a folder, a requirement) overrides it.",
    ]


def quoted(words: Sequence[str]) -> str:
    return " ".join(shlex.quote(w) for w in words)
