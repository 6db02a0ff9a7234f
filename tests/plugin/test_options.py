"""Options: precedence (CLI > environment variable > ini > default), publication to config.option,
and bad input as one usage-error line naming where the value came from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_machines import build_tree, machines

from pytest_rocm.plugin.options import OPTIONS, parse_bool, parse_device, parse_gfx

ENVS = Path(__file__).parents[1] / "data" / "envs"
IGPU = f"--rocm-env={ENVS}/rx6800xt_igpu.json"

SHOW = """
def test_show(pytestconfig):
    o = pytestconfig.option
    print(f"GFX={o.rocm_gfx} DEVICE={o.rocm_device} REPORT={o.rocm_report} LABEL={o.rocm_label} REQ={o.rocm_require_gpu}")
"""


#: in-process inner runs load just pytest-rocm, on an empty machine (tests/plugin/conftest.py)
pytestmark = pytest.mark.usefixtures("only_this_plugin")


@pytest.fixture
def on_the_igpu_machine(only_this_plugin: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The recorded machine's kernel view under the sysroot: the recording is of this machine, so
    ``--rocm-gfx`` picks among its devices (on a machine without them it would be a plan)."""
    root = build_tree(tmp_path / "igpu-machine", machines()["rx6800xt_igpu"].machine)
    monkeypatch.setenv("PYTEST_ROCM_SYSROOT", str(root))


def test_parsers() -> None:
    assert parse_gfx("gfx1100, rdna3,gfx11*") == ("gfx1100", "rdna3", "gfx11*")
    assert parse_device("cpu") == "cpu" and parse_device("CUDA:3") == 3 and parse_device("cuda") == 0
    assert parse_bool("Yes") is True and parse_bool("0") is False
    for bad in ("tpu", "cuda:x", "cuda:-1", "hip:0"):
        with pytest.raises(ValueError, match="expected cpu, cuda or cuda:N"):
            parse_device(bad)
    with pytest.raises(ValueError, match="no architecture given"):
        parse_gfx(" , ")


@pytest.mark.parametrize(
    ("cli", "env", "ini", "device"),
    [
        (None, None, "gfx1036", "1:gfx1036"),
        (None, "gfx1030", "gfx1036", "0:gfx1030"),
        ("gfx1036", "gfx1030", "gfx1030", "1:gfx1036"),
        (None, None, None, "0:gfx1030"),
    ],
    ids=["ini", "env-over-ini", "cli-over-env", "default"],
)
@pytest.mark.usefixtures("on_the_igpu_machine")
def test_precedence_cli_env_ini_default(pytester, monkeypatch, cli, env, ini, device) -> None:
    if ini:
        pytester.makeini(f"[pytest]\nrocm_gfx = {ini}\n")
    if env:
        monkeypatch.setenv("PYTEST_ROCM_GFX", env)
    pytester.makepyfile(SHOW)
    args = [IGPU, "-s"] + ([f"--rocm-gfx={cli}"] if cli else [])
    result = pytester.runpytest(*args)
    assert result.ret == 0
    result.stdout.fnmatch_lines([f"rocm: * device={device} *", f"*GFX={cli or env or ini} *"])


def test_report_and_label_are_published_for_other_plugins(pytester, monkeypatch) -> None:
    """The report plugin reads config.getoption("rocm_report"): ini and variables must reach it."""
    pytester.makeini("[pytest]\nrocm_report = from-ini.json\nrocm_label = ini-label\nrocm_require_gpu = yes\n")
    monkeypatch.setenv("PYTEST_ROCM_LABEL", "env-label")
    pytester.makepyfile(SHOW)
    result = pytester.runpytest(IGPU, "-s")
    result.stdout.fnmatch_lines(["*REPORT=from-ini.json LABEL=env-label REQ=True"])
    result = pytester.runpytest(IGPU, "-s", "--rocm-report=cli.json", "--rocm-label=cli")
    result.stdout.fnmatch_lines(["*REPORT=cli.json LABEL=cli REQ=True"])


@pytest.mark.usefixtures("on_the_igpu_machine")
@pytest.mark.parametrize("table", ["tool.pytest", "tool.pytest.ini_options"])
def test_a_toml_list_is_the_comma_separated_list(pytester, table) -> None:
    """``rocm_gfx = ["gfx1036", "gfx1100"]`` in pyproject.toml: two patterns, read whole."""
    pytester.makepyprojecttoml(f'[{table}]\nrocm_gfx = ["gfx1036", "gfx1100"]\nrocm_require_gpu = true\n')
    pytester.makepyfile(SHOW)
    result = pytester.runpytest(IGPU, "-s", "-W", "error::pytest.PytestDeprecationWarning")
    assert result.ret == 0, result.outlines
    result.stdout.fnmatch_lines(["rocm: * device=1:gfx1036 *", "*GFX=gfx1036,gfx1100 * REQ=True"])


SETTINGS = """
from pytest_rocm.plugin.session import get_state
def test_show(pytestconfig):
    s = get_state(pytestconfig).settings
    print(f"GFX={','.join(s.gfx)} IDS={','.join(s.device_ids)}")
"""

#: every documented way to write the two comma-separated ini values (docs/plugin.md, "Options"):
#: a string in each ini-file format and TOML table, one value per line in an ini file, a TOML list
LIST_FORMS = {
    "pytest.ini": ("pytest.ini", "[pytest]\nrocm_gfx = gfx1036, gfx1100\nrocm_device_ids = cpu,hip\n"),
    "pytest.ini-lines": (
        "pytest.ini",
        "[pytest]\nrocm_gfx =\n    gfx1036\n    gfx1100\nrocm_device_ids =\n    cpu\n    hip\n",
    ),
    "tox.ini": ("tox.ini", "[pytest]\nrocm_gfx = gfx1036, gfx1100\nrocm_device_ids = cpu,hip\n"),
    "setup.cfg": ("setup.cfg", "[tool:pytest]\nrocm_gfx = gfx1036, gfx1100\nrocm_device_ids = cpu,hip\n"),
    "ini_options-string": (
        "pyproject.toml",
        '[tool.pytest.ini_options]\nrocm_gfx = "gfx1036, gfx1100"\nrocm_device_ids = "cpu,hip"\n',
    ),
    "ini_options-list": (
        "pyproject.toml",
        '[tool.pytest.ini_options]\nrocm_gfx = ["gfx1036", "gfx1100"]\nrocm_device_ids = ["cpu", "hip"]\n',
    ),
    "tool.pytest-string": (
        "pyproject.toml",
        '[tool.pytest]\nrocm_gfx = "gfx1036, gfx1100"\nrocm_device_ids = "cpu,hip"\n',
    ),
    "tool.pytest-list": (
        "pyproject.toml",
        '[tool.pytest]\nrocm_gfx = ["gfx1036", "gfx1100"]\nrocm_device_ids = ["cpu", "hip"]\n',
    ),
    "pytest.toml-string": ("pytest.toml", '[pytest]\nrocm_gfx = "gfx1036, gfx1100"\nrocm_device_ids = "cpu,hip"\n'),
    "pytest.toml-list": (
        "pytest.toml",
        '[pytest]\nrocm_gfx = ["gfx1036", "gfx1100"]\nrocm_device_ids = ["cpu", "hip"]\n',
    ),
    "-o": (None, ""),
}


@pytest.mark.usefixtures("on_the_igpu_machine")
@pytest.mark.parametrize("form", list(LIST_FORMS))
def test_every_documented_form_of_a_list_option_is_the_same_list(pytester: pytest.Pytester, form: str) -> None:
    """The list options are pytest's ``linelist``: a string in any format, lines of an ini file and
    a TOML list are the same list, with no warning (a string in a TOML-mode table, which pytest
    refuses for a list type, is read from the file: see the test below)."""
    name, text = LIST_FORMS[form]
    if name:
        pytester.path.joinpath(name).write_text(text)
    overrides = ["-o", "rocm_gfx=gfx1036, gfx1100", "-o", "rocm_device_ids=cpu,hip"] if not name else []
    pytester.makepyfile(SETTINGS)
    result = pytester.runpytest(IGPU, "-s", "-W", "error::pytest.PytestDeprecationWarning", *overrides)
    assert result.ret == 0, result.outlines
    result.stdout.fnmatch_lines(["rocm: * device=1:gfx1036 *", "*GFX=gfx1036,gfx1100 IDS=cpu,hip"])


LIST_TYPED = """
def pytest_addoption(parser):
    parser.addini("a_list", "h", type="{kind}")
"""


@pytest.mark.parametrize("kind", ["linelist", "args"])
def test_pytests_list_types_refuse_a_string_in_a_toml_table_so_the_plugin_reads_it(
    pytester: pytest.Pytester, kind: str
) -> None:
    """Why ``plugin.inivalues`` still reads a refused value from the file for the list options: in a
    TOML-mode table (``[tool.pytest]``, ``pytest.toml``) pytest 9.2 checks the type itself and
    refuses a string for ``linelist`` and ``args`` with its own usage error, before any plugin sees
    the value, so without it ``rocm_gfx = "gfx1100,gfx90a"`` there (a documented form) would stop
    working; and ``addini`` takes no union of a list type with ``str`` (only of str, bool, int,
    float). The day pytest takes a string for a list type in TOML mode, this fails: the re-read of
    the file can go then."""
    pytester.makeconftest(LIST_TYPED.format(kind=kind))
    pytester.makepyprojecttoml('[tool.pytest]\na_list = "gfx1100,gfx90a"\n')
    pytester.makepyfile("def test_read(pytestconfig):\n    pytestconfig.getini('a_list')\n")
    result = pytester.runpytest("-p", "no:rocm")
    result.stdout.fnmatch_lines([f"*config option 'a_list' expects a list for type '{kind}', got str*"])
    with pytest.raises(ValueError, match="invalid type for ini option"):
        pytest.Parser(_ispytest=True).addini("a_list", "h", type=str | list[str], default="")  # type: ignore[arg-type, call-arg]


@pytest.mark.parametrize("table", ["tool.pytest", "tool.pytest.ini_options"])
def test_a_toml_list_is_pytests_own_list_value(pytester: pytest.Pytester, table: str) -> None:
    """Registered as ``linelist``, a TOML list is pytest's to read: ``getini`` gives the list, with
    no type error to recover from nor deprecation warning to silence."""
    pytester.makepyprojecttoml(f'[{table}]\nrocm_gfx = ["gfx1036", "gfx1100"]\nrocm_device_ids = ["cpu"]\n')
    pytester.makepyfile(
        "def test_read(pytestconfig):\n"
        "    assert pytestconfig.getini('rocm_gfx') == ['gfx1036', 'gfx1100']\n"
        "    assert pytestconfig.getini('rocm_device_ids') == ['cpu']\n"
    )
    result = pytester.runpytest("-W", "error::pytest.PytestDeprecationWarning")
    result.assert_outcomes(passed=1)


def test_a_list_pytest_warns_about_is_read_without_its_warning() -> None:
    """pytest 9.1 and later hand a TOML list in ``[tool.pytest.ini_options]`` over to a string
    option with a PytestRemovedIn10Warning: read through ``ini_text``, the list is the value and
    no warning reaches the user (the error, if any, says it all)."""
    import warnings

    from pytest_rocm.plugin.inivalues import ini_text

    class Config:
        inipath = Path("pyproject.toml")

        def getini(self, name: str) -> object:
            warnings.warn(pytest.PytestDeprecationWarning("non-str value for a string option"), stacklevel=2)
            return ["gfx1100", "gfx90a"]

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert ini_text(Config(), "rocm_gfx", takes_list=True) == "gfx1100,gfx90a"  # type: ignore[arg-type]
        with pytest.raises(
            pytest.UsageError, match=r"rocm_label in pyproject.toml=\['gfx1100', 'gfx90a'\]: expected a string"
        ):
            ini_text(Config(), "rocm_label")  # type: ignore[arg-type]
    assert caught == []


def test_device_option_is_normalised(pytester) -> None:
    pytester.makepyfile(SHOW)
    result = pytester.runpytest(IGPU, "-s", "--rocm-device=cuda")
    result.stdout.fnmatch_lines(["*DEVICE=cuda:0 *"])


@pytest.mark.parametrize("where", ["cli", "env", "ini"])
def test_bad_value_names_its_source(pytester, monkeypatch, where) -> None:
    pytester.makepyfile("def test_x(): pass")
    args = []
    if where == "cli":
        args.append("--rocm-gfx=gfx11OO")
        source = "--rocm-gfx='gfx11OO'"
    elif where == "env":
        monkeypatch.setenv("PYTEST_ROCM_GFX", "gfx11OO")
        source = "PYTEST_ROCM_GFX='gfx11OO'"
    else:
        pytester.makeini("[pytest]\nrocm_gfx = gfx11OO\n")
        source = "rocm_gfx in tox.ini='gfx11OO'"
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert len(errors) == 1 and errors[0].startswith(f"ERROR: {source}: ")
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


CORRUPT = "{not json"


@pytest.mark.parametrize(
    ("args", "variables", "message"),
    [
        (["--rocm-gfx=gfx11OO"], {}, "--rocm-gfx='gfx11OO': bad architecture pattern"),
        (["--rocm-gfx=rdna9"], {}, "--rocm-gfx='rdna9': bad architecture pattern 'rdna9'"),
        (["--rocm-gfx=gfx1199"], {}, "unknown gfx 'gfx1199'"),
        (["--rocm-env=missing.json"], {}, "--rocm-env: missing.json: no such file"),
        (["--rocm-env=corrupt.json"], {}, "--rocm-env: corrupt.json: not valid JSON (line 1, column 2"),
        (["--rocm-env=other.json"], {}, "--rocm-env: other.json: schema is 'something/else'"),
        (
            ["--rocm-env=wrong_type.json"],
            {},
            "--rocm-env: wrong_type.json: devices[0].total_memory is 'lots', expected integer or null",
        ),
        ([], {"PYTEST_ROCM_ENV": "missing.json"}, "PYTEST_ROCM_ENV: missing.json: no such file"),
        (
            [IGPU, "--rocm-device=cuda:5"],
            {},
            "--rocm-device=cuda:5: no such device; found 0:gfx1030 (AMD Radeon RX 6800 XT), 1:gfx1036",
        ),
        (["--rocm-device=tpu"], {}, "--rocm-device='tpu': expected cpu, cuda or cuda:N"),
        ([IGPU, "--rocm-gfx=gfx942"], {}, "--rocm-gfx=gfx942: no device matches; found 0:gfx1030"),
        (
            [f"--rocm-env={ENVS}/cpu_only.json", "--rocm-gfx=rdna3"],
            {},
            "plan needs one architecture: rdna3 could be gfx1100, gfx1101, gfx1102, gfx1103",
        ),
        (
            [f"--rocm-env={ENVS}/cpu_only.json", "--rocm-require-gpu"],
            {},
            "--rocm-require-gpu: no GPU to test on: torch 2.6.0+cpu is a CPU build",
        ),
        (
            [f"--rocm-env={ENVS}/cuda_wheel_on_amd.json"],
            {"PYTEST_ROCM_REQUIRE_GPU": "1"},
            "PYTEST_ROCM_REQUIRE_GPU: no GPU to test on: torch 2.12.0+cu130 is a CUDA build and cannot use AMD GPUs",
        ),
        (
            [f"--rocm-env={ENVS}/cpu_only.json", "--rocm-require-gpu", "--rocm-gfx=gfx942"],
            {},
            "--rocm-require-gpu: no GPU here; --rocm-gfx=gfx942 only plans for gfx942",
        ),
        (["--rocm-require-gpu", "--rocm-device=cpu"], {}, "--rocm-require-gpu contradicts --rocm-device=cpu"),
        ([], {"PYTEST_ROCM_REQUIRE_GPU": "maybe"}, "PYTEST_ROCM_REQUIRE_GPU='maybe': expected 1/0"),
        ([], {"PYTEST_ROCM_SYSROOT": "/no/such/root"}, "PYTEST_ROCM_SYSROOT=/no/such/root: no such directory"),
    ],
)
def test_bad_input_is_one_usage_error_line(pytester, monkeypatch, args, variables, message) -> None:
    pytester.makepyfile("def test_x(): pass")
    pytester.path.joinpath("corrupt.json").write_text(CORRUPT)
    pytester.path.joinpath("other.json").write_text('{"schema": "something/else"}')
    recorded = json.loads((ENVS / "mi300x_8.json").read_text())
    recorded["devices"][0]["total_memory"] = "lots"  # the markers would compare it with a size
    pytester.path.joinpath("wrong_type.json").write_text(json.dumps(recorded))
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert len(errors) == 1, result.stderr.lines
    assert message in errors[0]
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_require_gpu_passes_with_a_device(pytester) -> None:
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest(f"--rocm-env={ENVS}/mi300x_8.json", "--rocm-require-gpu")
    assert result.ret == 0


def test_help_lists_options_variables_and_ini(pytester) -> None:
    result = pytester.runpytest("--help")
    out = result.stdout.str()
    for spec in OPTIONS:
        assert spec.flag in out and spec.env in out
    for ini in ("rocm_device", "rocm_require_gpu", "rocm_report", "rocm_label"):
        assert f"{ini} (string)" in out
    for ini in ("rocm_gfx", "rocm_device_ids"):  # the comma-separated ones: pytest's own list type
        assert f"{ini} (linelist)" in out
    assert "rocm_env (string)" not in out  # a recorded environment in an ini file would fool every run
