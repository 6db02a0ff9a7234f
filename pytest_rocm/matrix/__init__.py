"""The ROCm/PyTorch matrix: ``matrix/combos.toml``, its validation, and ``rocm-compat matrix``.

This module is imported by ``noxfile.py`` with nothing but the standard library and ``packaging``
available (nox's own interpreter), so it must stay free of torch and of the plugin.
"""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import Version

from pytest_rocm.env import wheels
from pytest_rocm.env.model import BACKENDS as BACKENDS  # the one list (stdlib-only module)
from pytest_rocm.env.model import Backend
from pytest_rocm.matrix import grammar
from pytest_rocm.matrix.grammar import NAME_RE, PYTHON_RE

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]  # (3.10: a dependency)
ROCM_INDEX_RE = re.compile(r"/whl/rocm([0-9]+(?:\.[0-9]+)*)/?$")


class ComboError(ValueError):
    """A combination file that cannot be used; the message names the file, entry and field."""


@dataclass(frozen=True)
class Combo:
    name: str
    torch: str
    index_url: str
    backend: Backend
    rocm: str
    python: str
    packages: tuple[str, ...] = ()
    runner: tuple[str, ...] = ()
    source: str = ""

    @property
    def report_name(self) -> str:
        return f"reports/{self.name}.json"

    @property
    def wheel_gfx(self) -> list[str] | None:
        """The gfx targets the combination's torch wheel carries (data/torch_wheels.json); None when
        unknown (not a ROCm combination, no pinned version, or a release/index the table lacks)."""
        if self.backend != "rocm":
            return None
        pinned = [s.version for s in Requirement(self.torch).specifier if s.operator in ("==", "===")]
        if len(pinned) != 1 or "*" in pinned[0]:
            return None
        return wheels.wheel_gfx(pinned[0], self.index_url)

    def kernels_for(self, gfx: str) -> str | None:
        """Whether the wheel has kernels for ``gfx``: ``yes``; ``override`` (only for the target of
        the gfx's usual HSA_OVERRIDE_GFX_VERSION); ``no`` (hipErrorNoBinaryForGpu at the first
        kernel); None when the table does not know the wheel."""
        return wheels.kernels_for(self.wheel_gfx, gfx)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["packages"] = list(self.packages)
        data["runner"] = list(self.runner)
        data["report"] = self.report_name
        data["wheel_gfx"] = self.wheel_gfx
        return data


@dataclass
class _Field:
    kind: type
    required: bool = True
    default: Any = None


_FIELDS: dict[str, _Field] = {
    "name": _Field(str),
    "torch": _Field(str),
    "index_url": _Field(str, required=False, default=""),
    "backend": _Field(str),
    "rocm": _Field(str, required=False, default=""),
    "python": _Field(str),
    "packages": _Field(list, required=False),
    "runner": _Field(list, required=False),
    "source": _Field(str, required=False, default=""),
}


def load_combos(path: str | os.PathLike[str]) -> list[Combo]:
    """Read and validate a combinations file; raise ComboError with one clear line."""
    from pytest_rocm.env.textfile import UserFileError, read_text  # stdlib only, as this module

    path = Path(path)
    try:
        data = tomllib.loads(read_text(path, "combinations file"))
    except UserFileError as exc:
        raise ComboError(str(exc)) from None
    except tomllib.TOMLDecodeError as exc:
        raise ComboError(f"{path}: not valid TOML ({exc})") from None
    except RecursionError:
        raise ComboError(f"{path}: nested too deeply to be a combinations file") from None
    entries = data.get("combo")
    if not isinstance(entries, list) or not entries:
        raise ComboError(f"{path}: no [[combo]] entries")
    combos: list[Combo] = []
    seen: set[str] = set()
    for number, entry in enumerate(entries, start=1):
        combo = _validate_entry(entry, f"{path}: combo #{number}")
        if combo.name in seen:
            raise ComboError(f"{path}: combo #{number}: name {combo.name!r} is used twice")
        seen.add(combo.name)
        combos.append(combo)
    return combos


def _validate_entry(entry: Any, where: str) -> Combo:
    if not isinstance(entry, dict):
        raise ComboError(f"{where}: expected a table")
    name = entry.get("name")
    if isinstance(name, str) and name:
        where = f"{where} ({_shown(name)})"
    unknown = sorted(set(entry) - set(_FIELDS))
    if unknown:
        raise ComboError(f"{where}: unknown field {unknown[0]!r} (known: {', '.join(_FIELDS)})")
    values: dict[str, Any] = {}
    for key, spec in _FIELDS.items():
        if key not in entry:
            if spec.required:
                raise ComboError(f"{where}: field {key!r} is missing")
            values[key] = [] if spec.kind is list else spec.default
            continue
        value = entry[key]
        if not isinstance(value, spec.kind):
            raise ComboError(f"{where}: field {key!r} must be a {spec.kind.__name__}, got {value!r}")
        if isinstance(value, list) and not all(isinstance(v, str) for v in value):
            raise ComboError(f"{where}: field {key!r} must be a list of strings, got {value!r}")
        values[key] = value
    _check_semantics(values, where)
    return Combo(
        name=values["name"],
        torch=values["torch"],
        index_url=values["index_url"],
        backend=values["backend"],
        rocm=values["rocm"],
        python=values["python"],
        packages=tuple(values["packages"]),
        runner=tuple(values["runner"]),
        source=values["source"],
    )


#: each text field's shape (grammar.py): checked on the whole value before anything reads it
_SHAPES: dict[str, tuple[re.Pattern[str], str]] = {
    "name": (NAME_RE, "be letters, digits, '.', '_' or '-'"),
    "python": (PYTHON_RE, "look like '3.11'"),
    "runner": (grammar.LABEL_RE, "be a runner label (letters, digits, '.', '_', ':', '+' or '-')"),
}


def _check_texts(values: dict[str, Any], where: str) -> None:
    """Every string of the entry against the one grammar: no control character anywhere, a
    bounded length, and for the fields with a shape, that shape on the whole value."""
    for key, value in values.items():
        for text in value if isinstance(value, list) else [value]:
            if key in _SHAPES:
                problem = grammar.shape_problem(text, *_SHAPES[key])
            elif key == "index_url" and text:
                problem = grammar.url_problem(text)
            elif key == "rocm" and text:
                problem = grammar.shape_problem(text, grammar.ROCM_RE, "be a version like '6.2.4'")
            else:
                problem = grammar.text_problem(text, 1000 if key == "source" else grammar.MAX_LENGTH)
            if problem is not None:
                raise ComboError(f"{where}: field {key!r} {problem}, got {_shown(text)}")


def _shown(text: str) -> str:
    """A value in an error line: repr (controls written out), a long one cut."""
    return repr(text) if len(text) <= 80 else repr(text[:80]) + f"... ({len(text)} characters)"


def _check_semantics(values: dict[str, Any], where: str) -> None:
    _check_texts(values, where)
    torch_req = _requirement(values["torch"], where, "torch")
    if torch_req.name != "torch":
        raise ComboError(f"{where}: field 'torch' must be a torch requirement, got {values['torch']!r}")
    for package in values["packages"]:
        if _requirement(package, where, "packages").name == "torch":
            raise ComboError(f"{where}: field 'packages' must not list torch (use the 'torch' field)")
    backend = values["backend"]
    if backend not in BACKENDS:
        raise ComboError(f"{where}: field 'backend' must be one of {', '.join(BACKENDS)}, got {backend!r}")
    url = values["index_url"]
    rocm = values["rocm"]
    if backend == "rocm":
        if not rocm:
            raise ComboError(f"{where}: field 'rocm' is required when backend is 'rocm'")
        match = ROCM_INDEX_RE.search(url)
        # The wheel index decides which ROCm the torch build links against: a mismatch here is
        # exactly the silent misconfiguration the matrix exists to avoid.
        if match is None:
            raise ComboError(f"{where}: field 'index_url' must be a PyTorch ROCm index (.../whl/rocmX.Y), got {url!r}")
        if Version(match.group(1)).release[:2] != Version(rocm).release[:2]:
            raise ComboError(f"{where}: field 'index_url' is for ROCm {match.group(1)} but 'rocm' says {rocm}")
    elif rocm:
        raise ComboError(f"{where}: field 'rocm' must be empty when backend is {backend!r}")


def _requirement(text: str, where: str, key: str) -> Requirement:
    try:
        return Requirement(text)
    except InvalidRequirement as exc:
        detail = str(exc).splitlines()[0]  # packaging adds a multi-line caret diagram
        raise ComboError(f"{where}: field {key!r} has an invalid requirement {text!r} ({detail})") from None


# -- can this machine run a combination? ---------------------------------------------------
def amd_gpu_present(root: str | os.PathLike[str] | None = None) -> bool:
    """The kernel reports an AMD GPU node and /dev/kfd exists (read below PYTEST_ROCM_SYSROOT)."""
    base = Path(root if root is not None else os.environ.get("PYTEST_ROCM_SYSROOT", "/"))
    if not (base / "dev/kfd").exists():
        return False
    for props in (base / "sys/class/kfd/kfd/topology/nodes").glob("*/properties"):
        try:
            # a FIFO or device node where sysfs has a file would block read_text(): regular files only
            if not props.is_file():
                continue
            text = props.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "simd_count" and re.fullmatch(r"[0-9]+", value.strip()) and int(value) > 0:
                return True
    return False


def nvidia_gpu_present(root: str | os.PathLike[str] | None = None) -> bool:
    base = Path(root if root is not None else os.environ.get("PYTEST_ROCM_SYSROOT", "/"))
    gpus = base / "proc/driver/nvidia/gpus"
    return gpus.is_dir() and any(gpus.iterdir())


def runnable_here(combo: Combo, root: str | os.PathLike[str] | None = None) -> tuple[bool, str]:
    """Whether this machine has the accelerator the combination needs, and why not."""
    if combo.backend == "rocm" and not amd_gpu_present(root):
        return False, f"{combo.name} needs an AMD GPU (ROCm {combo.rocm}); this machine has none (no /dev/kfd GPU node)"
    if combo.backend == "cuda" and not nvidia_gpu_present(root):
        return False, f"{combo.name} needs an NVIDIA GPU; this machine has none"
    if combo.backend == "cpu" and not _cpu_build(combo):
        return False, (
            f"{combo.name}: a CPU combination whose torch comes from {combo.index_url or 'PyPI'} installs the CUDA "
            f"build (~20 nvidia-* packages); give it index_url = {wheels.cpu_index()!r} or a +cpu pin"
        )
    return True, ""


def _cpu_build(combo: Combo) -> bool:
    """Whether a combination's torch is a CPU-only build: from a CPU index, or pinned ``+cpu``."""
    return wheels.is_cpu_index(combo.index_url) or "+cpu" in combo.torch


# -- CI job matrices -----------------------------------------------------------------------
def emit_json(combos: list[Combo]) -> str:
    return json.dumps([c.to_dict() for c in combos], indent=2)


def emit_github(combos: list[Combo]) -> str:
    """``strategy.matrix`` for GitHub Actions: ``matrix: ${{ fromJSON(needs.plan.outputs.matrix) }}``."""
    include = [
        {
            "name": c.name,
            "python": c.python,
            "backend": c.backend,
            "rocm": c.rocm,
            "runs-on": list(c.runner) or ["ubuntu-latest"],
            "report": c.report_name,
        }
        for c in combos
    ]
    return json.dumps({"include": include}, indent=2)


def emit_gitlab(combos: list[Combo]) -> str:
    """A child-pipeline definition (JSON is valid YAML): one job per combination, tagged with its runner labels."""
    jobs: dict[str, Any] = {}
    for c in combos:
        jobs[f"compat:{c.name}"] = {
            "stage": "test",
            "image": f"python:{c.python}",
            "tags": [label for label in c.runner if label != "self-hosted"],
            "script": [
                "pip install nox",
                f"nox -s suite-{c.name}",
            ],
            "artifacts": {"when": "always", "paths": [c.report_name]},
        }
    return json.dumps({"stages": ["test"], **jobs}, indent=2)


EMITTERS = {"json": emit_json, "github": emit_github, "gitlab": emit_gitlab}


def render_text(combos: list[Combo], gfx: str | None = None) -> str:
    """The combinations as a table; with ``gfx``, a column saying whether each wheel carries its
    kernels (:meth:`Combo.kernels_for`; ``?``: the table does not know, ``-``: not a ROCm one)."""
    head: tuple[str, ...] = ("name", "torch", "backend", "rocm", "python", "here") + ((gfx,) if gfx else ())
    rows = [head]
    for c in combos:
        ok, _reason = runnable_here(c)
        row: tuple[str, ...] = (c.name, c.torch, c.backend, c.rocm or "-", c.python, "yes" if ok else "no")
        if gfx:
            row += ("-" if c.backend != "rocm" else (c.kernels_for(gfx) or "?"),)
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=False)).rstrip() for row in rows)
