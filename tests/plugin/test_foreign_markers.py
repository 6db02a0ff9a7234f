"""A foreign suite that owns ``gpu``, ``requires``, ``tolerance`` and ``gfx`` with meanings of its
own, run under ``--strict-markers``: the plugin must not read, validate or evaluate any of them.

The project registers its markers the four ways real projects do: its ini ``markers``, a conftest's
``addinivalue_line``, another plugin's registration (the pytest-tolerance plugin owns
``tolerance(min_exponent=...)``), and a sub-folder's conftest, loaded only during collection.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.usefixtures("only_this_plugin")

CPU_ENV = f"--rocm-env={Path(__file__).parents[1] / 'data' / 'envs' / 'cpu_only.json'}"

INI = """
[pytest]
markers =
    gpu(index): run on the project's GPU number index
xfail_strict = true
"""

CONFTEST = """
import importlib.util
import pytest

def pytest_configure(config):
    # LangChain's kind: requires() names *import* names
    config.addinivalue_line("markers", "requires(*modules): skip unless every module imports")

def pytest_runtest_setup(item):
    for mark in item.iter_markers("requires"):
        for module in mark.args:
            if importlib.util.find_spec(module) is None:
                pytest.skip(f"no module named {module}")
    mark = item.get_closest_marker("gpu")
    if mark is not None:
        item.user_properties.append(("project_gpu", mark.args[0]))
"""

TOLERANCE_PLUGIN = """
def pytest_configure(config):
    config.addinivalue_line("markers", "tolerance(min_exponent): digits a result may lose")
"""

TESTS = """
import pytest

@pytest.mark.requires("json", "importlib")  # import names: both there, and no distribution is named so
def test_requires_import_names():
    pass

@pytest.mark.requires("no_such_module_here")
def test_requires_a_missing_module():
    pass

@pytest.mark.gpu(0)  # the plugin's gpu takes no argument: read as ours, a collection error
def test_project_gpu_index(request):
    assert request.node.get_closest_marker("gpu").args == (0,)

@pytest.mark.tolerance(min_exponent=-10)
def test_other_plugins_tolerance():
    pass

@pytest.mark.min_vram("1TiB")  # not the project's: the plugin's alias acts
def test_plugin_alias_still_works():
    pass

@pytest.mark.rocm_min_vram("1TiB")  # the canonical name acts always
def test_plugin_canonical_name():
    pass
"""

LATE_CONFTEST = """
def pytest_configure(config):
    config.addinivalue_line("markers", "gfx(name, count): the project's graphics fixture")
"""

LATE_TESTS = """
import pytest

@pytest.mark.gfx("opengl", 3)  # not an architecture pattern: read as ours, a collection error
def test_late_registered_marker():
    pass
"""


def _project(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(tolerance_plugin=TOLERANCE_PLUGIN, test_project=TESTS)
    sub = pytester.mkpydir("sub")
    (sub / "conftest.py").write_text(LATE_CONFTEST)
    (sub / "test_late.py").write_text(LATE_TESTS)
    pytester.syspathinsert()


def _outcomes(path: Path) -> dict[str, tuple[str, str | None]]:
    return {r["nodeid"].split("::")[-1]: (r["outcome"], r["reason"]) for r in json.loads(path.read_text())["results"]}


def test_the_projects_own_markers_keep_their_meaning_under_strict_markers(pytester: pytest.Pytester) -> None:
    _project(pytester)
    report = pytester.path / "r.json"
    result = pytester.runpytest_inprocess(
        "--strict-markers", "-p", "tolerance_plugin", CPU_ENV, f"--rocm-report={report}", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=4, skipped=3)
    rows = _outcomes(report)
    assert rows["test_requires_import_names"] == ("passed", None)  # not "not-installed"
    assert rows["test_requires_a_missing_module"] == ("skipped", "no module named no_such_module_here")
    assert rows["test_project_gpu_index"][0] == "passed"
    assert rows["test_other_plugins_tolerance"][0] == "passed"
    assert rows["test_late_registered_marker"][0] == "passed"
    assert rows["test_plugin_alias_still_works"][0] == "skipped"
    assert rows["test_plugin_alias_still_works"][1].startswith("needs 1024.0 GiB of GPU memory")
    assert rows["test_plugin_canonical_name"] == rows["test_plugin_alias_still_works"]


def test_the_plugin_lists_no_alias_for_a_name_the_project_owns(pytester: pytest.Pytester) -> None:
    _project(pytester)
    result = pytester.runpytest_inprocess("--markers", "-p", "tolerance_plugin")
    lines = [line for line in result.outlines if line.startswith("@pytest.mark.")]
    ours = [line for line in lines if line.endswith("(pytest-rocm)")]
    assert any(line.startswith("@pytest.mark.rocm_gpu:") for line in ours)
    assert any(line.startswith("@pytest.mark.min_vram(size): short alias of rocm_min_vram") for line in ours)
    for owned in ("gpu", "requires", "tolerance"):
        assert not any(line.startswith((f"@pytest.mark.{owned}:", f"@pytest.mark.{owned}(")) for line in ours), owned


def test_the_switch_turns_every_short_name_off(pytester: pytest.Pytester) -> None:
    """In a subprocess: pytest.mark remembers the names earlier in-process runs registered."""
    _project(pytester)
    report = pytester.path / "r.json"
    result = pytester.runpytest_subprocess(
        "--strict-markers",
        "-p",
        "tolerance_plugin",
        "-o",
        "rocm_short_markers=off",
        CPU_ENV,
        f"--rocm-report={report}",
        "-p",
        "no:cacheprovider",
    )
    assert result.ret == pytest.ExitCode.INTERRUPTED  # a collection error stops the run
    result.stdout.fnmatch_lines(["*'min_vram' not found in `markers` configuration option*"])
    assert "rocm_min_vram" not in result.stdout.str()  # the canonical name is registered


def test_a_bad_switch_value_is_one_line_naming_it(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest_inprocess("--rocm-short-markers=never")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--rocm-short-markers='never': expected auto or off*"])


def test_without_the_scheme_the_project_would_break(pytester: pytest.Pytester) -> None:
    """The control: the same suite, its names left unregistered, is taken over (the test above can fail)."""
    _project(pytester)
    pytester.makeini("[pytest]\nxfail_strict = true\n")
    (pytester.path / "conftest.py").write_text(CONFTEST.replace("config.addinivalue_line", "pass  #"))
    result = pytester.runpytest_inprocess(CPU_ENV, "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*gpu(0): wrong arguments*rocm_short_markers = off*"])
