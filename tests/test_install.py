"""The install story: the package's extras never pull a torch build, the README's two commands are
one self-contained line each that installs torch through `rocm-compat setup`, CI runs exactly those
lines (.ci/readme_command extracts them), and the docs agree with the README."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest
from packaging.requirements import Requirement

from pytest_rocm.env import wheels

if sys.version_info >= (3, 11):
    import tomllib
else:  # the package's own fallback (pyproject: tomli on 3.10)
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
#: a torch or triton (or bitsandbytes, built per torch) from an extra would replace a ROCm build
TORCH_BUILDS = {"torch", "triton", "pytorch-triton-rocm", "bitsandbytes"}


def readme_command() -> ModuleType:
    """.ci/readme_command, the script CI takes the commands from (a file without .py)."""
    path = str(ROOT / ".ci" / "readme_command")
    loader = importlib.machinery.SourceFileLoader("readme_command", path)
    spec = importlib.util.spec_from_loader("readme_command", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def test_no_extra_names_a_torch_build() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    assert "suites" in extras
    for name, requirements in [("dependencies", project["dependencies"]), *extras.items()]:
        names = {Requirement(r).name.lower() for r in requirements}
        assert not names & TORCH_BUILDS, f"{name}: {sorted(names & TORCH_BUILDS)}"
    # what the bundled suites import besides torch is in the suites extra; the tests get all of it
    assert {"transformers", "peft", "accelerate", "gguf", "pytest-xdist", "pytest-timeout"} <= {
        Requirement(r).name for r in extras["suites"]
    }
    assert "pytest-rocm[suites,vet]" in extras["test"]


def test_the_readme_commands_install_torch_through_setup() -> None:
    module = readme_command()
    main, tests = module.command(README, "main"), module.command(README, "test")
    assert main == "pip install -e . && rocm-compat setup suites && rocm-compat run"
    assert tests == "pip install -e . && rocm-compat setup test && python -m pytest -n 2"
    # no CI pins, no bare torch in a user's command
    assert ".ci/requirements.txt" not in README and "pip install torch" not in README


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("no marker here\n", "has 0"),
        ("<!-- command:main -->\n    a\n<!-- command:main -->\n    b\n", "has 2"),
        ("<!-- command:main -->\nnot indented\n", "exactly one indented command line"),
        ("<!-- command:main -->\n    one\n    two\n", "exactly one indented command line"),
    ],
)
def test_a_broken_readme_command_is_refused(text: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        readme_command().command(text, "main")


def test_the_readme_is_a_front_door() -> None:
    assert len(README.splitlines()) < 100
    # figures that go stale (test counts, times) belong in docs/benchmarks.md and the scripts
    assert not re.search(r"\b\d[\d,.]*\s*(tests|s|min|seconds|minutes)\b", README), "a figure in the README"
    assert "docs/index.md" in README and "CHANGELOG.md" in README


def test_ci_runs_the_readme_commands_with_its_pins_as_constraints() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert ".ci/readme_command test" in ci and ".ci/readme_command main" in ci
    assert 'PIP_CONSTRAINT="$ROOT/.ci/requirements.txt"' in ci
    assert "-r .ci/requirements.txt" not in ci and 'python3 -m venv "$1"' in ci  # a venv with nothing in it
    assert "bash .ci/lint" in ci
    assert '"$ROOT" / ".ci" / "lint"' not in ci  # nox's session runs the same file
    assert 'str(ROOT / ".ci" / "lint")' in (ROOT / "noxfile.py").read_text(encoding="utf-8")


def _docs() -> list[tuple[str, str]]:
    pages = sorted((ROOT / "docs").glob("*.md"))
    return [("README.md", README), *((f"docs/{p.name}", p.read_text(encoding="utf-8")) for p in pages)]


def test_docs_agree_on_how_to_install() -> None:
    published = wheels.published_pairs()
    for name, text in _docs():
        # pytest-rocm is on no index: only ever said so, never advised
        for m in re.finditer(r"pip install pytest-rocm\b(?!\[)", text):
            assert "finds nothing" in text[m.end() : m.end() + 40], f"{name}: advises `pip install pytest-rocm`"
        # a ROCm index named with a torch release is one PyTorch published for it
        for m in re.finditer(r"torch==(\d+\.\d+)\S* --index-url https://download\.pytorch\.org/whl/rocm([\d.]+)", text):
            assert m.group(2) in published.get(m.group(1), []), f"{name}: torch {m.group(1)} on rocm{m.group(2)}"
        # a ROCm index without a torch release is an advice that goes stale: setup chooses it
        assert not re.search(r"pip install torch --index-url \S*/rocm", text), f"{name}: a bare ROCm index"


def test_docs_cite_the_changelog_not_issue_numbers() -> None:
    for name, text in _docs():
        assert not re.search(r"\bissues? #?\d+(?![.\d])", text, re.IGNORECASE), f"{name} cites an issue number"
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert changelog.startswith("# Changelog") and "## [Unreleased]" in changelog
