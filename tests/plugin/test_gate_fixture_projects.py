"""The upgrade gate on fixture projects: each suite is run twice with ``--rocm-report`` (a base and
a candidate) and ``rocm-compat diff`` judges the pair; each case is a way the gate once let a
failure through.

The device-parametrized suite is PyG's switch in small: ``withCUDA`` runs a test once per device,
``[cpu]`` always and ``[cuda:0]`` where a GPU is there (here: a recorded MI300X environment).
"""

from __future__ import annotations

import importlib.util
import json
import re

import pytest
from gate_projects import CPU_ENV, GPU_ENV, WITH_CUDA, run_diff, run_diff_json, run_report

from pytest_rocm import cli

pytestmark = pytest.mark.usefixtures("only_this_plugin")


# -- a new test that fails in the candidate ------------------------------------------------------
def test_a_new_failing_test_fails_the_gate_and_is_named(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makepyfile(**{"tests/test_ops.py": "def test_add():\n    assert 1 + 1 == 2\n"})
    base = run_report(pytester, "base", CPU_ENV)
    pytester.makepyfile(
        **{
            "tests/test_ops.py": "def test_add():\n    assert 1 + 1 == 2\n\n"
            "def test_mul():\n    assert 2 * 2 == 5, 'mul is wrong'\n\n"
            "def test_sub():\n    assert 2 - 1 == 1\n"
        }
    )
    candidate = run_report(pytester, "candidate", CPU_ENV)
    status, out = run_diff(capsys, base, candidate)
    assert status == 1, out
    assert "new failing tests: 1" in out
    assert "tests/test_ops::test_mul: absent -> failed  -- AssertionError: mul is wrong" in out
    assert "tests/test_ops.py::test_mul" in out and "verdict: FAIL" in out
    # relaxed on request: the same pair passes, the failure still listed
    status, out = run_diff(capsys, "--allow-new-failures", base, candidate)
    assert status == 0 and "new failing tests: 1" in out
    parsed = run_diff_json(capsys, base, candidate)
    assert [c["nodeid"] for c in parsed["new_failures"]] == ["tests/test_ops.py::test_mul"]


# -- both halves of a device-parametrized test ---------------------------------------------------
def test_the_gpu_half_of_a_device_parametrized_test_is_compared_on_its_own(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makeconftest(WITH_CUDA)
    body = "def test_conv(device):\n    assert {check}\n\ndef test_pool(device):\n    assert True\n"
    pytester.makepyfile(**{"tests/nn/test_conv.py": body.format(check="True")})
    base = run_report(pytester, "base", GPU_ENV)
    records = json.loads(base.read_text())["results"]
    # two results of one row: both kept, told apart by their device
    conv = sorted((r["nodeid"], r["feature"], r.get("device_variant")) for r in records if "test_conv[" in r["nodeid"])
    assert conv == [
        ("tests/nn/test_conv.py::test_conv[cpu]", "tests/nn/test_conv::test_conv[device]", "cpu"),
        ("tests/nn/test_conv.py::test_conv[cuda:0]", "tests/nn/test_conv::test_conv[device]", "cuda"),
    ]
    pytester.makepyfile(**{"tests/nn/test_conv.py": body.format(check="device == 'cpu', 'wrong on the GPU'")})
    candidate = run_report(pytester, "candidate", GPU_ENV)
    status, out = run_diff(capsys, base, candidate)
    assert status == 1, out
    assert "regressions: 1" in out and "tests/nn/test_conv.py::test_conv[cuda:0]" in out
    # a CPU-only base (the run of today, no GPU): the GPU half is new, and failing, so the gate fails
    cpu_base = run_report(pytester, "cpu", CPU_ENV)
    status, out = run_diff(capsys, cpu_base, candidate)
    assert status == 1, out
    assert "new failing tests: 1" in out and "tests/nn/test_conv.py::test_conv[cuda:0]" in out
    assert "regressions: 0" in out  # the CPU half passed in both


def test_halves_match_by_device_when_the_index_differs(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """``cuda:0`` in one run, ``cuda:3`` in the next (another GPU chosen): the same GPU half."""
    pytester.makeconftest(WITH_CUDA)
    pytester.makepyfile(**{"tests/test_k.py": "def test_k(device):\n    assert True\n"})
    base = run_report(pytester, "base", GPU_ENV)
    pytester.makeconftest(WITH_CUDA.replace('"cuda:0"', '"cuda:3"'))
    candidate = run_report(pytester, "candidate", GPU_ENV)
    status, out = run_diff(capsys, base, candidate)
    assert status == 0, out
    assert "regressions: 0" in out and "new failing tests: 0" in out
    parsed = run_diff_json(capsys, base, candidate)
    assert parsed["added"] == [] and parsed["regressions"] == []


# -- one number for one fact: a gelu regression, the table's figure and the gate's -------------------
#: a real bf16 GELU through ``assert_parity`` (forward and gradient records); GELU_ERROR shifts the
#: bf16 forward (a wrong kernel) and leaves the float64 reference and the gradient right
GELU_SUITE = """
import os
import torch
import torch.nn.functional as F
from pytest_rocm import assert_parity

BROKEN = float(os.environ.get("GELU_ERROR", "0"))

def gelu(x):
    y = F.gelu(x)
    if x.dtype == torch.float64:
        return y
    return y + BROKEN * y.detach().abs().mean()

def test_gelu():
    x = torch.linspace(-6, 6, 4096)
    assert_parity(gelu, x, dtypes=("bfloat16",), grad=True, name="gelu", rtol=1, atol=1, normwise=1)
"""


def test_a_gelu_regression_has_one_growth_figure_in_the_table_and_the_gate(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    if importlib.util.find_spec("torch") is None:  # found, not imported: the suite runs in a child
        pytest.skip("needs torch")
    pytester.makepyfile(**{"ops/test_gelu.py": GELU_SUITE})
    base = run_report(pytester, "base", CPU_ENV, subprocess=True)
    monkeypatch.setenv("GELU_ERROR", "0.1")
    candidate = run_report(pytester, "candidate", CPU_ENV, subprocess=True)
    status, out = run_diff(capsys, base, candidate)
    assert status == 0, out  # grown, still within the test's own tolerance: no regression
    grown = [line for line in out.splitlines() if line.startswith("  ops/test_gelu::test_gelu ")]
    assert len(grown) == 1 and "bfloat16 gelu:" in grown[0], out  # the forward grew, the gradient did not
    gate_figure = grown[0].rsplit("(", 1)[1].rstrip(")")
    records = {p["name"]: p for p in json.loads(base.read_text())["results"][0]["parity"]}
    # the case that made two figures: the unchanged gradient error is the larger one in BASE
    assert records["gelu.grad[0]"]["normwise"] > records["gelu"]["normwise"]
    for fmt in ("md", "html", "csv"):
        capsys.readouterr()
        assert cli.main(["table", "--format", fmt, str(base), str(candidate)]) == 0
        text = capsys.readouterr().out
        if fmt == "csv":  # the CSV has no marks: figures only
            continue
        marks = set(re.findall(r"error grew ([0-9]+x)", text))
        assert marks == {gate_figure}, (fmt, gate_figure, marks)


# -- names in the verdict ------------------------------------------------------------------------
def test_every_change_is_named_with_its_node_id_and_long_lists_collapse(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makepyfile(**{"tests/test_ops.py": "def test_add():\n    assert True\n"})
    base = run_report(pytester, "base", CPU_ENV)
    broken = "".join(f"def test_op_{i:02d}():\n    assert False, 'op {i}'\n\n" for i in range(25))
    pytester.makepyfile(
        **{"tests/test_ops.py": "def test_add():\n    assert True\n\ndef test_new():\n    assert True\n\n" + broken}
    )
    candidate = run_report(pytester, "candidate", CPU_ENV)
    status, out = run_diff(capsys, base, candidate)
    assert status == 1
    # a new passing test is named, not only counted
    assert "new tests in the candidate: 26" in out
    assert "  tests/test_ops::test_new: passed\n    tests/test_ops.py::test_new\n" in out
    failing = [line for line in out.split("new failing tests: 25\n")[1].split("fixes:")[0].splitlines()]
    assert failing[:2] == [
        "  tests/test_ops::test_op_00: absent -> failed  -- AssertionError: op 0",
        "    tests/test_ops.py::test_op_00",
    ]
    assert failing[-1] == "  ... and 5 more (--show-all lists them)" and len(failing) == 2 * 20 + 1
    status, out = run_diff(capsys, "--show-all", base, candidate)
    assert "more (--show-all" not in out and "tests/test_ops.py::test_op_24" in out


# -- a -k subset beside a full run -----------------------------------------------------------------
OPS = "".join(
    f"def test_{name}():\n    assert {ok}\n\n" for name, ok in [("add", True), ("add_inplace", True)]
) + "".join(f"def test_{name}():\n    assert True\n\n" for name in ("mul", "sub", "div", "pow"))


def test_a_subset_candidate_is_said_first_and_compared_on_what_both_ran(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makepyfile(**{"tests/test_ops.py": OPS})
    base = run_report(pytester, "base", CPU_ENV)
    candidate = run_report(pytester, "candidate", CPU_ENV, "-k", "add")
    selection = json.loads(candidate.read_text())["selection"]
    assert selection == {"args": ["."], "keyword": "add", "markers": None, "deselected": 4}
    assert json.loads(base.read_text())["selection"]["deselected"] == 0
    status, out = run_diff(capsys, base, candidate)
    assert out.splitlines()[0] == (
        "NOT COMPARABLE AS A WHOLE: CANDIDATE ran a subset (-k 'add', 4 deselected): compared the tests"
        " both ran, 4 not selected in one of them (--strict-selection compares all)"
    )
    assert status == 0 and "regressions: 0" in out, out
    # the intersection is still a gate: a selected test that fails is a regression
    pytester.makepyfile(
        **{"tests/test_ops.py": OPS.replace("def test_add():\n    assert True", "def test_add():\n    assert False")}
    )
    broken = run_report(pytester, "broken", CPU_ENV, "-k", "add")
    status, out = run_diff(capsys, base, broken)
    assert status == 1 and "regressions: 1" in out and "tests/test_ops::test_add: passed -> failed" in out
    # --strict-selection: every test, the unselected ones missing
    status, out = run_diff(capsys, "--strict-selection", base, candidate)
    assert status == 1 and "regressions: 4" in out
    assert out.splitlines()[0].endswith("compared as if complete (--strict-selection)")
    # the table: the column says it is a subset, its unselected rows are "not selected", none differ
    capsys.readouterr()
    assert cli.main(["table", "--format", "md", str(base), str(candidate)]) == 0
    table = capsys.readouterr().out
    assert "candidate [ci] [subset: -k 'add', 4 deselected]" in table
    assert "| tests/test_ops::test_mul | passed | not selected | works everywhere |" in table
    assert "0 differ between columns" in table  # 4 rows a -k column did not select differ in nothing
    capsys.readouterr()
    assert cli.main(["table", "--format", "html", str(base), str(candidate)]) == 0
    page = capsys.readouterr().out
    assert ">not selected</td>" in page and "<b id=differ-count>0</b>" in page
