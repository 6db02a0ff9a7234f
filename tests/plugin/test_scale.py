"""The scale profile: ``--rocm-scale=ci|full`` (PYTEST_ROCM_SCALE, ini rocm_scale), its default
from the device under test, the ``rocm_scale`` fixture, the ``rocm_scaled`` marker, and the
report / table that record it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_rocm.plugin.options import parse_scale
from pytest_rocm.plugin.scale import default_scale, pick
from pytest_rocm.report.load import validate
from pytest_rocm.table.markdown import render_markdown
from pytest_rocm.table.model import build_table

ENVS = Path(__file__).parents[1] / "data" / "envs"

SHOW = """
import pytest

@pytest.mark.rocm_scaled("n", ci=[1, pytest.param(2, id="two")], full=[pytest.param(4096, id="big")])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_rows(n, dtype, rocm_scale):
    print(f"ROW scale={rocm_scale} n={n} dtype={dtype}")
"""


#: in-process inner runs load just pytest-rocm, on an empty machine (tests/plugin/conftest.py)
pytestmark = pytest.mark.usefixtures("only_this_plugin")


def test_pick_and_parse() -> None:
    assert pick("ci", ci=16, full=2048) == 16 and pick("full", ci=16, full=2048) == 2048
    with pytest.raises(ValueError, match="not one of ci, full"):
        pick("huge", ci=1, full=2)
    assert parse_scale(" Full ") == "full"
    with pytest.raises(ValueError, match="expected ci or full"):
        parse_scale("fast")
    assert default_scale(None, True) == ("ci", "default: the device under test is the CPU")


def collected(result: pytest.RunResult) -> list[str]:
    return sorted(line.split("::", 1)[1] for line in result.stdout.lines if "::test_rows[" in line)


def test_default_is_ci_on_the_cpu_and_the_marker_parametrizes(pytester) -> None:
    pytester.makepyfile(SHOW)
    result = pytester.runpytest("--rocm-device=cpu", "--collect-only", "-q")
    # the marker's ids come first, then the test's own parametrize (as the suites name rows)
    assert collected(result) == [
        "test_rows[1-bfloat16]",
        "test_rows[1-float16]",
        "test_rows[two-bfloat16]",
        "test_rows[two-float16]",
    ]
    result = pytester.runpytest("--rocm-device=cpu", "-s")
    result.stdout.fnmatch_lines(["rocm: scale=ci (default: the device under test is the CPU)", "*ROW scale=ci n=2 *"])
    result.assert_outcomes(passed=4)


@pytest.mark.parametrize(
    ("env", "extra", "scale", "why"),
    [
        ("mi300x_8.json", [], "full", "default: the device under test is a GPU, device 0 (gfx942)"),
        ("cpu_only.json", [], "ci", "default: no GPU to test on"),
        ("cpu_only.json", ["--rocm-gfx=gfx1100"], "full", "default: the device under test is a GPU, plan for gfx1100"),
    ],
    ids=["gpu", "no-gpu", "plan"],
)
def test_default_follows_the_device_under_test(pytester, env, extra, scale, why) -> None:
    pytester.makepyfile(SHOW)
    result = pytester.runpytest(f"--rocm-env={ENVS}/{env}", *extra, "--collect-only", "-q")
    result.stdout.fnmatch_lines([f"rocm: scale={scale} ({why})"])
    assert len(collected(result)) == (2 if scale == "full" else 4)


@pytest.mark.parametrize(
    ("cli", "env", "ini", "scale", "source"),
    [
        (None, None, "full", "full", "rocm_scale in tox.ini"),
        (None, "full", "ci", "full", "PYTEST_ROCM_SCALE"),
        ("ci", "full", "full", "ci", "--rocm-scale"),
    ],
    ids=["ini", "env-over-ini", "cli-over-env"],
)
def test_precedence_cli_env_ini(pytester, monkeypatch, cli, env, ini, scale, source) -> None:
    pytester.makeini(f"[pytest]\nrocm_scale = {ini}\n")
    if env:
        monkeypatch.setenv("PYTEST_ROCM_SCALE", env)
    pytester.makepyfile(SHOW)
    args = ["--rocm-device=cpu", "--collect-only", "-q"] + ([f"--rocm-scale={cli}"] if cli else [])
    result = pytester.runpytest(*args)
    result.stdout.fnmatch_lines([f"rocm: scale={scale} ({source})"])


@pytest.mark.parametrize(
    ("where", "source"),
    [("cli", "--rocm-scale='huge'"), ("env", "PYTEST_ROCM_SCALE='huge'"), ("ini", "rocm_scale in tox.ini='huge'")],
)
def test_bad_value_is_one_usage_error_naming_its_source(pytester, monkeypatch, where, source) -> None:
    pytester.makepyfile("def test_x(): pass")
    args = []
    if where == "cli":
        args.append("--rocm-scale=huge")
    elif where == "env":
        monkeypatch.setenv("PYTEST_ROCM_SCALE", "huge")
    else:
        pytester.makeini("[pytest]\nrocm_scale = huge\n")
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert errors == [f"ERROR: {source}: expected ci or full"]


def test_marker_without_full_is_a_collection_error(pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.rocm_scaled("n", ci=[1])
        def test_x(n):
            pass
        """
    )
    result = pytester.runpytest("--rocm-device=cpu", "--strict-markers")
    assert result.ret == pytest.ExitCode.INTERRUPTED  # errors during collection
    result.stdout.fnmatch_lines(["*rocm_scaled('n', ci=..., full=..., ids=None): missing full*"])


def test_report_records_the_scale_and_the_table_shows_it(pytester) -> None:
    pytester.makepyfile(SHOW)
    report = pytester.path / "report.json"
    pytester.runpytest("--rocm-device=cpu", "--rocm-scale=full", f"--rocm-report={report}").assert_outcomes(passed=2)
    document = json.loads(report.read_text())
    assert document["scale"] == "full"
    assert sorted(r["feature"].split("/")[-1] for r in document["results"]) == [
        "rows[big-bfloat16]",
        "rows[big-float16]",
    ]
    old = dict(document, label="old run")
    del old["scale"]  # a report/1 written before --rocm-scale
    table = build_table([validate(document, "new.json"), validate(old, "old.json")])
    text = render_markdown(table)
    assert (
        f"| feature | {document['label']} [full] fp16 | {document['label']} [full] bf16 | old run fp16 | old run bf16 | status |"
        in text
    )
    assert f"**{document['label']} [full]**" in text
