"""Running a bundled suite in-process on the CPU and reading its compatibility report.

The suite tests (tests/suites/test_known_issues.py, test_distributed.py, test_models_*.py) judge a
suite from outside: they run it from its real location through pytester, optionally with a plugin
module that breaks something on purpose, and look at the rows of the report it wrote.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest


def load_suite_module(suite: Path, name: str, prefix: str = "libsuite") -> ModuleType:
    """A suite's helper module (``suites/libraries/_library_support.py``) imported by file, as
    ``{prefix}_{name}``: the suites are no package, and their own names would clash across them."""
    spec = importlib.util.spec_from_file_location(f"{prefix}_{name}", suite / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def plugin_arguments(pytester: pytest.Pytester, source: str | None, prefix: str) -> list[str]:
    """``["-p", NAME]`` loading ``source`` as a plugin module written into the pytester folder
    (``[]`` without one). One name per source: an in-process run may find a same-named module
    already imported."""
    if source is None:
        return []
    name = f"{prefix}_{abs(hash(source))}"
    pytester.makepyfile(**{name: source})
    pytester.syspathinsert()
    return ["-p", name]


def run_suite(pytester: pytest.Pytester, suite: Path, *args: str, plugin: str | None = None) -> dict[str, dict]:
    """Run ``suite`` in-process with ``--rocm-device=cpu``; {row (feature): report record}.

    ``plugin`` is the source of a module loaded with ``-p`` (a name per source: an in-process run
    may find a same-named module already imported).
    """
    report = pytester.path / "report.json"
    extra = plugin_arguments(pytester, plugin, "breakage")
    pytester.runpytest_inprocess(
        str(suite),
        "--rocm-device=cpu",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        f"--rocm-report={report}",
        *extra,
        *args,
    )
    return {r["feature"]: r for r in json.loads(report.read_text())["results"]}
