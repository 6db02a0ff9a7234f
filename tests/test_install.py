"""The install story (issue 20): the package's extras never pull a torch build, the README gives
the platform's torch line before the package, and its main command is the one users can run."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from packaging.requirements import Requirement

if sys.version_info >= (3, 11):
    import tomllib
else:  # the package's own fallback (pyproject: tomli on 3.10)
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
#: a torch or triton (or bitsandbytes, built per torch) from an extra would replace a ROCm build
TORCH_BUILDS = {"torch", "triton", "pytorch-triton-rocm", "bitsandbytes"}


def test_no_extra_names_a_torch_build() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    assert "suites" in extras
    for name, requirements in [("dependencies", project["dependencies"]), *extras.items()]:
        names = {Requirement(r).name.lower() for r in requirements}
        assert not names & TORCH_BUILDS, f"{name}: {sorted(names & TORCH_BUILDS)}"
    # what the bundled suites import besides torch is in the suites extra
    assert {"transformers", "peft", "accelerate", "pytest-xdist", "pytest-timeout"} <= {
        Requirement(r).name for r in extras["suites"]
    }


def test_readme_installs_torch_per_platform_then_the_package() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    install = readme[readme.index("## Install") : readme.index("## A test file")]
    lines = [line.strip() for line in install.splitlines() if line.strip().startswith("pip install torch")]
    indexes = [re.search(r"--index-url (\S+)", line).group(1) for line in lines]  # type: ignore[union-attr]
    assert indexes[0] == "https://download.pytorch.org/whl/cpu"
    assert any(re.fullmatch(r"https://download\.pytorch\.org/whl/rocm[0-9.]+", i) for i in indexes)
    assert any(re.fullmatch(r"https://download\.pytorch\.org/whl/cu[0-9]+", i) for i in indexes)
    assert install.index("pip install torch") < install.rindex('pip install -e ".[suites]"')
    # the two commands: no CI pins in the user's main command
    assert '    pip install -e ".[suites]" && rocm-compat run\n' in readme
    assert "    pip install -r .ci/requirements.txt" not in readme
    assert "python -m pytest -n 2" in readme
