"""Vetting a library with its own test suite: foreign-suite fixture projects, one per way the
report could mislead, each run with ``--rocm-report`` and judged by the report it wrote.

(The markers a foreign suite owns are tests/plugin/test_foreign_markers.py.)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_rocm import cli
from pytest_rocm.report.load import load_report
from pytest_rocm.table.model import build_table

pytestmark = pytest.mark.usefixtures("only_this_plugin")

DATA = Path(__file__).parents[1] / "data"
CPU_ENV = f"--rocm-env={DATA / 'envs' / 'cpu_only.json'}"
#: a real error text (tests/data/doctor/errors.json: pytorch/pytorch#53738)
NO_BINARY = next(
    e["error_verbatim"]
    for e in json.loads((DATA / "doctor" / "errors.json").read_text())["errors"]
    if e["category"] == "hipErrorNoBinaryForGpu"
)


def _run(pytester: pytest.Pytester, report: Path, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess(CPU_ENV, f"--rocm-report={report}", "-p", "no:cacheprovider", *args)


def _rows(report: Path) -> dict[str, dict[str, Any]]:
    return {r["nodeid"]: r for r in json.loads(report.read_text())["results"]}


# -- 2: a module that fails to import is a row ---------------------------------------------------------
def test_a_module_that_fails_to_import_is_an_error_row(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        **{
            "tests/unit/test_fine.py": "def test_add():\n    assert 1 + 1 == 2\n",
            "tests/unit/test_kernels.py": f"raise RuntimeError({NO_BINARY!r})\n\ndef test_conv():\n    pass\n",
        }
    )
    report = pytester.path / "r.json"
    result = _run(pytester, report, "--continue-on-collection-errors")
    result.assert_outcomes(passed=1, errors=1)
    rows = _rows(report)
    assert set(rows) == {"tests/unit/test_fine.py::test_add", "tests/unit/test_kernels.py"}
    broken = rows["tests/unit/test_kernels.py"]
    assert broken["outcome"] == "error"
    assert broken["feature"] == "tests/unit/test_kernels" and broken["suite"] == "tests/unit"
    assert broken["reason"] == f"RuntimeError: {NO_BINARY}"
    table = build_table([load_report(report)])
    assert {row.feature: row.status for row in table.rows}["tests/unit/test_kernels"] == "broken"
    # without --continue-on-collection-errors the run stops: the row is there, the report interrupted
    result = _run(pytester, report)
    document = json.loads(report.read_text())
    assert document["interrupted"] and document["summary"]["error"] == 1
    assert "tests/unit/test_kernels.py" in _rows(report)


def test_xdist_workers_report_one_row_per_broken_module_and_one_per_rerun_test(pytester: pytest.Pytester) -> None:
    pytest.importorskip("pytest_rerunfailures", reason="in .ci/requirements.txt and the test extra")
    pytester.makepyfile(
        **{
            "tests/test_fine.py": "def test_a():\n    pass\n\ndef test_b():\n    pass\n",
            "tests/test_cuda_ext.py": "import cuda_only_extension_xyz\n",
            "tests/test_flaky.py": FLAKY,
        }
    )
    report = pytester.path / "r.json"
    result = pytester.runpytest_subprocess(
        CPU_ENV,
        f"--rocm-report={report}",
        "-n",
        "2",
        "-p",
        "xdist",
        "-p",
        "pytest_rerunfailures",
        "-p",
        "pytest_timeout",
        "--reruns",
        "3",
        "--continue-on-collection-errors",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    rows = _rows(report)
    assert [r["outcome"] for r in rows.values()].count("error") == 1  # both workers saw it: one row
    assert rows["tests/test_cuda_ext.py"]["reason"] == "ModuleNotFoundError: No module named 'cuda_only_extension_xyz'"
    attempts = {
        nodeid.split("::")[-1]: (r["outcome"], r.get("attempts", 1)) for nodeid, r in rows.items() if "flaky" in nodeid
    }
    assert attempts["test_flaky"] == ("passed", 3) and attempts["test_always_broken"] == ("failed", 4)
    assert len(rows) == 7  # 2 + 4 tests and the broken module: each once
    assert all(r["accelerator"] is False for r in rows.values() if "collection" not in r["info"])  # through the workers


# -- 3: reruns: one test, one result, the attempts counted ------------------------------------------------
FLAKY = """
import time
from pathlib import Path

import pytest

def _attempt(name):
    path = Path(__file__).with_name(name)
    n = int(path.read_text()) + 1 if path.exists() else 1
    path.write_text(str(n))
    return n

def test_flaky():
    assert _attempt("flaky.count") >= 3, "fails twice"

def test_always_broken():
    assert False, "broken every time"

@pytest.mark.timeout(0.3)
def test_slow_once():
    if _attempt("slow.count") == 1:
        time.sleep(5)

def test_steady():
    pass
"""


def test_reruns_give_one_result_per_test_with_its_attempts(pytester: pytest.Pytester) -> None:
    pytest.importorskip("pytest_rerunfailures", reason="in .ci/requirements.txt and the test extra")
    pytester.makepyfile(**{"tests/test_flaky.py": FLAKY})
    report = pytester.path / "r.json"
    result = _run(pytester, report, "-p", "pytest_rerunfailures", "-p", "pytest_timeout", "--reruns", "3")
    outcomes = result.parseoutcomes()  # what pytest says: 3 passed, 1 failed, 6 rerun (2 + 3 + 1)
    assert (outcomes["passed"], outcomes["failed"], outcomes["rerun"]) == (3, 1, 6)
    rows = {r["nodeid"].split("::")[1]: r for r in _rows(report).values()}
    assert len(rows) == 4
    outcome = {name: (r["outcome"], r.get("attempts", 1)) for name, r in rows.items()}
    assert outcome == {
        "test_flaky": ("passed", 3),
        "test_always_broken": ("failed", 4),
        "test_slow_once": ("passed", 2),
        "test_steady": ("passed", 1),
    }
    assert "broken every time" in rows["test_always_broken"]["reason"]
    assert json.loads(report.read_text())["summary"]["passed"] == 3


CRASHES_ONCE = """
import os
from pathlib import Path


def test_worker_dies_once():
    first = Path(__file__).with_name("attempted")
    if not first.exists():
        first.write_text("1")
        os._exit(3)  # the worker dies; xdist replaces it and pytest-rerunfailures runs the test again


def test_steady():
    pass
"""


def test_a_crashed_attempt_run_again_is_one_row_with_the_last_attempts_outcome(pytester: pytest.Pytester) -> None:
    pytest.importorskip("pytest_rerunfailures", reason="in .ci/requirements.txt and the test extra")
    pytest.importorskip("xdist", reason="in .ci/requirements.txt and the test extra")
    pytester.makepyfile(**{"tests/test_crash.py": CRASHES_ONCE})
    report = pytester.path / "r.json"
    _run(pytester, report, "-p", "xdist", "-p", "pytest_rerunfailures", "-n", "1", "--reruns", "1")
    rows = sorted(
        (r["nodeid"].split("::")[1], r["outcome"], r.get("attempts", 1))
        for r in json.loads(report.read_text())["results"]
    )
    # before: a "crashed" row for the crashed attempt (xdist's crash report, marked rerun, ended the
    # test at once) beside the passed attempt's row
    assert rows == [("test_steady", "passed", 1), ("test_worker_dies_once", "passed", 2)]
    assert json.loads(report.read_text())["summary"]["passed"] == 2


# -- 4: rows keep the module path; diff matches by node id when a name is shared ---------------------------
SAME_NAME = (
    "import pytest\n\n@pytest.mark.parametrize('dtype', ['float32'])\ndef test_differentiability(dtype):\n    pass\n"
)


def test_same_named_tests_in_two_modules_keep_apart_and_diff_stays_clean(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(**{"tests/unittests/regression/test_pearson.py": SAME_NAME})
    base = pytester.path / "base.json"
    _run(pytester, base)
    pytester.makepyfile(**{"tests/unittests/regression/test_spearman.py": SAME_NAME})
    candidate = pytester.path / "candidate.json"
    _run(pytester, candidate)
    features = sorted(r["feature"] for r in _rows(candidate).values())
    assert features == [
        "tests/unittests/regression/test_pearson::test_differentiability[float32]",
        "tests/unittests/regression/test_spearman::test_differentiability[float32]",
    ]
    assert {r["suite"] for r in _rows(candidate).values()} == {"tests/unittests/regression"}
    assert cli.main(["diff", str(base), str(candidate)]) == 0


# -- 5: device tokens in ids: a CPU column and a GPU column share rows ---------------------------------------
DEVICE_CONFTEST = """
def pytest_addoption(parser):
    parser.addoption("--device", default="cpu")

def pytest_generate_tests(metafunc):
    if "device" in metafunc.fixturenames:
        metafunc.parametrize("device", [metafunc.config.getoption("device")])
"""
DEVICE_TESTS = """
import pytest

@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_gaussian_blur(device, dtype):
    assert not (device.startswith("cuda") and dtype == "float16"), "fp16 blur is wrong on this GPU"
"""


def test_device_parametrized_ids_line_up_across_columns(pytester: pytest.Pytester, capsys) -> None:
    pytester.makeconftest(DEVICE_CONFTEST)
    pytester.makepyfile(**{"tests/filters/test_blur.py": DEVICE_TESTS})
    cpu, gpu = pytester.path / "cpu.json", pytester.path / "gpu.json"
    _run(pytester, cpu, "--device=cpu")
    _run(pytester, gpu, "--device=cuda:0", "--rocm-label=gpu")
    assert (
        {r["feature"] for r in _rows(cpu).values()}
        == {r["feature"] for r in _rows(gpu).values()}
        == {
            "tests/filters/test_blur::test_gaussian_blur[device-float32]",
            "tests/filters/test_blur::test_gaussian_blur[device-float16]",
        }
    )
    assert len(build_table([load_report(cpu), load_report(gpu)]).rows) == 2
    capsys.readouterr()
    assert cli.main(["diff", str(cpu), str(gpu)]) == 1
    out = capsys.readouterr().out
    assert "regressions: 1" in out
    # point 8: the regression on one line, then the node id to run again
    assert (
        "  tests/filters/test_blur::test_gaussian_blur[device-float16]: passed -> failed"
        "  -- AssertionError: fp16 blur is wrong on this GPU\n"
        "    tests/filters/test_blur.py::test_gaussian_blur[cuda:0-float16]\n"
    ) in out
    # off: the ids as they are, no shared rows
    off = pytester.path / "off.json"
    _run(pytester, off, "--device=cuda:0", "--rocm-device-ids=off")
    assert "tests/filters/test_blur::test_gaussian_blur[cuda:0-float32]" in {r["feature"] for r in _rows(off).values()}


# -- 7: --collect-only (or nothing run) never replaces a report with less ------------------------------------
def test_collect_only_keeps_an_existing_report(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(**{"tests/test_a.py": "def test_one():\n    pass\n\ndef test_two():\n    pass\n"})
    report = pytester.path / "r.json"
    _run(pytester, report)
    before = report.read_bytes()
    result = _run(pytester, report, "--collect-only")
    assert report.read_bytes() == before
    result.stdout.fnmatch_lines([f"rocm report (*): nothing recorded: kept the earlier report {report}"])
    assert not (pytester.path / "r.json.partial.jsonl").exists()
    _run(pytester, report, "-k", "no_such_test")  # everything deselected: nothing recorded either
    assert report.read_bytes() == before
    _run(pytester, report, "-k", "one")  # the control: a run that records something replaces it
    assert list(_rows(report)) == ["tests/test_a.py::test_one"]


# -- 6: a CPU-only suite in a recorded GPU environment: the column says no test used the GPU -----------
def test_a_cpu_only_suite_on_a_gpu_machine_is_flagged(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(**{"tests/test_rearrange.py": "def test_a():\n    pass\n\ndef test_b():\n    pass\n"})
    report = pytester.path / "r.json"
    result = pytester.runpytest_inprocess(
        f"--rocm-env={DATA / 'envs' / 'mi300x_8.json'}", f"--rocm-report={report}", "-p", "no:cacheprovider"
    )
    result.stdout.fnmatch_lines(["rocm report: 0 of 2 tests used the GPU (cuda:0): warning: none did*"])
    document = load_report(report)
    assert [r["accelerator"] for r in document["results"]] == [False, False]
    table = build_table([document])
    label = document["label"]
    assert table.column(label) == f"{label} [full] (0/2 on the GPU)"
    assert "warning: no test of 2 used the GPU" in cli_table(report)
    # a CPU column is not asked where its tests ran
    cpu = pytester.path / "cpu.json"
    result = _run(pytester, cpu)
    assert "used the GPU" not in result.stdout.str()
    assert build_table([load_report(cpu)]).accelerator == {}


def cli_table(report: Path) -> str:
    out = report.with_suffix(".md")
    assert cli.main(["table", str(report), "-o", str(out)]) == 0
    return out.read_text()
