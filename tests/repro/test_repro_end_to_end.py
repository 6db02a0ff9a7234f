"""``rocm-compat repro`` end to end: a user's test file run under a kernel bug made on purpose
(``kernel_mutants``: a low-precision-only one, and one that fires only for a non-contiguous
input), the report, the scripts. Each script imports no pytest_rocm (checked on its source and by
running it where ``import pytest_rocm`` fails), exits 1 with the bug active in its own process and 0
without it (``--device cpu``: the "device" runs are the CPU's low-precision ones, which the
mutants break, and the float64 reference is left alone).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))

from pytest_rocm.cli import main  # noqa: E402

USER_TESTS = """
import torch
from pytest_rocm import assert_parity

def _gen():
    return torch.Generator().manual_seed(0)

def test_low_precision_mm(rocm_device):
    g = _gen()
    a, b = torch.randn(8, 16, generator=g), torch.randn(16, 4, generator=g)
    assert_parity(torch.mm, a, b, device=rocm_device, dtypes=("float32", "float16"))

def test_strided_add(rocm_device):
    g = _gen()
    base = torch.randn(9, 8, generator=g)
    x = base[1:].t()  # transposed, storage offset 8: the layout the bug needs
    assert_parity(torch.add, x, torch.randn(8, 8, generator=g), device=rocm_device, dtypes=("float32",),
                  kwargs={"alpha": 2.0})

def test_lambda(rocm_device):
    a = torch.randn(4, 4, generator=_gen())
    assert_parity(lambda x: x @ x, a, device=rocm_device, dtypes=("float16",))

def test_sweep_style_with_gradients(parity):
    # as the operator sweeps call it: the parity fixture, a lambda, gradients
    g = _gen()
    a, b = torch.randn(6, 8, generator=g), torch.randn(8, 5, generator=g)
    parity(lambda x, y: torch.nn.functional.linear(x, y.t()), a, b, dtypes=("float16",), grad=True, name="linear")

def test_closure_over_a_constant(rocm_device):
    w = torch.tensor(1.5)  # 0-dim: every run's dtype multiplies with it
    assert_parity(lambda x: (x * w) @ x, torch.randn(4, 4), device=rocm_device, dtypes=("float16",))
"""

#: the bugs, entered in the test run (a conftest) and in each script's process (a -c preload)
BUGS = (
    "from kernel_mutants import PerturbsLowPrecision, PerturbsNonContiguous\n"
    "import contextlib\n"
    "def bugs():\n"
    "    stack = contextlib.ExitStack()\n"
    "    stack.enter_context(PerturbsLowPrecision('aten.mm.default'))\n"
    "    stack.enter_context(PerturbsNonContiguous('aten.add.Tensor'))\n"
    "    return stack\n"
)

CONFTEST = f"""
import sys
sys.path.insert(0, {str(TESTS)!r})
import pytest
{BUGS}
@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    with bugs():
        return (yield)
"""


#: the rows a script rebuilds: a named op, a strided input, a lambda, a sweep-style call with gradients
ROWS = ("test_low_precision_mm", "test_strided_add", "test_lambda", "test_sweep_style_with_gradients")


def run_script(
    script: Path, *, bugs: bool, device: str = "cpu", bug: str | None = None
) -> subprocess.CompletedProcess[str]:
    """The script in a fresh interpreter where ``import pytest_rocm`` fails (the venv's editable
    install would find it otherwise), optionally with the bugs (or the one mutant ``bug``, an
    expression of kernel_mutants' names) entered around it."""
    if bug is not None:
        bugs_source = f"from kernel_mutants import *\ndef bugs():\n    return {bug}\n"
    else:
        bugs_source = BUGS if bugs else "def bugs():\n    return contextlib.nullcontext()\n"
    preload = (
        "import sys, runpy, contextlib\n"
        "sys.modules['pytest_rocm'] = None  # any import of the package fails\n"
        f"sys.path.insert(0, {str(TESTS)!r})\n"
        + bugs_source
        + f"sys.argv = [{str(script)!r}, '--device', {device!r}]\n"
        "with bugs():\n"
        f"    runpy.run_path({str(script)!r}, run_name='__main__')\n"
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(script.parent)}
    return subprocess.run(
        [sys.executable, "-c", preload], capture_output=True, text=True, env=env, cwd=script.parent, timeout=300
    )


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path, int, str]:
    """The failing run's report, the repro directory, the command's exit status and its output."""
    root = tmp_path_factory.mktemp("user")
    (root / "test_user.py").write_text(USER_TESTS)
    (root / "conftest.py").write_text(CONFTEST)
    report = root / "report.json"
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", "--rocm-device=cpu",
         f"--rocm-report={report}", "test_user.py"],
        cwd=root, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    out = root / "repro"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_rocm.cli", "repro", str(report), "-o", str(out), "--device", "cpu"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    return json.loads(report.read_text()), out, proc.returncode, proc.stdout + proc.stderr


def scripts(out: Path) -> dict[str, Path]:
    return {p.name.split("_test_user.py_")[1].rsplit("_", 1)[0]: p for p in sorted(out.glob("repro_*.py"))}


def test_each_failed_row_gets_a_script_and_the_unnamed_callable_is_listed(written: Any) -> None:
    report, out, status, output = written
    assert {r["nodeid"].split("::")[1]: r["outcome"] for r in report["results"]} == dict.fromkeys(
        (*ROWS, "test_closure_over_a_constant"), "failed"
    )
    assert set(scripts(out)) == set(ROWS)
    # a closure over a tensor the ops did not make: listed with why, and the exit status says so
    assert (
        "test_closure_over_a_constant: not reproduced: the op is test_closure_over_a_constant.<locals>.<lambda>:"
        " torch alone cannot name it, and its aten ops cannot be recorded: argument 1 of torch.ops.aten.mul.Tensor"
        " is a tensor made outside the traced ops (a constant or a parameter)"
    ) in output
    assert status == 1


def test_the_spec_records_the_callers_layout_not_the_device_copys(written: Any) -> None:
    report = written[0]
    (row,) = [r for r in report["results"] if r["nodeid"].endswith("test_strided_add")]
    (spec,) = [p["repro"] for p in row["parity"] if "repro" in p]
    assert spec["op"] == "torch.add" and spec["dtypes"] == ["float32"] and spec["kwargs"] == {"alpha": 2.0}
    x = spec["tensors"][0]
    assert (x["shape"], x["stride"], x["storage_offset"], x["dtype"]) == ([8, 8], [1, 8], 8, "float32")
    assert spec["tolerances"]["float32"]["rtol"] > 0
    # only the failed call's first failed record carries it; the passing float32 mm record none
    (mm,) = [r for r in report["results"] if r["nodeid"].endswith("test_low_precision_mm")]
    assert [p["dtype"] for p in mm["parity"] if "repro" in p] == ["float16"]
    assert mm["parity"][0]["ok"] is True and "repro" not in mm["parity"][0]


@pytest.mark.parametrize("row", ROWS)
def test_a_script_imports_only_torch_reproduces_under_the_bug_and_not_without(written: Any, row: str) -> None:
    script = scripts(written[1])[row]
    tree = ast.parse(script.read_text())
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert imported <= {"__future__", "argparse", "base64", "contextlib", "math", "sys", "typing", "torch"}, imported
    broken = run_script(script, bugs=True)
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert "FAILS" in broken.stdout and "the failure reproduces (exit 1)" in broken.stdout
    clean = run_script(script, bugs=False)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "the failure does not reproduce here (exit 0)" in clean.stdout


def test_the_script_prints_the_figures_the_row_printed(written: Any) -> None:
    report, out = written[0], written[1]
    (row,) = [r for r in report["results"] if r["nodeid"].endswith("test_low_precision_mm")]
    (failed,) = [p for p in row["parity"] if p["ok"] is False]
    broken = run_script(scripts(out)["test_low_precision_mm"], bugs=True)
    n_bad = f"{failed['n_bad']}/{failed['numel']} off"
    # the report's line and the script's own measurement agree on how many elements are off
    assert broken.stdout.count(n_bad) == 2, broken.stdout
    assert f"{failed['worst_got']:.6g}" in broken.stdout


def test_without_a_device_the_default_script_says_it_cannot_run(written: Any) -> None:
    proc = run_script(scripts(written[1])["test_low_precision_mm"], bugs=False, device="cuda")
    assert proc.returncode == 2 and "cannot run: no cuda device here" in proc.stdout


def test_issue_md_names_each_script_and_its_figures(written: Any) -> None:
    out = written[1]
    text = (out / "ISSUE.md").read_text()
    for script in scripts(out).values():
        assert f"python {script.name} --device cpu" in text
    assert "- float16: mm: elementwise |err|" in text
    assert "torch: 2." in text and "## Not reproduced by a script" in text


def test_naming_one_row_writes_only_it(written: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = written[1].parent / "report.json"
    nodeid = next(r["nodeid"] for r in written[0]["results"] if r["nodeid"].endswith("test_strided_add"))
    assert main(["repro", str(report), nodeid, "-o", str(tmp_path)]) == 0
    assert [p.name for p in tmp_path.glob("*.py")] == [scripts(written[1])["test_strided_add"].name]
    assert main(["repro", str(report), "test_user.py::nope", "-o", str(tmp_path / "x")]) == 1
    assert "test_user.py::nope: not reproduced: no such row in the report" in capsys.readouterr().out
