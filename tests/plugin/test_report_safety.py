"""The report is never silently incomplete and never destroys a file (issue 19): the xdist
worker-restart limit lists every test that did not run; two runs on one report path; what is at
the path (a FIFO, a device-like node, helper files with guessable names) survives."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CPU_ENV = f"--rocm-env={ROOT / 'tests' / 'data' / 'envs' / 'cpu_only.json'}"


def _subprocess_env() -> dict[str, str]:
    # the package from this checkout, whatever an installed copy points at
    return {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}


def test_the_worker_restart_limit_lists_every_test_that_did_not_run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(
        **{
            "suites/operators/test_limit": """
        import os, pytest
        @pytest.mark.parametrize("n", range(10))
        def test_case(n):
            if n in (2, 3):
                os._exit(1)  # a worker dies; the second death reaches --max-worker-restart=1
    """
        }
    )
    monkeypatch.setenv("PYTHONPATH", _subprocess_env()["PYTHONPATH"])
    result = pytester.runpytest_subprocess(
        "suites", "-n", "1", "--max-worker-restart", "1", "--rocm-report=r.json", "-p", "no:cacheprovider", CPU_ENV
    )
    assert result.ret != 0
    document = json.loads((pytester.path / "r.json").read_text())
    outcomes = {r["nodeid"].rsplit("[", 1)[1].rstrip("]"): r["outcome"] for r in document["results"]}
    assert len(outcomes) == 10, outcomes  # every collected test: none silently missing
    assert outcomes["2"] == outcomes["3"] == "crashed"
    not_run = [n for n, outcome in outcomes.items() if outcome == "not-run"]
    assert not_run and {outcomes[n] for n in outcomes if n not in not_run} <= {"passed", "crashed"}
    assert document["interrupted"] is True
    assert (
        document["interrupted_reason"] == "not run: pytest-xdist stopped the run (maximum crashed workers reached: 1)"
    )
    assert document["summary"]["not-run"] == len(not_run) and document["summary"]["total"] == 10


def test_collect_only_lists_no_test_as_not_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(**{"suites/operators/test_c": "def test_a(): pass\n"})
    pytester.runpytest("suites", "--collect-only", "--rocm-report=r.json", "-p", "no:cacheprovider", CPU_ENV)
    path = pytester.path / "r.json"
    if path.exists():  # whether --collect-only writes at all is the report writer's choice
        assert json.loads(path.read_text())["results"] == []


def test_a_second_run_on_the_same_report_path_is_refused_naming_the_first(tmp_path: Path) -> None:
    (tmp_path / "test_slow.py").write_text("import time\ndef test_slow():\n    time.sleep(30)\n", encoding="utf-8")
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "--rocm-report=r.json",
        CPU_ENV,
    ]
    first = subprocess.Popen(
        [*command, "test_slow.py"],
        cwd=tmp_path,
        env=_subprocess_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        sidecar = tmp_path / "r.json.partial.jsonl"
        deadline = time.monotonic() + 60
        # the header, then the collected tests: after that the first run writes nothing until its
        # test ends, so any change to the file would be the second run's
        while not (sidecar.exists() and '"collected"' in sidecar.read_text()):
            assert time.monotonic() < deadline and first.poll() is None, "the first run never started its test"
            time.sleep(0.1)
        before = sidecar.read_bytes()
        (tmp_path / "test_quick.py").write_text("def test_quick():\n    pass\n", encoding="utf-8")
        second = subprocess.run(
            [*command, "test_quick.py"], cwd=tmp_path, env=_subprocess_env(), capture_output=True, text=True, timeout=60
        )
        assert second.returncode == pytest.ExitCode.USAGE_ERROR
        errors = [line for line in second.stderr.splitlines() if line.startswith("ERROR")]
        assert errors == [
            f"ERROR: --rocm-report r.json: another run (pid {first.pid}) is writing this report: wait for it,"
            " or give this run another --rocm-report"
        ]
        assert "Traceback" not in second.stderr + second.stdout
        assert sidecar.read_bytes() == before  # the first run's results are untouched
    finally:
        first.kill()
        first.wait()
    # the first run was killed: its lock went with it, and a new run may take the path
    again = subprocess.run(
        [*command, "test_quick.py"], cwd=tmp_path, env=_subprocess_env(), capture_output=True, text=True, timeout=60
    )
    assert again.returncode == 0, again.stdout + again.stderr
    assert json.loads((tmp_path / "r.json").read_text())["summary"]["passed"] == 1


def test_helper_files_with_guessable_names_are_left_alone(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_x="def test_a(): pass\n")
    for name in ("r.json.tmp", "r.json.probe"):
        (pytester.path / name).write_text("mine", encoding="utf-8")
    pytester.runpytest("--rocm-report=r.json", "-p", "no:cacheprovider", CPU_ENV).assert_outcomes(passed=1)
    assert (pytester.path / "r.json.tmp").read_text() == "mine" and (
        pytester.path / "r.json.probe"
    ).read_text() == "mine"
    assert json.loads((pytester.path / "r.json").read_text())["summary"]["passed"] == 1
    leftovers = sorted(p.name for p in pytester.path.iterdir() if p.name.startswith((".r.json", "r.json.")))
    assert leftovers == ["r.json.probe", "r.json.tmp"]  # no temporary file of ours is left


@pytest.mark.parametrize("kind", ["fifo", "device", "directory", "dangling-link"])
def test_a_report_path_that_is_not_a_regular_file_is_refused_and_kept(pytester: pytest.Pytester, kind: str) -> None:
    pytester.makepyfile(test_x="def test_a(): pass\n")
    target = pytester.path / "r.json"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "device":
        if os.geteuid() != 0:
            pytest.skip("mknod of a device node needs root")
        os.mknod(target, 0o600 | stat.S_IFCHR, os.makedev(1, 3))  # what /dev/null is, in a tmp folder
    elif kind == "directory":
        target.mkdir()
    else:
        target.symlink_to(pytester.path / "nowhere" / "r.json")
    before = os.lstat(target)
    result = pytester.runpytest("--rocm-report=r.json", "-p", "no:cacheprovider", CPU_ENV)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.errlines if line.startswith("ERROR")]
    assert len(errors) == 1 and errors[0].startswith("ERROR: --rocm-report r.json: cannot write (")
    after = os.lstat(target)
    assert (after.st_ino, after.st_mode, after.st_rdev) == (before.st_ino, before.st_mode, before.st_rdev)


@pytest.mark.parametrize("collect_only", [False, True], ids=["run", "--collect-only"])
@pytest.mark.parametrize("points_to", ["a file", "nothing"])
def test_a_link_planted_at_the_sidecar_is_never_followed(
    pytester: pytest.Pytester, collect_only: bool, points_to: str
) -> None:
    """The sidecar ``FILE.partial.jsonl`` is a name the user never typed: a link there (planted by
    someone who can write the folder) would make the run truncate its target."""
    pytester.makepyfile(test_x="def test_a(): pass\n")
    victim = pytester.path / "precious.txt"
    if points_to == "a file":
        victim.write_text("keep me\n")
    link = pytester.path / "r.json.partial.jsonl"
    link.symlink_to(victim)
    args = ["--rocm-report=r.json", "-p", "no:cacheprovider", CPU_ENV] + (["--collect-only"] if collect_only else [])
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.errlines if line.startswith("ERROR")]
    assert len(errors) == 1 and "r.json.partial.jsonl is a symbolic link" in errors[0], result.errlines
    assert link.is_symlink() and os.readlink(link) == str(victim)
    if points_to == "a file":
        assert victim.read_text() == "keep me\n"
    else:
        assert not victim.exists()
    assert not (pytester.path / "r.json").exists()


def test_a_link_swapped_in_after_the_check_is_not_followed(tmp_path: Path) -> None:
    """Between the check and the open (a race): the open itself refuses to follow a link."""
    from pytest_rocm.report import files

    victim = tmp_path / "precious.txt"
    victim.write_text("keep me\n")
    link = tmp_path / "r.json.partial.jsonl"
    link.symlink_to(victim)
    real_not_regular = files.not_regular
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(files, "not_regular", lambda path: None)  # the check passed, then the link appeared
        mp.setattr(files, "link_problem", lambda path: None)
        with pytest.raises(files.UnsafeTarget, match="symbolic link"):
            files.Sidecar(link)
    assert victim.read_text() == "keep me\n" and real_not_regular(victim) is None


# -- a crash says how the process died, and which test it took down -------------------------------
CRASHES = """
import os, resource, signal, pytest
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core files from the crashes below
def test_before():
    pass
@pytest.mark.feature("crash/segfault")
def test_segfault():
    os.kill(os.getpid(), signal.SIGSEGV)  # a real SIGSEGV: pytest's faulthandler dumps, then dies of it
"""


def _crashed(document: dict[str, object]) -> dict[str, dict[str, object]]:
    return {r["feature"]: r for r in document["results"]}  # type: ignore[attr-defined, index]


def test_a_serial_run_killed_by_a_segfault_names_the_test_it_died_in(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_rocm import cli
    from pytest_rocm.report.deaths import how_it_ended
    from pytest_rocm.report.load import load_report

    pytester.makepyfile(**{"suites/operators/test_crash": CRASHES + "def test_never_reached():\n    pass\n"})
    monkeypatch.setenv("PYTHONPATH", _subprocess_env()["PYTHONPATH"])
    result = pytester.runpytest_subprocess(
        "suites", "-p", "no:randomly", "-p", "no:cacheprovider", "--rocm-report=r.json", CPU_ENV
    )
    assert result.ret == -11, result.outlines + result.errlines  # the process died of the signal
    assert not (pytester.path / "r.json").exists()
    sidecar = pytester.path / "r.json.partial.jsonl"
    rows = _crashed(load_report(sidecar))  # type: ignore[arg-type]
    assert rows["operators/before"]["outcome"] == "passed"
    assert rows["crash/segfault"]["outcome"] == "crashed"  # the row, named by its feature marker
    assert rows["crash/segfault"]["nodeid"] == "suites/operators/test_crash.py::test_segfault"
    assert "how is not recorded" in str(rows["crash/segfault"]["reason"])
    assert "operators/never_reached" not in rows  # never started: no row is invented for it
    # whoever waited for the process knows how it ended (rocm-compat run passes it on)
    told = _crashed(load_report(sidecar, ended=how_it_ended(result.ret)))  # type: ignore[arg-type]
    assert (
        told["crash/segfault"]["reason"] == "the run's process died while this test ran: killed by SIGSEGV (signal 11)"
    )
    assert cli.main(["table", "--format", "csv", str(sidecar)]) == 0
    assert "crash/segfault" in capsys.readouterr().out


def test_under_xdist_a_crashed_row_says_which_signal_or_status_ended_the_worker(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(
        **{
            "suites/operators/test_crash": CRASHES
            + """
@pytest.mark.feature("crash/abort")
def test_abort():
    os.abort()
@pytest.mark.feature("crash/exit")
def test_exit():
    os._exit(3)
@pytest.mark.feature("crash/killed")
def test_killed():
    os.kill(os.getpid(), signal.SIGKILL)
def test_after():
    pass
"""
        }
    )
    monkeypatch.setenv("PYTHONPATH", _subprocess_env()["PYTHONPATH"])
    result = pytester.runpytest_subprocess(
        "suites", "-n", "2", "--max-worker-restart", "8", "--rocm-report=r.json", "-p", "no:cacheprovider", CPU_ENV
    )
    rows = _crashed(json.loads((pytester.path / "r.json").read_text()))
    reasons = {f: rows[f]["reason"] for f in ("crash/segfault", "crash/abort", "crash/exit", "crash/killed")}
    assert all(rows[f]["outcome"] == "crashed" for f in reasons), (reasons, result.outlines)
    assert str(reasons["crash/segfault"]).endswith(": killed by SIGSEGV (signal 11)"), reasons
    assert str(reasons["crash/abort"]).endswith(": killed by SIGABRT (signal 6)"), reasons
    assert str(reasons["crash/exit"]).endswith(": exit status 3"), reasons
    assert str(reasons["crash/killed"]).endswith(": killed by SIGKILL (signal 9)"), reasons
    assert "crashed while running" in str(reasons["crash/segfault"])
    assert rows["operators/before"]["outcome"] == rows["operators/after"]["outcome"] == "passed"
