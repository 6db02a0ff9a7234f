"""Which code the tests ran: the report's ``modules`` (docs/report.md).

The environment's ``libraries`` are the installed distributions' metadata; the code a test ran is
whatever ``import`` found first on ``sys.path``. Run a ``src/``-layout project's tests from its
folder and ``import accelerate`` finds the *installed* accelerate, not the one beside the tests:
the column says one version, another ran. So the report records, for the modules the tests
imported (read from ``sys.modules`` as the run ends, never imported here), their ``__version__`` and
the folder they were imported from: torch, the libraries the environment lists, and the project's
own packages (a package folder at the rootdir or under its ``src/``). A project package imported
from anywhere but its folder says so (``from_project: false``) and the run warns in one line.

Under pytest-xdist the tests import in the workers: each hands its modules to the controller in
``workeroutput`` at the end (the channel xdist has for that), and the controller merges them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

#: the name the report plugin registers its recorder under
MODULES_PLUGIN = "rocm-report-modules"
#: the workeroutput key a worker hands its modules over with
WORKEROUTPUT_KEY = "rocm_modules"

#: import names of torch and of the libraries the environment lists by distribution name
#: (``env.model.LIBRARIES``: pytorch-triton-rocm and triton-pypi are distributions of ``triton``)
KNOWN = ("torch", "triton", "flash_attn", "bitsandbytes", "transformers", "peft", "accelerate", "xformers")


def project_packages(rootdir: Path) -> dict[str, str]:
    """The project's own top-level packages: name -> its folder relative to the rootdir
    (``accelerate`` -> ``src/accelerate``); test folders left out."""
    found: dict[str, str] = {}
    for base in (rootdir / "src", rootdir):  # a src/ layout's package wins over a same-named folder
        try:
            entries = sorted(os.scandir(base), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            name = entry.name
            if not name.isidentifier() or name.startswith(("test", "_")) or name in found:
                continue
            if entry.is_dir() and os.path.isfile(os.path.join(entry.path, "__init__.py")):
                found[name] = os.path.relpath(entry.path, rootdir).replace(os.sep, "/")
    return found


def _where(module: Any) -> str | None:
    """The folder of a package (its ``__init__.py``'s), the file of a module; None if not a file."""
    file = getattr(module, "__file__", None)
    if not isinstance(file, str) or not file:
        return None
    path = os.path.realpath(file)
    return os.path.dirname(path) if os.path.basename(path).startswith("__init__.") else path


def module_records(modules: Mapping[str, Any], rootdir: Path) -> dict[str, dict[str, Any]]:
    """``{"accelerate": {"version": "1.15.0", "path": "/venv/.../accelerate", "project":
    "src/accelerate", "from_project": false}}`` for the known and project modules in ``modules``
    (``sys.modules``). Pure: reads attributes only."""
    project = project_packages(rootdir)
    out: dict[str, dict[str, Any]] = {}
    for name in sorted({*KNOWN, *project}):
        module = modules.get(name)
        if module is None:
            continue
        version = getattr(module, "__version__", None)
        record: dict[str, Any] = {"version": str(version) if version is not None else None, "path": _where(module)}
        if name in project:
            folder = os.path.realpath(rootdir / project[name])
            record["project"] = project[name]
            record["from_project"] = record["path"] is not None and (
                record["path"] == folder or record["path"].startswith(folder + os.sep)
            )
        out[name] = record
    return out


def mismatch_lines(records: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One warning per project package the tests imported from somewhere else."""
    return [
        f"rocm report: warning: the tests imported {name} {r.get('version') or '(no __version__)'} from "
        f"{r.get('path')}, not the project's {r['project']}: the code tested is not the code beside the "
        "tests (put its folder first on sys.path, or install it)"
        for name, r in sorted(records.items())
        if r.get("project") and r.get("from_project") is False
    ]


class ModulesRecorder:
    """Collects the modules record: this process's at the end, and each xdist worker's."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.from_workers: dict[str, dict[str, Any]] = {}

    def records(self) -> dict[str, dict[str, Any]]:
        import sys

        here = module_records(sys.modules, Path(str(self.config.rootpath)))
        return {**here, **self.from_workers}  # the workers ran the tests: theirs win

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        output = getattr(self.config, "workeroutput", None)
        if output is not None:  # a worker: handed over before xdist sends "workerfinished"
            output[WORKEROUTPUT_KEY] = json.dumps(self.records())

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        try:
            handed = json.loads(getattr(node, "workeroutput", {}).get(WORKEROUTPUT_KEY) or "{}")
        except (TypeError, ValueError):
            return  # a worker that died before its end hands nothing
        if isinstance(handed, dict):
            for name, record in handed.items():
                self.from_workers.setdefault(name, record)
