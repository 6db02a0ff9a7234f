"""The live check's import probe is a module (``pytest_rocm._import_probe``), run in the child as
``python -c START MODULE``: what it says of a module, and that it brings nothing of the package
into the child before the vetted import but the lazy root."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from pytest_rocm import _import_probe
from pytest_rocm._resources import PACKAGE_DIR
from pytest_rocm.vet.live import child_claims


def _probe(tmp_path: Path, *argv: str, code: str = _import_probe.START) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(PACKAGE_DIR.parent)])}
    return subprocess.run([sys.executable, "-c", code, *argv], cwd=tmp_path, env=env, capture_output=True, text=True)


def test_the_probe_says_what_the_import_gave(tmp_path: Path) -> None:
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text("__version__ = '2.6.0+rocm6.2'\nclass version:\n    hip = '6.2'\n")
    (tmp_path / "probed.py").write_text("import torch\n__version__ = '1.2'\ndef add(): pass\ndef _hidden(): pass\n")
    done = _probe(tmp_path, "probed")
    assert done.returncode == 0, done.stderr
    assert child_claims(done.stdout) == {
        "module": "probed",
        "version": "1.2",
        "file": str(tmp_path / "probed.py"),
        "public_callables": 1,
        "examples": ["add"],
        "torch": "2.6.0+rocm6.2",
        "hip": "6.2",
        "cuda": None,
    }


def test_a_failed_import_ends_with_its_error_and_no_facts(tmp_path: Path) -> None:
    done = _probe(tmp_path, "no_such_module_here")
    assert done.returncode == 1 and child_claims(done.stdout) is None
    assert done.stderr.strip().splitlines()[-1] == "ModuleNotFoundError: No module named 'no_such_module_here'"


def test_the_probe_imports_only_the_lazy_root_before_the_vetted_module(tmp_path: Path) -> None:
    code = "import sys; import pytest_rocm._import_probe; print(sorted(m for m in sys.modules if 'rocm' in m or m == 'torch'))"
    done = _probe(tmp_path, code=code)
    loaded = json.loads(done.stdout.replace("'", '"'))
    assert loaded == ["pytest_rocm", "pytest_rocm._import_probe", "pytest_rocm._lazy", "pytest_rocm._resources"]
