"""Verdicts that cannot lie (issue 56, points 1-3): each project is run with ``--rocm-report`` as a
new user runs it, and the gate (``rocm-compat diff``) and the table are read back. Each case is one
where a verdict was false: a dtype that broke inside a test that already failed, "0 slowdowns"
when nothing was timed, and the table saying "works everywhere" / "partial" / "broken" where the
gate said otherwise.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from gate_projects import CPU_ENV, GPU_ENV, WITH_CUDA, run_diff, run_report

from pytest_rocm import cli
from pytest_rocm.report.load import load_reports
from pytest_rocm.table.markdown import render_markdown
from pytest_rocm.table.model import build_table

pytestmark = pytest.mark.usefixtures("only_this_plugin")


def _statuses(*reports: Path) -> dict[str, str]:
    return {row.feature: row.status for row in build_table(load_reports(reports)).rows}


# -- 1. a dtype that breaks inside a test that already failed --------------------------------------
#: the README's style: one assert_parity over three dtypes. fp16 is wrong in both runs (the test
#: fails in BASE already); BF16_ERROR breaks bf16 in the candidate
THREE_DTYPES = """
import os
import torch
import torch.nn.functional as F
from pytest_rocm import assert_parity

BF16 = float(os.environ.get("BF16_ERROR", "0"))

def gelu(x):
    y = F.gelu(x)
    if x.dtype == torch.float16:
        return y + 0.2 * y.detach().abs().mean()
    if x.dtype == torch.bfloat16:
        return y + BF16 * y.detach().abs().mean()
    return y

def test_gelu():
    x = torch.linspace(-6, 6, 2048)
    assert_parity(gelu, x, dtypes=("float32", "float16", "bfloat16"), grad=True, name="gelu")
"""


def test_a_dtype_that_breaks_inside_a_failed_test_fails_the_gate_and_is_named(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    if importlib.util.find_spec("torch") is None:  # found, not imported: the suite runs in a child
        pytest.skip("needs torch")
    pytester.makepyfile(**{"ops/test_act.py": THREE_DTYPES})
    base = run_report(pytester, "base", CPU_ENV, subprocess=True)
    monkeypatch.setenv("BF16_ERROR", "0.5")
    candidate = run_report(pytester, "candidate", CPU_ENV, subprocess=True)
    (before,), (after,) = (json.loads(p.read_text())["results"] for p in (base, candidate))
    assert before["outcome"] == after["outcome"] == "failed"  # failed -> failed: the outcome says nothing
    assert {(r["dtype"], r["name"]): r["ok"] for r in before["parity"]}[("bfloat16", "gelu")] is True
    status, out = run_diff(capsys, base, candidate)
    assert status == 1, out
    assert "regressions: 0" in out and "parity records that broke (ok in BASE, not ok in CANDIDATE): 1" in out
    assert "  ops/test_act::test_gelu bfloat16 gelu: ok -> not ok (error " in out
    assert "    ops/test_act.py::test_gelu\n" in out and "verdict: FAIL" in out
    # the table's status of the row is the gate's: regressed, not "broken"
    assert _statuses(base, candidate) == {"ops/test_act::test_gelu": "regressed"}
    # the same run again is no regression: nothing broke
    again = run_report(pytester, "again", CPU_ENV, subprocess=True)
    assert run_diff(capsys, candidate, again)[0] == 0


def test_a_record_that_broke_in_a_test_that_passes_both_times_fails_the_gate(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """A test that records its parity and does not assert on it (a survey): passed -> passed."""
    survey = (
        "def test_survey(record_property):\n"
        "    record_property('rocm_parity', [{{'dtype': 'float16', 'name': 'mm', 'normwise': {e}, 'ok': {ok}}}])\n"
    )
    pytester.makepyfile(**{"tests/test_s.py": survey.format(e=1e-4, ok=True)})
    base = run_report(pytester, "base", CPU_ENV)
    pytester.makepyfile(**{"tests/test_s.py": survey.format(e=5e-2, ok=False)})
    candidate = run_report(pytester, "candidate", CPU_ENV)
    status, out = run_diff(capsys, base, candidate)
    assert status == 1, out
    assert "tests/test_s::test_survey float16 mm: ok -> not ok (error 1.0e-04 -> 5.0e-02)" in out


# -- 2. nothing compared is not nothing slower -------------------------------------------------------
def test_the_speed_gate_with_nothing_measured_says_so_and_fails_closed(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makepyfile(**{"tests/test_ops.py": "def test_a():\n    pass\n\ndef test_b():\n    pass\n"})
    base = run_report(pytester, "base", CPU_ENV)
    candidate = run_report(pytester, "candidate", CPU_ENV)
    status, out = run_diff(capsys, "--fail-on-slowdown", base, candidate)
    assert status == 3, out
    assert "slowdowns more than" not in out
    line = (
        "slowdowns: speed not compared: no row measured in both reports (2 rows could have been;"
        " measured: BASE 0, CANDIDATE 0)"
    )
    assert line in out.splitlines()
    # without the speed gate the pair passes, and still says speed was not compared
    status, out = run_diff(capsys, base, candidate)
    assert status == 0 and line in out.splitlines()
    capsys.readouterr()
    cli.main(["diff", "--json", "--fail-on-slowdown", str(base), str(candidate)])
    parsed = json.loads(capsys.readouterr().out)
    assert (parsed["exit"], parsed["speed_compared"], parsed["speed_comparable"]) == (3, 0, 2)


# -- 3. the table and the gate judge alike -------------------------------------------------------
def test_a_gpu_half_that_skipped_is_not_works_everywhere(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makeconftest(WITH_CUDA)
    body = "import pytest\n\ndef test_conv(device):\n    {skip}assert True\n"
    pytester.makepyfile(**{"tests/test_conv.py": body.format(skip="")})
    base = run_report(pytester, "base", GPU_ENV)
    pytester.makepyfile(
        **{"tests/test_conv.py": body.format(skip="if device != 'cpu':\n        pytest.skip('no kernel')\n    ")}
    )
    candidate = run_report(pytester, "candidate", GPU_ENV)
    status, out = run_diff(capsys, base, candidate)
    assert status == 1 and "regressions: 1" in out, out  # the GPU half: passed -> skipped
    assert _statuses(base, candidate) == {"tests/test_conv::test_conv[device]": "regressed"}
    # one column alone: the CPU half passed, the GPU half never ran: not "works everywhere"
    assert _statuses(candidate) == {"tests/test_conv::test_conv[device]": "partial"}


def test_tests_that_vanished_with_their_module_are_regressions_in_the_table_too(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makepyfile(
        **{
            "tests/test_a.py": "def test_x():\n    pass\n\ndef test_y():\n    pass\n",
            "tests/test_b.py": "def test_z():\n    pass\n",
        }
    )
    base = run_report(pytester, "base", CPU_ENV)
    pytester.makepyfile(**{"tests/test_a.py": "import not_a_module_anywhere\n\ndef test_x():\n    pass\n"})
    candidate = run_report(pytester, "candidate", CPU_ENV, "--continue-on-collection-errors")
    status, out = run_diff(capsys, base, candidate)
    assert status == 1 and "regressions: 2" in out, out
    statuses = _statuses(base, candidate)
    assert statuses["tests/test_a::test_x"] == statuses["tests/test_a::test_y"] == "regressed", statuses
    assert statuses["tests/test_b::test_z"] == "works everywhere"


def test_a_run_over_other_paths_is_a_subset_in_the_table_as_in_the_gate(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makepyfile(
        **{"tests/test_a.py": "def test_x():\n    pass\n", "tests/test_b.py": "def test_z():\n    pass\n"}
    )
    base = run_report(pytester, "base", CPU_ENV, "tests")
    candidate = run_report(pytester, "candidate", CPU_ENV, "tests/test_b.py")
    status, out = run_diff(capsys, base, candidate)
    assert status == 0 and out.startswith("NOT COMPARABLE AS A WHOLE: BASE ran tests, CANDIDATE tests/test_b.py"), out
    table = build_table(load_reports([base, candidate]))
    assert table.column("candidate") == "candidate [ci] [subset: paths: tests/test_b.py]"
    assert {row.feature: row.status for row in table.rows} == {
        "tests/test_a::test_x": "works everywhere",  # not selected by the candidate: not "partial"
        "tests/test_b::test_z": "works everywhere",
    }
    assert "| not selected |" in render_markdown(table)


def test_xfailed_rows_of_a_passing_run_are_not_failures(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        **{
            "tests/test_k.py": "import pytest\n\ndef test_ok():\n    pass\n\n"
            "@pytest.mark.xfail(reason='known: gfx1100 bug')\ndef test_known():\n    assert False\n"
        }
    )
    report = pytester.path / "r.json"
    result = pytester.runpytest_inprocess(
        CPU_ENV, f"--rocm-report={report}", "--rocm-label=r", "-p", "no:cacheprovider"
    )
    assert result.ret == 0  # pytest calls the run passed
    md = render_markdown(build_table(load_reports([report])))
    assert "## Failures" not in md and "1 expected failure" in md and "0 broken" in md
    assert "| passed | xfailed | failed | crashed | not-installed | skipped |" in md
    assert "| tests | r [ci] | 1 | 1 | 0 | 0 | 0 | 0 |" in md


def test_rows_measured_in_one_report_only_are_counted_as_not_compared(tmp_path: Path) -> None:
    from pytest_rocm.report.diff import compare
    from pytest_rocm.report.diff_text import render_text
    from pytest_rocm.report.records import assemble

    perf = {"median_s": 0.01, "spread": 0.01}
    rows = [{"nodeid": f"t.py::test_{i}", "feature": f"t{i}", "outcome": "passed", "perf": perf} for i in range(3)]
    lost = [dict(r) for r in rows]
    for record in lost[1:]:
        del record["perf"]  # the candidate timed one row of three
    diff = compare(assemble("b", {}, rows), assemble("c", {}, lost))  # type: ignore[arg-type]
    text = render_text(diff, "b", "c", 10.0, 1.25)
    assert "slowdowns more than 1.25x: 0 (compared the 1 row measured in both; measured: BASE 3, CANDIDATE 1)" in text
    assert diff.speed_compared == 1
