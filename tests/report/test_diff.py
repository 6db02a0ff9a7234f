"""rocm-compat diff: regressions, fixes, new skips, grown parity errors, exit statuses."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_rocm import cli
from pytest_rocm.report.diff import compare, verdict
from pytest_rocm.report.diff_text import render_text
from pytest_rocm.report.files import write_json
from pytest_rocm.report.load import load_report

DATA = Path(__file__).parents[1] / "data" / "report"


@pytest.fixture
def base() -> dict[str, Any]:
    return load_report(DATA / "gfx942.json")


def with_changes(report: dict[str, Any], label: str = "candidate", **outcomes: str) -> dict[str, Any]:
    new = copy.deepcopy(report)
    new["label"] = label
    for record in new["results"]:
        if record["feature"] in outcomes:
            record["outcome"] = outcomes[record["feature"]]
    return new


def test_identical_reports_pass_the_gate(base: dict[str, Any]) -> None:
    diff = compare(base, with_changes(base))
    assert (diff.regressions, diff.fixes, diff.new_skips, diff.grown_errors) == ([], [], [], [])
    assert verdict(diff) == 0


def test_regressions_fixes_and_new_skips(base: dict[str, Any]) -> None:
    candidate = with_changes(
        base,
        **{
            "operators/matmul[float16]": "failed",  # regression
            "operators/sdpa[bfloat16]": "crashed",  # regression
            "libraries/int8_matmul": "passed",  # fix (crashed before)
            "libraries/flash_attn_forward[bfloat16]": "not-installed",  # regression and new skip
        },
    )
    diff = compare(base, candidate)
    assert [c.feature for c in diff.regressions] == [
        "operators/matmul[float16]",
        "operators/sdpa[bfloat16]",
        "libraries/flash_attn_forward[bfloat16]",
    ]
    assert [(c.feature, c.base, c.candidate) for c in diff.fixes] == [("libraries/int8_matmul", "crashed", "passed")]
    assert [c.feature for c in diff.new_skips] == ["libraries/flash_attn_forward[bfloat16]"]
    assert verdict(diff) == 1


def test_a_feature_missing_from_the_candidate_is_a_regression(base: dict[str, Any]) -> None:
    candidate = with_changes(base)
    candidate["results"] = [r for r in candidate["results"] if r["feature"] != "operators/matmul[float16]"]
    diff = compare(base, candidate)
    assert [(c.feature, c.candidate) for c in diff.regressions] == [("operators/matmul[float16]", None)]


def test_tests_sharing_a_feature_name_match_whatever_order_they_finished_in(base: dict[str, Any]) -> None:
    shared = [
        {
            "nodeid": f"suites/operators/test_{n}.py::test_x",
            "feature": "operators/x",
            "outcome": outcome,
            "suite": "operators",
            "parity": [],
        }
        for n, outcome in (("a", "passed"), ("b", "failed"))
    ]
    before, after = with_changes(base), with_changes(base)
    before["results"] += shared
    after["results"] += shared[::-1]  # xdist finished them the other way round this time
    diff = compare(before, after)
    assert (diff.regressions, diff.fixes, diff.added) == ([], [], [])


def test_new_skips_fail_only_when_asked(base: dict[str, Any]) -> None:
    candidate = with_changes(base, **{"operators/sum_long[float16]": "skipped"})  # xfailed -> skipped
    diff = compare(base, candidate)
    assert [c.feature for c in diff.new_skips] == ["operators/sum_long[float16]"] and not diff.regressions
    assert verdict(diff) == 0
    assert verdict(diff, fail_on_new_skips=True) == 1


@pytest.mark.parametrize(("growth", "grown"), [(9.0, False), (11.0, True), (float("inf"), True)])
def test_parity_errors_grown_by_more_than_the_factor(base: dict[str, Any], growth: float, grown: bool) -> None:
    candidate = with_changes(base)
    record = next(r for r in candidate["results"] if r["feature"] == "operators/matmul[bfloat16]")
    before = record["parity"][0]["normwise"]
    record["parity"][0]["normwise"] = before * growth
    diff = compare(base, candidate, factor=10)
    assert [g.feature for g in diff.grown_errors] == (["operators/matmul[bfloat16]"] if grown else [])
    assert verdict(diff) == 0  # still passing: only a regression fails by default
    assert verdict(diff, fail_on_grown_errors=True) == (1 if grown else 0)


def test_errors_below_the_floor_do_not_make_noise(base: dict[str, Any]) -> None:
    small = with_changes(base)
    record = next(r for r in small["results"] if r["feature"] == "libraries/vector_add")  # fp32 1e-7
    record["parity"][0]["normwise"] = 5e-6  # 50x, but tiny
    assert compare(base, small).grown_errors == []
    assert [g.feature for g in compare(base, small, floor=1e-9).grown_errors] == ["libraries/vector_add"]


def test_cli_exit_statuses_and_output(tmp_path: Path, base: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    write_json(tmp_path / "same.json", with_changes(base))
    write_json(tmp_path / "worse.json", with_changes(base, **{"operators/conv2d[float16]": "timeout"}))
    assert cli.main(["diff", str(DATA / "gfx942.json"), str(tmp_path / "same.json")]) == 0
    assert "verdict: ok" in capsys.readouterr().out
    assert cli.main(["diff", str(DATA / "gfx942.json"), str(tmp_path / "worse.json")]) == 1
    out = capsys.readouterr().out
    assert "regressions: 1" in out and "operators/conv2d[float16]: passed -> timeout" in out
    assert cli.main(["diff", "--json", str(DATA / "gfx942.json"), str(tmp_path / "worse.json")]) == 1
    parsed = json.loads(capsys.readouterr().out)
    assert parsed["exit"] == 1 and parsed["regressions"][0]["candidate"] == "timeout"


@pytest.mark.parametrize("bad", ["missing.json", "notjson.json"])
def test_cli_bad_input_is_one_line_and_exit_2(tmp_path: Path, bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "notjson.json").write_text("this is not json")
    assert cli.main(["diff", str(DATA / "gfx942.json"), str(tmp_path / bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"rocm-compat diff: {tmp_path / bad}: ") and "\n" not in err
    assert cli.main(["diff", str(DATA / "gfx942.json"), str(DATA / "gfx942.json"), "--factor", "0"]) == 2


def _record(nodeid: str, feature: str, outcome: str = "passed") -> dict[str, Any]:
    return {"nodeid": nodeid, "feature": feature, "outcome": outcome, "suite": "x", "parity": []}


def test_a_name_shared_in_the_candidate_is_matched_by_node_id(base: dict[str, Any]) -> None:
    """A new same-named test elsewhere: the old one is found by its node id, not called missing."""
    before, after = with_changes(base), with_changes(base)
    before["results"] = [*before["results"], _record("m/test_a.py::test_x", "rows/x")]
    after["results"] = [
        *after["results"],
        _record("m/test_b.py::test_x", "rows/x"),
        _record("m/test_a.py::test_x", "rows/x"),
    ]
    diff = compare(before, after)
    assert (diff.regressions, diff.fixes) == ([], [])
    assert diff.added == ["rows/x (m/test_b.py::test_x)"]
    # the same test failing is still found, under its node id
    after["results"][-1]["outcome"] = "failed"
    assert [(c.feature, c.nodeid) for c in compare(before, after).regressions] == [
        ("rows/x (m/test_a.py::test_x)", "m/test_a.py::test_x")
    ]


def test_a_unique_name_matches_across_node_ids_and_prints_the_candidates(base: dict[str, Any]) -> None:
    """Device tokens normalised: one row, two node ids; the regression names the one to run again."""
    before, after = with_changes(base), with_changes(base)
    before["results"] = [
        *before["results"],
        _record("t/test_k.py::test_b[cpu-float16]", "t/test_k::test_b[device-float16]"),
    ]
    after["results"] = [
        *after["results"],
        _record("t/test_k.py::test_b[cuda:0-float16]", "t/test_k::test_b[device-float16]", "failed"),
    ]
    diff = compare(before, after)
    assert [(c.feature, c.nodeid) for c in diff.regressions] == [
        ("t/test_k::test_b[device-float16]", "t/test_k.py::test_b[cuda:0-float16]")
    ]
    text = render_text(diff, "base", "candidate", 10.0)
    assert "  t/test_k::test_b[device-float16]: passed -> failed\n    t/test_k.py::test_b[cuda:0-float16]\n" in text
