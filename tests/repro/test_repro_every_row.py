"""The issue's check, end to end, on every row kind: a device that gets low-precision results of a
few ops wrong, and one op wrong only for a non-contiguous input (``kernel_mutants``: with
``--rocm-device=cpu`` the "device" runs are the CPU's float32/float16 ones, which the mutants
break; the float64 reference is left alone). One pytest run under those bugs, with
``--rocm-report``, holds a user's own test file, an operator sweep row, a boundary row, an
OpInfo and a ModuleInfo corpus row and ``--rocm-workload`` replay rows (captured here, without the
bugs). ``rocm-compat repro`` writes a script per failed row; each one loads no ``pytest_rocm``
module (``sys.modules`` after it ran), exits 1 with the bugs entered in its own process and 0
without them; its default device (cuda, absent here) is one line and exit 2. The HTML table's
failed cells and ``rocm-compat diff`` name the command that writes each reproducer. The workload
rows once more on their own, in a pytester run.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("expecttest")  # the corpus rows: torch.testing._internal's common_utils needs it

import pytest_rocm  # noqa: E402
from pytest_rocm.cli import main  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"

#: the device's bugs (kernel_mutants' names): the run's and each script's process enter all of them
BUGS = (
    "PerturbsLowPrecision('aten.mm.default')",
    "PerturbsLowPrecision('aten.exp.default')",
    "PerturbsLowPrecision('aten.convolution.default')",
    "PerturbsNonContiguous('aten.add.Tensor')",
    "PerturbsNonContiguous('aten.mm.default')",
)
PLUGIN = f"""
import contextlib, sys
sys.path.insert(0, {str(TESTS)!r})
import pytest
from kernel_mutants import *

@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    with contextlib.ExitStack() as stack:
        for bug in {BUGS!r}:
            stack.enter_context(eval(bug))  # the test's own constant table, not a report's text
        return (yield)
"""
USER_TESTS = """
import torch
from pytest_rocm import assert_parity

def test_low_precision_mm(rocm_device):
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(8, 16, generator=g), torch.randn(16, 4, generator=g)
    assert_parity(torch.mm, a, b, device=rocm_device, dtypes=("float32", "float16"))

def test_strided_add(rocm_device):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(9, 8, generator=g)[1:].t()  # transposed, storage offset 8
    assert_parity(torch.add, x, torch.randn(8, 8, generator=g), device=rocm_device, dtypes=("float32",))
"""
BOUNDARY = (
    "suites/operators/test_boundary.py::test_boundary[matmul/mm[m7-k16-n8-offset-transposed-const_rows-float32"
    "-functional]]"
)
#: row kind -> how its node id ends (or, for a workload row, the op its node id names)
ROWS = {
    "user call, low precision": "test_user.py::test_low_precision_mm",
    "user call, non-contiguous": "test_user.py::test_strided_add",  # only its layout is broken
    "operator sweep": "suites/operators/test_gemm.py::test_matmul[mm-float16]",
    "boundary": BOUNDARY,
    "corpus OpInfo": "suites/corpus/test_opinfo.py::test_opinfo[exp-default-float16-s0]",
    "corpus ModuleInfo": "suites/corpus/test_moduleinfo.py::test_moduleinfo[nn.Conv2d-train-float16-s0]",
    "workload, low precision": "aten.exp.default",
    "workload, non-contiguous": "aten.add.Tensor",
}
SUITE_ROWS = [ROWS[k] for k in ("operator sweep", "boundary", "corpus OpInfo", "corpus ModuleInfo")]


def capture_workload(path: Path) -> None:
    """A user's workload: an fp16 exp of a sliced tensor and a float32 add of a transposed one."""
    g = torch.Generator().manual_seed(2)
    half = torch.randn(10, 10, generator=g).half()
    a, b = torch.randn(6, 6, generator=g), torch.randn(6, 6, generator=g)
    sliced, transposed = half[2:, 1::2], a.t()
    with pytest_rocm.capture(path):
        torch.exp(sliced)
        torch.add(transposed, b)


class Run:
    """The failing run: its report, the node id of each row kind, the scripts (--device cpu and
    the default cuda) and the repro command's output."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        project = tmp / "project"  # a user's project: their test file, the bundled suites beside it
        project.mkdir()
        (project / "suites").symlink_to(ROOT / "suites")
        (tmp / "device_bugs.py").write_text(PLUGIN)
        (project / "test_user.py").write_text(USER_TESTS)
        workload = tmp / "ops.json"
        capture_workload(workload)
        self.report_path = tmp / "report.json"
        env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp}", "PYTEST_ROCM_CORPUS_OPS": "exp,nn.Conv2d"}
        self.pytest = subprocess.run(
            [sys.executable, "-m", "pytest", *SUITE_ROWS, "test_user.py", f"--rocm-workload={workload}",
             "--rocm-device=cpu", f"--rocm-report={self.report_path}", "-p", "device_bugs", "-p", "no:randomly",
             "-p", "no:cacheprovider", "-q"],
            cwd=project, env=env, capture_output=True, text=True, timeout=900, check=False,
        )  # fmt: skip
        self.report: dict[str, Any] = json.loads(self.report_path.read_text())
        self.nodeids = {kind: self.nodeid(end) for kind, end in ROWS.items()}
        self.cpu, self.output = self.write("--device", "cpu", out=tmp / "repro")
        self.cuda, _ = self.write(out=tmp / "repro-cuda")

    def nodeid(self, end: str) -> str:
        found = [r["nodeid"] for r in self.report["results"] if r["nodeid"].endswith(end)]
        if end.startswith("aten."):  # a workload row: its op and a failed outcome
            found = [
                r["nodeid"]
                for r in self.report["results"]
                if r.get("suite") == "workload" and f"{end}[" in r["nodeid"] and r["outcome"] == "failed"
            ]
        assert len(found) == 1, (end, found, self.pytest.stdout[-3000:])
        return found[0]

    def write(self, *flags: str, out: Path) -> tuple[dict[str, Path], str]:
        proc = subprocess.run(
            [sys.executable, "-m", "pytest_rocm.cli", "repro", str(self.report_path), "-o", str(out), *flags],
            capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        scripts = {}
        for line in proc.stdout.splitlines():
            nodeid, _, command = line.partition(": python ")
            if command:
                scripts[nodeid] = Path(command.split()[0])
        return scripts, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return Run(tmp_path_factory.mktemp("every_row"))


def run_script(script: Path, *, bugs: bool, device: str | None = "cpu") -> tuple[int, str, list[str]]:
    """(exit status, output, the pytest_rocm modules loaded) of the script in a fresh interpreter
    without PYTHONPATH (the venv's editable install would still find pytest_rocm: a script that
    imported it would show it loaded), with the device's bugs entered around it or not."""
    preload = (
        "import contextlib, runpy, sys\n"
        f"sys.path.insert(0, {str(TESTS)!r})\n"
        "from kernel_mutants import *\n"
        f"sys.argv = [{str(script)!r}] + ({['--device', device] if device else []!r})\n"
        "stack, code = contextlib.ExitStack(), 0\n"
        f"for bug in {BUGS if bugs else ()!r}:\n"
        "    stack.enter_context(eval(bug))\n"
        "try:\n"
        "    with stack:\n"
        f"        runpy.run_path({str(script)!r}, run_name='__main__')\n"
        "except SystemExit as exc:\n"
        "    code = exc.code\n"
        "print('LOADED:', sorted(m for m in sys.modules if m.split('.')[0] == 'pytest_rocm'))\n"
        "sys.exit(code)\n"
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(script.parent)}
    proc = subprocess.run(
        [sys.executable, "-c", preload], capture_output=True, text=True, env=env, cwd=script.parent, timeout=300
    )
    loaded = re.findall(r"^LOADED: \[(.*)\]$", proc.stdout, re.M)
    assert loaded, proc.stdout + proc.stderr
    return proc.returncode, proc.stdout + proc.stderr, [m for m in loaded[0].split(", ") if m]


def test_every_row_kind_fails_under_the_bugs_and_gets_a_script(run: Run) -> None:
    outcomes = {r["nodeid"]: r["outcome"] for r in run.report["results"]}
    assert {kind: outcomes[n] for kind, n in run.nodeids.items()} == dict.fromkeys(ROWS, "failed")
    assert set(run.nodeids.values()) <= set(run.cpu), run.output
    assert set(run.nodeids.values()) <= set(run.cuda)


@pytest.mark.parametrize("kind", list(ROWS))
def test_each_script_loads_no_pytest_rocm_exits_1_under_the_bugs_and_0_without(run: Run, kind: str) -> None:
    script = run.cpu[run.nodeids[kind]]
    status, output, loaded = run_script(script, bugs=True)
    assert (status, loaded) == (1, []), output
    assert "the failure reproduces (exit 1)" in output
    status, output, loaded = run_script(script, bugs=False)
    assert (status, loaded) == (0, []), output
    assert "the failure does not reproduce here (exit 0)" in output


@pytest.mark.parametrize("kind", list(ROWS))
def test_the_default_device_is_cuda_and_its_absence_is_one_line_and_exit_2(run: Run, kind: str) -> None:
    status, output, loaded = run_script(run.cuda[run.nodeids[kind]], bugs=False, device=None)
    assert (status, loaded) == (2, []), output
    said = [line for line in output.splitlines() if line.startswith("cannot run")]
    assert said == [
        "cannot run: no cuda device here (torch.cuda.is_available() is False); --device cpu checks the script"
    ]


def test_a_corpus_row_is_named_by_its_sample_and_the_torch_that_made_it(run: Run) -> None:
    ops = {s: [p for p in r.get("parity") or [] if "repro" in p] for s, r in _rows(run).items()}
    (opinfo,) = ops[run.nodeids["corpus OpInfo"]]
    assert opinfo["repro"]["corpus"] == {
        "db": "opinfo", "name": "exp", "variant": "default", "dtype": "float16", "sample": "s0",
        "torch": torch.__version__, "passed": [0],
    }  # fmt: skip
    # the row's own criterion: the model yardstick on the CPU baseline, with the corpus's factor
    assert opinfo["repro"]["mode"] == "model" and opinfo["repro"]["tolerances"]["float16"]["cpu_factor"] == 10.0
    (module,) = ops[run.nodeids["corpus ModuleInfo"]]
    assert module["repro"]["corpus"]["db"] == "moduleinfo" and module["repro"]["corpus"]["variant"] == "train"
    assert module["repro"]["op"] is None  # a module's parameters: rebuilt from module_db, not recorded
    issue = (run.tmp / "repro" / "ISSUE.md").read_text()
    assert f"## `OpInfo exp (variant default, float16, sample s0 of torch {torch.__version__})`" in issue
    assert f"## `ModuleInfo nn.Conv2d (variant train, float16, sample s0 of torch {torch.__version__})`" in issue
    text = run.cpu[run.nodeids["corpus OpInfo"]].read_text()
    assert "common_methods_invocations import op_db" in text
    status, output, _ = run_script(run.cpu[run.nodeids["corpus OpInfo"]], bugs=True)
    assert status == 1, output
    assert (
        f"the row: OpInfo exp, variant default, float16, sample s0 (index 0 of sample_inputs) of torch "
        f"{torch.__version__}"
    ) in output
    assert "running the recorded values" not in output  # rebuilt from op_db, not from the saved values


def _other_torch(script: Path, tmp: Path) -> Path:
    text = script.read_text()
    mark = f"'torch': '{torch.__version__}'"
    assert text.count(mark) == 1
    copy = tmp / f"other_{script.name}"
    copy.write_text(text.replace(mark, "'torch': '1.99.0'"))
    return copy


def test_in_another_torch_a_corpus_row_runs_its_saved_values_or_says_it_cannot(run: Run, tmp_path: Path) -> None:
    # exp's sample is small and its call was recorded as ops: the saved values stand in for op_db
    script = _other_torch(run.cpu[run.nodeids["corpus OpInfo"]], tmp_path)
    status, output, _ = run_script(script, bugs=True)
    assert status == 1, output
    assert (
        f"sample index belongs to torch 1.99.0; this is torch {torch.__version__}: running the recorded values"
    ) in output
    assert run_script(script, bugs=False)[0] == 0
    # a module's parameters are not saved: the index names another sample there, so it cannot run
    script = _other_torch(run.cpu[run.nodeids["corpus ModuleInfo"]], tmp_path)
    status, output, _ = run_script(script, bugs=True)
    assert status == 2
    assert f"cannot run: sample index belongs to torch 1.99.0; this is torch {torch.__version__}" in output


def _rows(run: Run) -> dict[str, dict[str, Any]]:
    return {r["nodeid"]: r for r in run.report["results"]}


def _passed(report: dict[str, Any]) -> dict[str, Any]:
    """The same rows as they were before the bugs: passed, every parity record ok, no spec."""
    results = []
    for r in report["results"]:
        parity = [{**p, "ok": True, "kind": None} for p in r.get("parity") or []]
        results.append({**r, "outcome": "passed", "reason": None, "parity": [
            {k: v for k, v in p.items() if k != "repro"} for p in parity]})  # fmt: skip
    return {**report, "label": "before", "results": results}


def test_the_table_and_the_diff_name_each_rows_reproducer_command(
    run: Run, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = tmp_path / "before.json"
    base.write_text(json.dumps(_passed(run.report)))
    candidate = str(run.report_path)
    page = tmp_path / "table.html"
    assert main(["table", str(base), candidate, "-o", str(page)]) in (0, 1)
    html = page.read_text()
    assert main(["diff", str(base), candidate]) == 1
    diff = capsys.readouterr().out
    for kind, nodeid in run.nodeids.items():
        command = f"rocm-compat repro {candidate} {_quoted(nodeid)} -o repro/"
        assert f"reproducer: <code>{_html(command)}</code>" in html, kind
        assert f"  {nodeid}\n    {command}\n" in diff, kind


def _quoted(nodeid: str) -> str:
    import shlex

    return shlex.quote(nodeid)


def _html(text: str) -> str:
    import html

    return html.escape(text, quote=True)


def test_a_workload_rows_script_through_a_pytester_run(pytester: pytest.Pytester) -> None:
    # the --rocm-workload rows alone, in pytester's own run: capture, replay under the bugs with
    # --rocm-report, rocm-compat repro, and each script: 1 under the bugs, 0 without
    pytester.makepyfile(device_bugs=PLUGIN)
    capture_workload(pytester.path / "ops.json")
    report = pytester.path / "report.json"
    result = pytester.runpytest_subprocess(
        f"--rocm-workload={pytester.path / 'ops.json'}", "--rocm-device=cpu", f"--rocm-report={report}",
        "-p", "device_bugs", "-p", "no:randomly",
    )  # fmt: skip
    result.assert_outcomes(failed=2, passed=result.parseoutcomes().get("passed", 0))
    out = pytester.path / "repro"
    assert main(["repro", str(report), "-o", str(out), "--device", "cpu"]) == 0
    scripts = sorted(out.glob("repro_*.py"))
    ops = ("aten.exp.default", "aten.add.Tensor")
    assert [[op for op in ops if f"torch.ops.{op}" in s.read_text()] for s in scripts] in ([[o] for o in ops],
                                                                                            [[o] for o in ops[::-1]])  # fmt: skip
    for script in scripts:
        assert run_script(script, bugs=True)[::2] == (1, []), script.read_text()[-2000:]
        assert run_script(script, bugs=False)[::2] == (0, [])
