"""pytest-timeout's timeout, read once with its own precedence (marker > --timeout >
PYTEST_TIMEOUT > ini > none): the report tells a test killed by it from a crash by that value."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

CPU_ENV = f"--rocm-env={Path(__file__).parents[1] / 'data' / 'envs' / 'cpu_only.json'}"


def _outcomes(path: Path) -> dict[str, str]:
    document = json.loads(path.read_text())
    return {r["feature"]: r["outcome"] for r in document["results"]}


@pytest.mark.timeout(120)
def test_a_timeout_set_only_in_pytest_timeout_is_a_timeout_under_xdist(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the thread method kills the worker: the controller sees a crash, and tells a timeout from it
    # by how long the test ran against the timeout, which here only the variable sets
    monkeypatch.setenv("PYTEST_TIMEOUT", "2")
    pytester.makepyfile(
        **{
            "suites/operators/test_hang": """
        import time
        def test_hangs_in_c_code():
            time.sleep(3600)
        def test_ordinary():
            pass
    """
        }
    )
    result = pytester.runpytest_subprocess(
        "suites", "-n", "2", "--timeout-method", "thread", "--rocm-report=r.json", "-p", "no:cacheprovider", CPU_ENV
    )
    outcomes = _outcomes(pytester.path / "r.json")
    assert outcomes["operators/hangs_in_c_code"] == "timeout", result.stdout.str()
    assert outcomes["operators/ordinary"] == "passed"


@pytest.mark.parametrize(
    ("marker", "args", "env", "ini", "expected"),
    [
        ("@pytest.mark.timeout(7)", ["--timeout", "5"], "3", "timeout = 4", (7.0, "marker")),
        ('@pytest.mark.timeout(method="thread")', ["--timeout", "5"], "3", "timeout = 4", (5.0, "--timeout")),
        ("", ["--timeout", "5"], "3", "timeout = 4", (5.0, "--timeout")),
        ("", [], "3", "timeout = 4", (3.0, "PYTEST_TIMEOUT")),
        ("", [], None, "timeout = 4", (4.0, "timeout in tox.ini")),
        ("", [], None, "", (None, "default")),
        ("", ["--timeout", "0"], "3", "", (None, "--timeout")),  # 0: no timeout, and it wins
    ],
)
def test_timeout_setting_follows_pytest_timeouts_precedence(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    marker: str,
    args: list[str],
    env: str | None,
    ini: str,
    expected: tuple[float | None, str],
) -> None:
    if env is None:
        monkeypatch.delenv("PYTEST_TIMEOUT", raising=False)
    else:
        monkeypatch.setenv("PYTEST_TIMEOUT", env)
    pytester.makeini(f"[pytest]\n{ini}\n")
    pytester.makepyfile(
        test_x=f"""
        import pytest
        {marker}
        def test_a():
            pass
    """
    )
    items, _ = pytester.inline_genitems(*args)
    from pytest_rocm.plugin.numbers import timeout_setting

    item = items[0]
    setting = timeout_setting(item.config, item.get_closest_marker("timeout"))
    assert (setting.seconds, setting.source) == expected


@pytest.mark.parametrize("args", [["--maxfail=٣"], ["--maxfail", "٣"], ["-p", "xdist", "-n", "٣"], ["--timeout", "٣"]])
def test_other_plugins_options_are_theirs(pytester: pytest.Pytester, args: list[str]) -> None:
    """The plugin does not read pytest's command line again: what pytest, pytest-xdist and
    pytest-timeout accept for their own options ('٣' is 3 to their int and float) is theirs."""
    pytester.makepyfile(test_x="def test_a(): pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", CPU_ENV, *args)
    assert result.ret == pytest.ExitCode.OK, result.errlines
    assert not any("ASCII digits" in line for line in result.errlines)
