"""The vetted code is the code that ran (issue 56, point 8): the report's ``modules`` records which
version of a module the tests imported and from where (not only the installed distribution's
metadata), warns when a project's own package came from elsewhere, and the vetting recipe
(docs/examples/vet_library.py) runs a src-layout library's tests against its unpacked code, or
refuses. A tiny src-layout package made here, in two versions: 2.0 "installed" (a site folder with
its dist-info on PYTHONPATH), 1.0 unpacked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

RECIPE = Path(__file__).parents[2] / "docs" / "examples" / "vet_library.py"
TEST_VERSION = "import tinylib\ndef test_version():\n    assert tinylib.__version__ == '1.0'\n"


def _installed(folder: Path, version: str = "2.0") -> Path:
    """A site folder holding tinylib ``version`` and its dist-info, as pip would leave it."""
    (folder / "tinylib").mkdir(parents=True)
    (folder / "tinylib" / "__init__.py").write_text(f"__version__ = {version!r}\n")
    info = folder / f"tinylib-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: tinylib\nVersion: {version}\n")
    return folder


def _project(root: Path, conftest: str = "") -> Path:
    """tinylib 1.0 in a src layout, with its tests."""
    (root / "src" / "tinylib").mkdir(parents=True)
    (root / "src" / "tinylib" / "__init__.py").write_text("__version__ = '1.0'\n")
    (root / "pyproject.toml").write_text('[project]\nname = "tinylib"\nversion = "1.0"\n')
    (root / "tests").mkdir()
    (root / "tests" / "test_tiny.py").write_text(TEST_VERSION)
    if conftest:
        (root / "tests" / "conftest.py").write_text(conftest)
    return root


def _pythonpath(*first: Path) -> str:
    return os.pathsep.join([*map(str, first), os.environ.get("PYTHONPATH", "")])


def test_the_report_records_the_imported_modules_version_and_folder_and_warns_of_the_installed_one(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = _installed(pytester.path / "site")
    _project(pytester.path)
    monkeypatch.setenv("PYTHONPATH", _pythonpath(site))
    result = pytester.runpytest_subprocess("tests", "--rocm-report=r.json", "-p", "no:randomly")
    assert result.ret == 1  # the test asks for 1.0 and got the installed 2.0: the hazard is real
    report = json.loads((pytester.path / "r.json").read_text())
    assert report["modules"]["tinylib"] == {
        "version": "2.0",
        "path": os.path.realpath(site / "tinylib"),
        "project": "src/tinylib",
        "from_project": False,
    }
    result.stdout.fnmatch_lines(
        ["rocm report: warning: the tests imported tinylib 2.0 from */site/tinylib, not the project's src/tinylib*"]
    )
    # the unpacked code first on the path: that one ran, and nothing is said
    monkeypatch.setenv("PYTHONPATH", _pythonpath(pytester.path / "src", site))
    result = pytester.runpytest_subprocess("tests", "--rocm-report=r.json", "-p", "no:randomly")
    assert result.ret == 0
    record = json.loads((pytester.path / "r.json").read_text())["modules"]["tinylib"]
    assert record["version"] == "1.0" and record["from_project"] is True
    assert "warning: the tests imported" not in result.stdout.str()


def test_under_xdist_the_workers_hand_over_what_they_imported(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = _installed(pytester.path / "site")
    _project(pytester.path)
    monkeypatch.setenv("PYTHONPATH", _pythonpath(site))
    pytester.runpytest_subprocess("tests", "--rocm-report=r.json", "-p", "no:randomly", "-n", "2")
    modules = json.loads((pytester.path / "r.json").read_text())["modules"]
    assert modules["tinylib"]["version"] == "2.0" and modules["tinylib"]["from_project"] is False


def _sdist(folder: Path, conftest: str = "") -> Path:
    top = _project(folder / "tinylib-1.0", conftest)
    archive = folder / "tinylib-1.0.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(top, arcname="tinylib-1.0")
    return archive


def _recipe(tmp_path: Path, sdist: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=_pythonpath(site))
    command = [sys.executable, str(RECIPE), "tinylib==1.0", "--sdist", str(sdist), "--tests", "tests"]
    command += ["--out", str(tmp_path / "out"), "--", "-p", "no:randomly", "--rocm-device=cpu"]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)


def test_the_recipe_runs_a_src_layout_librarys_tests_against_its_unpacked_code(tmp_path: Path) -> None:
    site = _installed(tmp_path / "site")
    done = _recipe(tmp_path, _sdist(tmp_path / "dl"), site)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((tmp_path / "out" / "tinylib-1.0.json").read_text())
    assert report["summary"]["passed"] == 1 and report["label"] == "tinylib 1.0"
    record = report["modules"]["tinylib"]
    assert record["version"] == "1.0" and record["path"] == os.path.realpath(
        tmp_path / "out/src/tinylib-1.0/src/tinylib"
    )


def test_the_recipe_refuses_a_run_that_imported_other_code(tmp_path: Path) -> None:
    site = _installed(tmp_path / "site")
    # a suite whose conftest puts another folder first: only the report can tell what ran
    conftest = f"import sys\nsys.path.insert(0, {str(site)!r})\n"
    done = _recipe(tmp_path, _sdist(tmp_path / "dl", conftest), site)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "vet_library: REFUSED: the tests imported tinylib 2.0 from " in done.stderr
    out = tmp_path / "out"
    assert not (out / "tinylib-1.0.json").exists() and (out / "tinylib-1.0.json.refused").is_file()


def test_the_recipe_asks_before_the_run_where_import_would_find_each_package(tmp_path: Path) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("vet_library", RECIPE)
    assert spec is not None and spec.loader is not None
    recipe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(recipe)
    site = _installed(tmp_path / "site")
    source = _project(tmp_path / "tinylib-1.0")
    root = recipe.import_root(source)
    assert root == source / "src" and recipe.project_packages(root) == ["tinylib"]
    plain = dict(os.environ, PYTHONPATH=_pythonpath(site))
    # as the recipe ran it before: the installed one would be imported
    assert recipe.before_run(root, ["tinylib"], source, plain) == [
        f"tinylib would be imported from {os.path.realpath(site / 'tinylib')}, not from {root / 'tinylib'}"
    ]
    assert recipe.before_run(root, ["tinylib"], source, recipe.import_env(root, plain)) == []
