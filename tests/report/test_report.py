"""Unit tests of pytest_rocm.report.records and report_load: feature names, outcome mapping, records, files."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from pytest_rocm import INFO_PROPERTY
from pytest_rocm.env.model import Device, Environment
from pytest_rocm.report import files
from pytest_rocm.report import load as report_load
from pytest_rocm.report import records as report
from pytest_rocm.report.load import ReportError

DATA = Path(__file__).parents[1] / "data" / "report"


# -- feature names ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("nodeid", "feature", "suite"),
    [
        ("suites/operators/test_gemm.py::test_matmul[bfloat16]", "operators/matmul[bfloat16]", "operators"),
        ("operators/test_gemm.py::test_matmul[float16-64x64]", "operators/matmul[float16-64x64]", "operators"),
        ("pytest_rocm/_suites/libraries/test_triton.py::test_vector_add", "libraries/vector_add", "libraries"),
        ("suites/models/test_tiny.py::TestLlama::test_generate[bf16]", "models/Llama.generate[bf16]", "models"),
        # a foreign suite: the row keeps the module path, the section is the module's folder
        ("tests/test_x.py::test_thing", "tests/test_x::test_thing", "tests"),
        (
            "tests/unittests/regression/test_pearson.py::TestPearson::test_x[float32]",
            "tests/unittests/regression/test_pearson::TestPearson::test_x[float32]",
            "tests/unittests/regression",
        ),
        # device tokens in a foreign suite's ids become "device"; a bundled suite's ids are its own
        ("tests/test_k.py::test_blur[cpu-float32]", "tests/test_k::test_blur[device-float32]", "tests"),
        ("tests/test_k.py::test_blur[cuda:1-float32]", "tests/test_k::test_blur[device-float32]", "tests"),
        ("tests/test_k.py::test_blur[cuda0]", "tests/test_k::test_blur[device]", "tests"),
        ("tests/test_k.py::test_blur[cpuinfo-cudnn]", "tests/test_k::test_blur[cpuinfo-cudnn]", "tests"),
        ("suites/operators/test_a.py::test_copy[cpu]", "operators/copy[cpu]", "operators"),
        ("test_x.py::test_thing", "x/thing", "x"),
        # brackets inside parameters must not be mistaken for the end of the name
        ("suites/operators/test_a.py::test_op[shape[2]]", "operators/op[shape[2]]", "operators"),
    ],
)
def test_feature_and_suite_from_nodeid(nodeid: str, feature: str, suite: str) -> None:
    assert report.feature_of(nodeid) == feature
    assert report.suite_of(nodeid) == suite


def test_feature_marker_wins() -> None:
    assert report.feature_of("suites/operators/test_a.py::test_b", "sdpa/flash") == "sdpa/flash"


# -- outcome mapping from real TestReport objects ------------------------------------------------
def phase(when: str, outcome: str, longrepr: object = None, **extra: object) -> pytest.TestReport:
    rep = pytest.TestReport("a.py::t", ("a.py", 1, "t"), {}, outcome, longrepr, when, duration=0.5)  # type: ignore[arg-type]
    for key, value in extra.items():
        setattr(rep, key, value)
    return rep


OK_SETUP, OK_TEARDOWN = phase("setup", "passed"), phase("teardown", "passed")


@pytest.mark.parametrize(
    ("phases", "expected"),
    [
        ([OK_SETUP, phase("call", "passed"), OK_TEARDOWN], ("passed", None)),
        ([OK_SETUP, phase("call", "failed", "E  assert 1 == 2"), OK_TEARDOWN], ("failed", "E  assert 1 == 2")),
        ([phase("setup", "failed", "RuntimeError: boom"), OK_TEARDOWN], ("error", "RuntimeError: boom")),
        ([OK_SETUP, phase("call", "passed"), phase("teardown", "failed", "OSError: x")], ("error", "OSError: x")),
        ([phase("setup", "skipped", ("a.py", 1, "Skipped: no gpu")), OK_TEARDOWN], ("skipped", "no gpu")),
        (
            [phase("setup", "skipped", ("a.py", 1, "Skipped: not installed: flash_attn (needs >=2)")), OK_TEARDOWN],
            ("not-installed", "not installed: flash_attn (needs >=2)"),
        ),
        (
            [OK_SETUP, phase("call", "skipped", ("a.py", 1, ""), wasxfail="gfx1100 bug"), OK_TEARDOWN],
            ("xfailed", "gfx1100 bug"),
        ),
        ([OK_SETUP, phase("call", "passed", wasxfail="known"), OK_TEARDOWN], ("xpassed", "known")),
        (
            [OK_SETUP, phase("call", "failed", "[XPASS(strict)] known"), OK_TEARDOWN],
            ("xpassed", "[XPASS(strict)] known"),
        ),
        (
            [OK_SETUP, phase("call", "failed", "E   Failed: Timeout (>2.0s) from pytest-timeout."), OK_TEARDOWN],
            ("timeout", "Timeout (>2.0s) from pytest-timeout"),
        ),
        (
            [OK_SETUP, phase("call", "failed", "E   Failed: Timeout (>144s) from the distributed watchdog: rank 1")],
            ("timeout", "Timeout (>144s) from the distributed watchdog"),
        ),
        (
            [OK_SETUP, phase("call", "failed", "E   Failed: Timeout (>30s) in the known-issue child: hung")],
            ("timeout", "Timeout (>30s) in the known-issue child"),
        ),
        (
            # the convention, not a list of suites: any watchdog failing with that shape is a hang,
            # also as pytest.fail(..., pytrace=False) writes it (the message alone)
            [OK_SETUP, phase("call", "failed", "Timeout (>5s) from a new suite's watchdog: rank 3")],
            ("timeout", "Timeout (>5s) from a new suite's watchdog"),
        ),
        (
            [OK_SETUP, phase("call", "failed", "E   AssertionError: Timeout (>2s) is what I print")],
            ("failed", "E   AssertionError: Timeout (>2s) is what I print"),
        ),
        (
            [OK_SETUP, phase("???", "failed", "worker 'gw0' crashed while running 'a.py::t'")],
            ("crashed", "worker 'gw0' crashed while running 'a.py::t'"),
        ),
        ([OK_SETUP], ("error", "test did not run to completion")),
    ],
)
def test_outcome_of(phases: list[pytest.TestReport], expected: tuple[str, str | None]) -> None:
    assert report.outcome_of(phases) == expected


def test_dead_worker_after_the_timeout_is_a_timeout_before_it_a_crash() -> None:
    crash = [phase("???", "failed", "worker 'gw1' crashed while running 'a.py::t'")]
    assert report.outcome_of(crash, elapsed=2.1, timeout=2.0)[0] == "timeout"
    assert report.outcome_of(crash, elapsed=0.2, timeout=2.0)[0] == "crashed"
    assert report.outcome_of(crash, elapsed=2.1, timeout=None)[0] == "crashed"


def test_a_tests_own_timeout_marker_decides_for_a_dead_worker() -> None:
    # the setup report brought the marker's 2 s before the call hung; the session's timeout is 900 s
    setup = phase("setup", "passed", user_properties=[["rocm_timeout", 2.0]])
    crash = phase("???", "failed", "worker 'gw1' crashed while running 'a.py::t'")
    assert report.build_record("a.py::t", [setup, crash], elapsed=2.1, timeout=900.0)["outcome"] == "timeout"
    assert report.build_record("a.py::t", [setup, crash], elapsed=0.3, timeout=900.0)["outcome"] == "crashed"
    assert report.build_record("a.py::t", [OK_SETUP, crash], elapsed=2.1, timeout=900.0)["outcome"] == "crashed"


@pytest.mark.parametrize("tokens", [(), ("cpu",)], ids=["tokens-off", "tokens-cpu"])
def test_a_never_run_test_is_named_with_the_sessions_device_tokens(tokens: tuple[str, ...]) -> None:
    """A test the run stopped before gets the row it would have had had it run: the session's
    ``--rocm-device-ids`` tokens, not the defaults (with them off ``[cpu]`` stays in the name)."""
    nodeid = "tests/test_a.py::test_b[cpu]"
    ran = report.build_record(nodeid, [OK_SETUP], device_tokens=tokens)
    never = report.not_run_record(nodeid, "stopped", tokens)
    assert (never["feature"], never["suite"]) == (ran["feature"], ran["suite"])
    assert ("[cpu]" in never["feature"]) is (tokens == ())
    assert never["outcome"] == "not-run" and never["reason"] == "stopped"


def test_record_flattens_parity_merges_info_and_reads_serialized_properties() -> None:
    # under xdist user_properties arrive as lists, not tuples, and each phase carries its own copy
    call_props = [["rocm_parity", [{"dtype": "float16", "normwise": 1e-3}]], [INFO_PROPERTY, {"lib": "1"}]]
    teardown_props = [
        *call_props,
        ["rocm_parity", [{"dtype": "bfloat16", "normwise": float("inf")}]],
        [INFO_PROPERTY, {"sdpa": "math"}],
        ["rocm_feature", "attention/sdpa"],
    ]
    phases = [
        OK_SETUP,
        phase("call", "passed", user_properties=call_props),
        phase("teardown", "passed", user_properties=teardown_props),
    ]
    record = report.build_record("suites/operators/test_a.py::test_b", phases)
    assert record["feature"] == "attention/sdpa"
    assert record["suite"] == "operators"
    assert [p["dtype"] for p in record["parity"]] == ["float16", "bfloat16"]
    assert record["parity"][1]["normwise"] == "inf"  # strict JSON
    assert record["info"] == {"lib": "1", "sdpa": "math"}
    assert record["duration"] == pytest.approx(1.5)
    json.dumps(record, allow_nan=False)


def test_metric_prefers_normwise_and_reads_non_finite_strings() -> None:
    assert report_load.metric({"normwise": 2e-3, "max_rel": 5.0}) == 2e-3
    assert report_load.metric({"normwise": None, "max_rel": 5.0}) == 5.0
    assert report_load.metric({"normwise": "inf"}) == float("inf")
    assert report_load.metric({"dtype": "float16"}) is None


# -- labels ----------------------------------------------------------------------------------------
def test_default_label() -> None:
    gpu = Device(index=0, name="AMD Radeon RX 7900 XTX", arch="gfx1100", gfx="gfx1100")
    env = Environment(backend="rocm", torch="2.6.0+rocm6.2.4", rocm="6.2.4", devices=[gpu])
    assert report.default_label(env) == "rocm torch2.6.0 rocm6.2.4 gfx1100"
    assert report.default_label(env, "cpu") == "cpu torch2.6.0"
    assert report.default_label(Environment(torch="2.13.0+cpu")) == "cpu torch2.13.0"
    env.devices.append(Device(index=1, name="iGPU", arch="gfx1036", gfx="gfx1036"))
    assert report.default_label(env, "cuda:1").endswith("gfx1036")
    assert report.slug("rocm torch2.6.0 rocm6.2.4 gfx1100") == "rocm-torch2.6.0-rocm6.2.4-gfx1100"


# -- files ----------------------------------------------------------------------------------------
def test_sidecar_round_trip_drops_a_cut_off_last_line(tmp_path: Path) -> None:
    path = tmp_path / "r.json.partial.jsonl"
    sidecar = files.Sidecar(path, {"label": "L", "environment": {"backend": "cpu"}})
    for outcome in ("passed", "failed"):
        sidecar.append({"nodeid": f"a.py::{outcome}", "feature": f"a/{outcome}", "outcome": outcome})
    sidecar.close()
    with open(path, "a", encoding="utf-8") as handle:
        handle.write('{"nodeid": "a.py::half", "feat')  # the kill hit mid-write
    loaded = report_load.load_report(path)
    assert [r["outcome"] for r in loaded["results"]] == ["passed", "failed"]
    assert loaded["interrupted"] is True and loaded["dropped_partial_line"] is True
    assert loaded["summary"]["total"] == 2 and loaded["summary"]["failed"] == 1


def test_final_report_validates(tmp_path: Path) -> None:
    doc = report.assemble("L", {}, [{"nodeid": "a::b", "feature": "a/b", "outcome": "passed"}])
    files.write_json(tmp_path / "r.json", doc)
    assert report_load.load_report(tmp_path / "r.json")["summary"]["passed"] == 1


def test_the_final_report_has_one_line_per_result_and_reads_back_the_same(tmp_path: Path) -> None:
    """Indenting every record took the pure-Python encoder (31 ms of 5,000 trivial tests' run):
    each result is one line now, the envelope still indented, the JSON the same."""
    rows = [
        {"nodeid": "a.py::t[ü]", "feature": "a/t[ü]", "outcome": "passed", "parity": [{"max_abs": "inf", "ok": False}]},
        {"nodeid": "a.py::u", "feature": "a/u", "outcome": "failed", "reason": 'say "why"\nagain', "info": {"n": 1.5}},
    ]
    doc = report.assemble("L", {"backend": "cpu"}, rows)  # type: ignore[list-item]
    files.write_json(tmp_path / "r.json", doc)
    text = (tmp_path / "r.json").read_text()
    assert json.loads(text) == json.loads(json.dumps(doc))
    lines = text.splitlines()
    assert [line.strip().rstrip(",") for line in lines if '"nodeid"' in line] == [json.dumps(r) for r in rows]
    assert ' "label": "L",' in lines and ' "environment": {' in lines  # the envelope indented as before
    empty = report.assemble("L", {}, [])
    assert json.loads(files.report_text(empty)) == empty and ' "results": [],' in files.report_text(empty)


def test_a_record_line_is_strict_json_as_json_dumps_writes_it() -> None:
    record = {"nodeid": "a.py::t", "info": {"x": [1, 2.5, None, True], "ü": "\u2603"}, "parity": []}
    assert files.encode_line(record) == json.dumps(record, allow_nan=False)
    with pytest.raises(ValueError, match="not JSON compliant"):
        files.encode_line({"max_abs": float("nan")})
    with pytest.raises(TypeError, match="not JSON serializable"):
        files.encode_line({"x": object()})


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("missing.json", "missing.json: no such file"),
        ("truncated.json", "truncated.json: truncated JSON"),
        ("not_json.json", "not_json.json: not valid JSON (line 1, column 1"),
        ("schema2.json", "schema2.json: schema is 'pytest-rocm/report/2', expected 'pytest-rocm/report/1'"),
        ("environment.json", "environment.json: schema is 'pytest-rocm/environment/1'"),
        ("bad_outcome.json", "bad_outcome.json: results[1].outcome is 'exploded', expected one of"),
        ("list.json", "list.json: expected a JSON object, got list"),
        ("empty.json", "empty.json: empty file"),
    ],
)
def test_bad_reports_give_one_line_naming_the_file(tmp_path: Path, name: str, message: str) -> None:
    good = json.loads((DATA / "gfx1100.json").read_text())
    contents = {
        "truncated.json": (DATA / "gfx1100.json").read_text()[:300],
        "not_json.json": "<html>not a report</html>",
        "schema2.json": json.dumps({**good, "schema": "pytest-rocm/report/2"}),
        "environment.json": (Path(__file__).parents[1] / "data" / "envs" / "cpu_only.json").read_text(),
        "bad_outcome.json": json.dumps(
            {**good, "results": [good["results"][0], {**good["results"][0], "outcome": "exploded"}]}
        ),
        "list.json": "[]",
        "empty.json": "",
    }
    if name in contents:
        (tmp_path / name).write_text(contents[name])
    with pytest.raises(ReportError) as info:
        report_load.load_report(tmp_path / name)
    text = str(info.value)
    assert message in text and "\n" not in text
    assert text.startswith(str(tmp_path / name))


def test_missing_report_points_at_the_sidecar_of_a_killed_run(tmp_path: Path) -> None:
    files.Sidecar(files.sidecar_path(tmp_path / "r.json"), {"label": "L"}).close()
    with pytest.raises(ReportError, match=r"r\.json: no such file \(an interrupted run left .*r\.json\.partial\.jsonl"):
        report_load.load_report(tmp_path / "r.json")


def test_same_label_twice_is_an_error() -> None:
    with pytest.raises(ReportError, match=re.escape("label 'rocm torch2.6.0 rocm6.2.4 gfx1100' is also the label of")):
        report_load.load_reports([DATA / "gfx1100.json", DATA / "gfx1100.json"])


def test_device_tokens_are_configurable() -> None:
    from pytest_rocm.report import features

    assert report.feature_of("t/test_k.py::test_b[cpu-xla]", None, ("xla",)) == "t/test_k::test_b[cpu-device]"
    assert report.feature_of("t/test_k.py::test_b[cpu]", None, ()) == "t/test_k::test_b[cpu]"
    assert features.parse_device_tokens("off") == ()
    assert features.parse_device_tokens(" CPU , cuda ") == ("cpu", "cuda")
    with pytest.raises(ValueError, match="bad device token 'cu da'"):
        features.parse_device_tokens("cpu,cu da")


def test_the_bundled_suite_names_are_the_folders_under_suites() -> None:
    from pytest_rocm.report.features import BUNDLED_SUITES

    suites = Path(__file__).parents[2] / "suites"
    assert tuple(sorted(p.name for p in suites.iterdir() if p.is_dir() and p.name[0] != "_")) == BUNDLED_SUITES


def test_a_sidecar_environment_line_fills_in_the_header(tmp_path: Path) -> None:
    # detection in a child process: the header line has no environment, a later line brings it
    path = tmp_path / "r.json.partial.jsonl"
    sidecar = files.Sidecar(path, {"created": "2026-12-01T13:00:00+00:00"})
    sidecar.append({"nodeid": "a.py::first", "feature": "a/first", "outcome": "passed"})
    sidecar.append_environment({"label": "cpu torch2.13.0", "environment": {}, "device": "cpu", "scale": "ci"})
    sidecar.append({"nodeid": "a.py::second", "feature": "a/second", "outcome": "failed"})
    sidecar.close()
    loaded = report_load.load_report(path)
    assert [r["nodeid"] for r in loaded["results"]] == ["a.py::first", "a.py::second"]
    assert (loaded["label"], loaded["device"], loaded["scale"]) == ("cpu torch2.13.0", "cpu", "ci")


def test_a_sidecar_killed_before_its_environment_line_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "r.json.partial.jsonl"
    sidecar = files.Sidecar(path, {"created": "2026-12-01T13:00:00+00:00"})
    sidecar.append({"nodeid": "a.py::first", "feature": "a/first", "outcome": "passed"})
    sidecar.close()
    loaded = report_load.load_report(path)
    assert loaded["label"] == "unlabelled run of 2026-12-01T13:00:00+00:00 (environment not detected)"
    assert loaded["environment"] == {} and loaded["summary"]["passed"] == 1


def test_a_sidecar_line_of_an_unknown_kind_is_one_error(tmp_path: Path) -> None:
    path = tmp_path / "r.json.partial.jsonl"
    sidecar = files.Sidecar(path, {"label": "L"})
    sidecar.append({"sidecar": "gossip"})  # type: ignore[typeddict-item]
    sidecar.close()
    with pytest.raises(
        ReportError,
        match=r"line 2: sidecar is 'gossip', expected one of 'environment', 'collected', 'finished', 'running'",
    ):
        report_load.load_report(path)


def test_the_first_collected_test_without_a_result_is_the_crashed_row(tmp_path: Path) -> None:
    path = tmp_path / "r.json.partial.jsonl"
    sidecar = files.Sidecar(path, {"label": "L"})
    tests = ["a.py::first", "a.py::second", "b.py::third[cuda:0]"]
    sidecar.append_collected(tests, {"a.py::second": "marked/second"}, ("cuda",))
    sidecar.append({"nodeid": "a.py::first", "feature": "a/first", "outcome": "passed"})
    sidecar.close()  # the process died in a.py::second
    loaded = report_load.load_report(path)
    assert [(r["nodeid"], r["feature"], r["outcome"]) for r in loaded["results"]] == [
        ("a.py::first", "a/first", "passed"),
        ("a.py::second", "marked/second", "crashed"),  # its marker's name, as its record would have it
    ]
    assert loaded["summary"]["crashed"] == 1
    told = report_load.load_report(path, ended="killed by SIGABRT (signal 6)")
    assert told["results"][1]["reason"] == "the run's process died while this test ran: killed by SIGABRT (signal 6)"

    def add(line: dict[str, Any]) -> None:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(line) + "\n")

    add({"nodeid": "a.py::second", "feature": "marked/second", "outcome": "failed"})
    # the next one in the run's order, its row made with the session's device tokens
    assert report_load.load_report(path)["results"][2]["feature"] == "b/third[device]"
    add({"nodeid": "b.py::third[cuda:0]", "feature": "b/third[device]", "outcome": "passed"})
    # a sidecar with every collected test's result: no crash is invented
    assert [r["outcome"] for r in report_load.load_report(path)["results"]] == ["passed", "failed", "passed"]


def test_a_run_that_ended_in_order_has_no_crashed_row(tmp_path: Path) -> None:
    # -x stopped the run and its report could not be written: the tests after the stop never ran
    path = tmp_path / "r.json.partial.jsonl"
    sidecar = files.Sidecar(path, {"label": "L"})
    sidecar.append_collected(["a.py::first", "a.py::second"], {}, ())
    sidecar.append({"nodeid": "a.py::first", "feature": "a/first", "outcome": "failed"})
    sidecar.append_finished()
    sidecar.close()
    assert [r["outcome"] for r in report_load.load_report(path)["results"]] == ["failed"]


def test_an_earlier_versions_running_line_still_names_the_crashed_row(tmp_path: Path) -> None:
    path = tmp_path / "r.json.partial.jsonl"
    sidecar = files.Sidecar(path, {"label": "L"})
    sidecar.close()
    lines = [
        {"sidecar": "running", "nodeid": "a.py::first", "feature": "a/first", "suite": "a"},
        {"nodeid": "a.py::first", "feature": "a/first", "outcome": "passed"},
        {"sidecar": "running", "nodeid": "a.py::second", "feature": "marked/second", "suite": "a"},
    ]
    with open(path, "a", encoding="utf-8") as handle:
        handle.writelines(json.dumps(line) + "\n" for line in lines)
    loaded = report_load.load_report(path)
    assert [(r["feature"], r["outcome"]) for r in loaded["results"]] == [
        ("a/first", "passed"),
        ("marked/second", "crashed"),
    ]


def test_a_crashed_row_says_how_the_worker_ended() -> None:
    from pytest_rocm.report.deaths import how_it_ended

    assert how_it_ended(-11) == "killed by SIGSEGV (signal 11)"
    assert how_it_ended(-6) == "killed by SIGABRT (signal 6)" and how_it_ended(-9) == "killed by SIGKILL (signal 9)"
    assert how_it_ended(3) == "exit status 3" and how_it_ended(-200) == "killed by an unknown signal (signal 200)"
    crash = [phase("???", "failed", "worker 'gw1' crashed while running 'a.py::t'")]
    record = report.build_record("a.py::t", crash, died="killed by SIGSEGV (signal 11)")
    assert record["outcome"] == "crashed"
    assert record["reason"] == "worker 'gw1' crashed while running 'a.py::t': killed by SIGSEGV (signal 11)"
    timed = report.build_record("a.py::t", crash, elapsed=3.0, timeout=2.0, died="exit status 1")
    assert timed["outcome"] == "timeout" and timed["reason"].endswith("over the 2s timeout: exit status 1")
