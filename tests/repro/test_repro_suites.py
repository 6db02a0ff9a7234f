"""The bundled suites' rows: an operator sweep row (a lambda with gradients, through the parity
fixture) and a boundary generator row (a strided operand) fail under a kernel bug; each script
rebuilds the row from the aten ops it ran, exits 1 with the bug in its own process and 0 without."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from test_repro_end_to_end import run_script

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
#: (node id, the bug it runs under, as an expression of kernel_mutants' names)
ROWS = {
    "suites/operators/test_gemm.py::test_matmul[mm-float16]": "PerturbsLowPrecision('aten.mm.default')",
    "suites/operators/test_gemm.py::test_matmul[linear-float16]": "PerturbsLowPrecision('aten.addmm.default')",
    "suites/operators/test_boundary.py::test_boundary[matmul/mm[m7-k16-n8-offset-transposed-const_rows-float32"
    "-functional]]": "PerturbsNonContiguous('aten.mm.default')",
}
PLUGIN = f"""
import sys
sys.path.insert(0, {str(TESTS)!r})
import pytest
from kernel_mutants import *
BUGS = {{nodeid: bug for nodeid, bug in {ROWS!r}.items()}}

@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    with eval(BUGS[item.nodeid]):  # the test's own constant table, not a report's text
        return (yield)
"""


@pytest.fixture(scope="module")
def repro_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Path], dict[str, str]]:
    tmp = tmp_path_factory.mktemp("suites")
    (tmp / "suite_bugs.py").write_text(PLUGIN)
    report = tmp / "report.json"
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp}"}
    subprocess.run(
        [sys.executable, "-m", "pytest", *ROWS, "--rocm-device=cpu", f"--rocm-report={report}", "-p", "suite_bugs",
         "-p", "no:randomly", "-p", "no:cacheprovider", "-q"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    outcomes = {r["nodeid"]: r["outcome"] for r in json.loads(report.read_text())["results"]}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_rocm.cli", "repro", str(report), "-o", str(tmp / "repro"), "--device", "cpu"],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = {}
    for line in proc.stdout.splitlines():
        nodeid, _, command = line.partition(": python ")
        if command:
            found[nodeid] = Path(command.split()[0])
    return found, outcomes


@pytest.mark.parametrize("nodeid", list(ROWS))
def test_a_suite_row_reproduces_under_its_bug_and_not_without(
    repro_dir: tuple[dict[str, Path], dict[str, str]], nodeid: str
) -> None:
    scripts, outcomes = repro_dir
    assert outcomes[nodeid] == "failed"
    script = scripts[nodeid]
    assert "pytest_rocm" not in script.read_text().split("SPEC: dict[str, Any] =")[0]
    broken = run_script(script, bugs=True, bug=ROWS[nodeid])
    assert broken.returncode == 1, broken.stdout + broken.stderr
    clean = run_script(script, bugs=False)
    assert clean.returncode == 0, clean.stdout + clean.stderr
