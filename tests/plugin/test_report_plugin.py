"""--rocm-report end to end through pytester: outcomes, properties, SIGKILL durability, xdist."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_rocm import cli

#: a recorded environment spares each run detecting this machine (an import of torch: seconds)
CPU_ENV = f"--rocm-env={Path(__file__).parents[1] / 'data' / 'envs' / 'cpu_only.json'}"

ORDINARY = """
import pytest
from pytest_rocm import INFO_PROPERTY, skip_not_installed

@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_matmul(dtype, record_property):
    record_property("rocm_parity", [{"dtype": dtype, "max_abs": 1e-3, "max_rel": 2e-3,
                                     "normwise": 5e-4 if dtype == "float16" else 4e-3,
                                     "rtol": 1e-2, "atol": 1e-5, "ok": True}])
    record_property("rocm_parity", [{"dtype": dtype, "normwise": float("inf"), "name": "grad"}])
    record_property(INFO_PROPERTY, {"library": "1.0"})
    record_property(INFO_PROPERTY, {"backend_ran": "math"})

def test_fails():
    assert 1 == 2, "wrong numbers"

@pytest.fixture
def broken():
    raise RuntimeError("setup exploded")

def test_errors(broken):
    pass

def test_skipped():
    pytest.skip("no device here")

def test_absent_library():
    skip_not_installed("flash_attn", "needs >=2.6")

@pytest.mark.xfail(reason="known gfx1100 bug", strict=False)
def test_known_bug():
    assert False

@pytest.mark.xfail(reason="fixed upstream?", strict=False)
def test_unexpectedly_fine():
    pass

@pytest.mark.feature("attention/sdpa-flash")
def test_named():
    pass
"""


def _results(path: Path) -> dict[str, dict]:
    return {r["feature"]: r for r in json.loads(path.read_text())["results"]}


def test_report_records_every_outcome_parity_and_info(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(**{"suites/operators/test_ops": ORDINARY})
    result = pytester.runpytest(
        "suites", "--rocm-report=out/r.json", "--rocm-label=here", "-p", "no:cacheprovider", CPU_ENV
    )
    result.assert_outcomes(passed=3, failed=1, errors=1, skipped=2, xfailed=1, xpassed=1)
    result.stdout.fnmatch_lines(["rocm report (here): out/r.json*"])
    document = json.loads((pytester.path / "out/r.json").read_text())
    assert document["schema"] == "pytest-rocm/report/1" and document["label"] == "here"
    assert document["environment"]["schema"] == "pytest-rocm/environment/1"
    results = _results(pytester.path / "out/r.json")
    outcomes = {feature: r["outcome"] for feature, r in results.items()}
    assert outcomes == {
        "operators/matmul[float16]": "passed",
        "operators/matmul[bfloat16]": "passed",
        "operators/fails": "failed",
        "operators/errors": "error",
        "operators/skipped": "skipped",
        "operators/absent_library": "not-installed",
        "operators/known_bug": "xfailed",
        "operators/unexpectedly_fine": "xpassed",
        "attention/sdpa-flash": "passed",
    }
    assert "wrong numbers" in results["operators/fails"]["reason"]
    assert results["operators/errors"]["reason"] == "RuntimeError: setup exploded"
    assert results["operators/absent_library"]["reason"] == "not installed: flash_attn (needs >=2.6)"
    assert results["operators/known_bug"]["reason"] == "known gfx1100 bug"
    bf16 = results["operators/matmul[bfloat16]"]
    assert [(p["dtype"], p["normwise"]) for p in bf16["parity"]] == [("bfloat16", 4e-3), ("bfloat16", "inf")]
    assert bf16["info"] == {"library": "1.0", "backend_ran": "math"}
    assert document["summary"]["total"] == 9 and document["summary"]["passed"] == 3
    assert not (pytester.path / "out/r.json.partial.jsonl").exists()  # removed once the JSON is written


def test_a_run_stopped_early_is_marked_interrupted(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makepyfile(**{"suites/operators/test_stop": "def test_a(): assert False\ndef test_b(): pass\n"})
    pytester.runpytest("suites", "--rocm-report=r.json", "-p", "no:cacheprovider", CPU_ENV, "-x")
    document = json.loads((pytester.path / "r.json").read_text())
    assert document["interrupted"] is True and document["summary"]["total"] == 2
    # the test -x kept from running is listed, and the report says why
    assert [r["outcome"] for r in document["results"]] == ["failed", "not-run"]
    assert document["interrupted_reason"] == "not run: the run stopped early (stopping after 1 failures)"
    assert cli.main(["table", str(pytester.path / "r.json")]) == 0
    assert "(interrupted run: partial results)" in capsys.readouterr().out
    pytester.runpytest("suites", "--rocm-report=r.json", "-p", "no:cacheprovider", CPU_ENV)
    assert "interrupted" not in json.loads((pytester.path / "r.json").read_text())


def test_sigkilled_run_keeps_every_finished_result(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makepyfile(
        **{
            "suites/operators/test_kill": """
        import os, signal
        def test_a(): pass
        def test_b(): assert False
        def test_c(): pass
        def test_d_kills_the_run(): os.kill(os.getpid(), signal.SIGKILL)
        def test_e_never_runs(): pass
    """
        }
    )
    (pytester.path / "r.json").write_text("{}")  # an earlier run's report must not pass for this one
    result = pytester.runpytest_subprocess(
        "suites", "--rocm-report=r.json", "--rocm-label=killed", "-p", "no:cacheprovider", CPU_ENV
    )
    assert result.ret != 0
    assert not (pytester.path / "r.json").exists()
    sidecar = pytester.path / "r.json.partial.jsonl"
    lines = sidecar.read_text().splitlines()
    assert json.loads(lines[0])["schema"] == "pytest-rocm/report-sidecar/1"
    records = [json.loads(line) for line in lines[1:]]
    # besides each finished record, a serial run notes its tests once, in their order (no line per test start)
    assert [r["outcome"] for r in records if "sidecar" not in r] == ["passed", "failed", "passed"]
    assert [r["sidecar"] for r in records if "sidecar" in r] == ["collected"]
    # the table reads the killed run's sidecar; asking for the missing JSON says where it is
    assert cli.main(["table", str(sidecar), "--format", "csv"]) == 0
    out = capsys.readouterr().out
    assert "operators,operators/b,broken,failed" in out
    # the test the kill took down started and never finished: its row says so
    assert "operators,operators/d_kills_the_run,broken,crashed" in out
    assert cli.main(["table", str(pytester.path / "r.json")]) == 2
    assert "r.json.partial.jsonl: pass that instead" in capsys.readouterr().err


def test_xdist_crash_and_hang_are_recorded_next_to_surviving_results(pytester: pytest.Pytester) -> None:
    # pytest-timeout's two methods: signal fails the test in place; thread (what `rocm-compat run`
    # uses, since it also ends hangs inside C calls) kills the worker, which xdist then replaces.
    pytester.makepyfile(
        **{
            "suites/operators/test_isolation": """
        import os, resource, time, pytest
        from pytest_rocm import INFO_PROPERTY
        @pytest.mark.parametrize("n", range(4))
        def test_ordinary(n, record_property):
            record_property("rocm_parity", [{"dtype": "float16", "normwise": 1e-3 * (n + 1)}])
            record_property(INFO_PROPERTY, {"worker": os.environ.get("PYTEST_XDIST_WORKER")})
        def test_segfaults_in_a_gpu_library():
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            os.abort()
        @pytest.mark.timeout(2, method="signal")
        def test_hangs_forever():
            while True:
                time.sleep(0.05)
        @pytest.mark.timeout(2, method="thread")
        def test_hangs_in_c_code():
            time.sleep(3600)
        @pytest.mark.feature("after/crash")
        def test_runs_after_the_crash():
            pass
    """
        }
    )
    result = pytester.runpytest_subprocess(
        # a session timeout far above the markers': the tests' own 2 s must decide "timeout"
        "suites",
        "-n",
        "2",
        "--timeout",
        "60",
        "--max-worker-restart",
        "4",
        "--rocm-report=r.json",
        "-p",
        "no:cacheprovider",
        CPU_ENV,
    )
    results = _results(pytester.path / "r.json")
    assert results["operators/segfaults_in_a_gpu_library"]["outcome"] == "crashed", result.stdout.str()
    assert "crashed while running" in results["operators/segfaults_in_a_gpu_library"]["reason"]
    assert results["operators/hangs_forever"]["outcome"] == "timeout"
    assert results["operators/hangs_forever"]["reason"] == "Timeout (>2.0s) from pytest-timeout"
    assert results["operators/hangs_in_c_code"]["outcome"] == "timeout"
    assert "worker killed after" in results["operators/hangs_in_c_code"]["reason"]
    assert results["operators/hangs_in_c_code"]["duration"] >= 1.5
    for n in range(4):  # gathered from the workers with their properties
        record = results[f"operators/ordinary[{n}]"]
        assert record["outcome"] == "passed"
        assert record["parity"] == [{"dtype": "float16", "normwise": pytest.approx(1e-3 * (n + 1))}]
        assert record["info"]["worker"].startswith("gw")
    assert results["after/crash"]["outcome"] == "passed"
    assert json.loads((pytester.path / "r.json").read_text())["summary"]["total"] == 8


def test_unwritable_report_path_is_a_usage_error_before_any_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_a="def test_a(): pass")
    (pytester.path / "afile").write_text("")
    result = pytester.runpytest("--rocm-report=afile/r.json", "-p", "no:cacheprovider", CPU_ENV)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --rocm-report afile/r.json: cannot write (*)"])
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


FEATURE_ROWS = """
import pytest

@pytest.mark.feature("  models/class-row ")
class TestRows:
    def test_from_class(self): pass
    @pytest.mark.feature("models/method-row")
    def test_closest(self): pass
"""


def test_feature_is_read_from_the_parsed_markers_closest_first(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_rows=FEATURE_ROWS)
    pytester.runpytest("--rocm-report=r.json", "-p", "no:cacheprovider", CPU_ENV).assert_outcomes(passed=2)
    assert set(_results(pytester.path / "r.json")) == {"models/class-row", "models/method-row"}
    # a bad feature marker is the core plugin's collection error, not a crash in the report's hook
    pytester.makepyfile(test_bad='import pytest\n@pytest.mark.feature("")\ndef test_bad(): pass\n')
    result = pytester.runpytest("--rocm-report=r.json", "-p", "no:cacheprovider", CPU_ENV)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*test_bad.py::test_bad: feature(''): bad feature name ''*"])
    assert "Traceback" not in result.stdout.str()


def test_the_writer_is_built_from_the_settings_not_read_back_from_config_option(pytester, monkeypatch) -> None:
    # the report path from the environment variable reaches the writer through the resolved
    # Settings; with nothing written back to config.option (publish disabled) it still does
    from pytest_rocm.plugin import options

    monkeypatch.setattr(options, "publish", lambda config, settings: None)
    monkeypatch.setenv("PYTEST_ROCM_REPORT", str(pytester.path / "out.json"))
    monkeypatch.setenv("PYTEST_ROCM_LABEL", "from-settings")
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest_inprocess(CPU_ENV, "-p", "no:randomly")
    assert result.ret == 0
    document = json.loads((pytester.path / "out.json").read_text())
    assert document["label"] == "from-settings"
    assert [r["outcome"] for r in document["results"]] == ["passed"]


def test_the_report_plugins_are_unregistered_at_the_end(pytester) -> None:
    config = pytester.parseconfigure(CPU_ENV, f"--rocm-report={pytester.path / 'out.json'}")
    assert config.pluginmanager.get_plugin("rocm-report-writer") is not None
    config._ensure_unconfigure()
    for name in ("rocm-report-writer", "rocm-report-features", "rocm-report-accelerator"):
        assert config.pluginmanager.get_plugin(name) is None, name


TIMEOUT_MARKS = """
import pytest

pytestmark = pytest.mark.timeout(30)

def test_module_mark(): pass

@pytest.mark.timeout(5)
def test_own_mark(): pass

@pytest.mark.parametrize("x", [1, pytest.param(2, marks=pytest.mark.timeout(7))])
def test_param_mark(x): pass

@pytest.mark.timeout(timeout=12)
class TestClassMark:
    def test_inherits(self): pass

    @pytest.mark.timeout(3)
    def test_overrides(self): pass

    class TestNested:
        def test_deep(self): pass
"""


def test_the_tagger_finds_each_tests_closest_timeout_marker_as_pytest_does(pytester: pytest.Pytester) -> None:
    # the tagger remembers the parents' answer per parent node: it must give what
    # item.get_closest_marker gives, for every test and in any order of the items
    from pytest_rocm.plugin.report import _closest_timeout

    pytester.makepyfile(test_one=TIMEOUT_MARKS, test_two="def test_unmarked(): pass\n")
    items = pytester.getitems(pytester.path)
    for order in (items, list(reversed(items))):
        shared: dict[int, pytest.Mark | None] = {}
        found = {item.nodeid: _closest_timeout(item, shared) for item in order}
        assert found == {item.nodeid: item.get_closest_marker("timeout") for item in items}
    seconds = {item.name: _closest_timeout(item, {}) for item in items}
    assert {name: mark.args or mark.kwargs for name, mark in seconds.items() if mark} == {
        "test_module_mark": (30,),
        "test_own_mark": (5,),
        "test_param_mark[1]": (30,),
        "test_param_mark[2]": (7,),
        "test_inherits": {"timeout": 12},
        "test_overrides": (3,),
        "test_deep": {"timeout": 12},
    }
    assert seconds["test_unmarked"] is None
