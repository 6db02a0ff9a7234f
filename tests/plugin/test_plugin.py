"""The plugin in a pytest run: header, verbose environment, junit properties, the device fixture,
lazy detection and the pytest_rocm_detect_environment hook, xdist hand-over, and the cost rules
(no torch unless a test asks for it).

Runs that need a particular environment pass ``--rocm-env`` or implement the hook (a plugin object
given to ``runpytest(plugins=...)``, or a conftest); nothing patches the plugin's private detection.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_rocm import plugin
from pytest_rocm.env.model import Environment
from pytest_rocm.plugin.fixtures import live_device_problem

ENVS = Path(__file__).parents[1] / "data" / "envs"


#: in-process inner runs load just pytest-rocm, on an empty machine (tests/plugin/conftest.py);
#: the subprocess runs below use the real autoload
pytestmark = pytest.mark.usefixtures("only_this_plugin")


def rocm_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("rocm: ")]


# -- header ------------------------------------------------------------------------------------
def test_header_is_one_line_by_default(pytester) -> None:
    pytester.makepyfile("def test_x(): pass")
    env = ENVS / "rx7900xtx_rocm6.json"
    result = pytester.runpytest(f"--rocm-env={env}")
    assert rocm_lines(result.stdout.str()) == [
        "rocm: backend=rocm torch=2.6.0+rocm6.2.4 rocm=6.2.4 device=0:gfx1100 "
        f"(AMD Radeon RX 7900 XTX, 24.0 GiB) [env: {env}]"
    ]


@pytest.mark.parametrize(
    ("name", "warning"),
    [
        ("no_binary", "rocm: [[]FAIL] gfx-in-build: device 0 (*) is gfx1101 (rdna3), not in this torch build's arch*"),
        (
            "rx6700xt_override",
            "rocm: [[]WARN] reported-gfx: HSA_OVERRIDE_GFX_VERSION=10.3.0 makes gfx1031 report as gfx1030*",
        ),
        (
            "cuda_wheel_on_amd",
            "rocm: [[]FAIL] torch-build: torch 2.12.0+cu130 is a CUDA build * but the kernel reports*",
        ),
    ],
)
def test_warnings_come_before_the_header_line(pytester, name, warning) -> None:
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest(f"--rocm-env={ENVS / name}.json")
    lines = rocm_lines(result.stdout.str())
    assert lines[-1].startswith("rocm: backend=")
    result.stdout.fnmatch_lines([warning, "rocm: backend=*"])


def test_verbose_header_lists_the_whole_environment(pytester) -> None:
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest(f"--rocm-env={ENVS}/rx6700xt_override.json", "-v")
    result.stdout.fnmatch_lines(
        [
            "rocm: backend=rocm torch=2.5.1+rocm6.2 rocm=6.2 device=0:gfx1030 (AMD Radeon RX 6700 XT, 12.0 GiB)*",
            # the lines `rocm-compat env` prints: one renderer
            "rocm:   backend    rocm",
            "rocm:   torch      2.5.1+rocm6.2 (hip 6.2.*",
            "rocm:   arch list  *gfx1030*",
            "rocm:     [[]0[]] AMD Radeon RX 6700 XT: gfx1030 (rdna2, silicon gfx1031), 12.0 GiB, *, in build: yes",
            "rocm:   kernel     1 GPU(s) in the KFD topology",
            "rocm:     node *: gfx1031*, VRAM 12.0 GiB*",
            "rocm:   /dev/kfd   present, read-write ok; groups: *",
            "rocm:   host       *, python *",
            "rocm:   variables  HSA_OVERRIDE_GFX_VERSION=10.3.0*",
            "rocm:   libraries  *",
        ]
    )


def test_plan_and_forced_cpu_in_the_header(pytester) -> None:
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest(f"--rocm-env={ENVS}/cpu_only.json", "--rocm-gfx=gfx942")
    assert rocm_lines(result.stdout.str())[-1].endswith("device=plan:gfx942 [plan: gfx942, no device here]")
    result = pytester.runpytest(f"--rocm-env={ENVS}/mi300x_8.json", "--rocm-device=cpu")
    assert " device=cpu (forced) " in rocm_lines(result.stdout.str())[-1]


def test_doctor_lines_printed_before_collection_are_not_repeated_after(pytester, monkeypatch) -> None:
    """A plain header speaks the torch-free checks; when a test then needs the environment, the
    full diagnosis after collection prints only what the header did not already say."""
    monkeypatch.setenv("HSA_OVERRIDE_GFX_VERSION", "9.0.a")  # a system check fails on this machine
    cpu = Environment.load(ENVS / "cpu_only.json")
    supplier = Supplier(replace(cpu, variables={**cpu.variables, "HSA_OVERRIDE_GFX_VERSION": "9.0.a"}))
    pytester.makepyfile("import pytest\n@pytest.mark.gpu\ndef test_x(): pass")
    result = pytester.runpytest(plugins=[supplier])
    result.assert_outcomes(skipped=1)
    lines = result.stdout.lines
    override = [line for line in lines if line.startswith("rocm: [FAIL] hsa-override: ")]
    assert len(override) == 1, lines
    # said in the header, before "collected 1 item"; the environment's line comes after it
    collected_at = lines.index("collected 1 item")
    assert (
        lines.index(override[0])
        < collected_at
        < next(i for i, line in enumerate(lines) if line.startswith("rocm: backend="))
    )
    assert supplier.calls == 1


def test_xdist_workers_build_no_header(pytester) -> None:
    """What a worker prints is thrown away: its header hooks do no work (no probe, no diagnosis)."""
    config = pytester.parseconfigure(f"--rocm-env={ENVS}/mi300x_8.json")
    assert plugin.pytest_report_header(config)  # the controller's header
    plugin.get_state(config).header_shown = False
    plugin.get_state(config).tests_need_environment = True
    config.workerinput = {}  # type: ignore[attr-defined]
    assert plugin.pytest_report_header(config) == []
    assert plugin.pytest_report_collectionfinish(config) == []


def test_junitxml_carries_the_environment_as_testsuite_properties(pytester) -> None:
    pytester.makepyfile("def test_x(): pass")
    env_file = ENVS / "mi300x_8.json"
    pytester.runpytest(f"--rocm-env={env_file}", "--junitxml=out.xml")
    suite = ET.parse(pytester.path / "out.xml").getroot().find("testsuite")
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert props["rocm.backend"] == "rocm"
    assert props["rocm.torch"] == "2.6.0+rocm6.2.4"
    assert props["rocm.device"] == "0:gfx942 (AMD Instinct MI300X, 192.0 GiB)"
    assert props["rocm.source"] == str(env_file)
    recorded = Environment.from_dict(json.loads(props["rocm.environment"]))
    assert recorded == Environment.load(env_file)


# -- lazy detection and the pytest_rocm_detect_environment hook ---------------------------------
class Supplier:
    """A plugin implementing the hook: supplies ``env`` (None: declines), counting its calls."""

    def __init__(self, env: Environment | None) -> None:
        self.env = env
        self.calls = 0

    def pytest_rocm_detect_environment(self, config: pytest.Config) -> Environment | None:
        assert isinstance(config, pytest.Config)
        self.calls += 1
        return self.env


class Declines(Supplier):
    """Called before the others (tryfirst), returns None."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_rocm_detect_environment(self, config: pytest.Config) -> Environment | None:
        return super().pytest_rocm_detect_environment(config)


def rx7900() -> Supplier:
    return Supplier(Environment.load(ENVS / "rx7900xtx_rocm6.json"))


def test_detection_runs_only_when_a_test_needs_it(pytester) -> None:
    supplier = rx7900()
    pytester.makepyfile(test_plain="def test_a(): pass\ndef test_b(): pass")
    result = pytester.runpytest("test_plain.py", plugins=[supplier])
    assert result.ret == 0 and supplier.calls == 0 and rocm_lines(result.stdout.str()) == []

    pytester.makepyfile(
        test_marked="""
        import pytest
        @pytest.mark.gpu
        def test_a(): pass
        @pytest.mark.gfx("rdna3")
        def test_b(): pass
        def test_c(rocm_env): assert rocm_env.devices[0].gfx == "gfx1100"
    """
    )
    result = pytester.runpytest("test_marked.py", plugins=[supplier])
    result.assert_outcomes(passed=3)
    assert supplier.calls == 1  # once per session, however many tests ask
    # decided after collection, so the line follows "collected N items"
    result.stdout.fnmatch_lines(["collected 3 items", "rocm: backend=rocm * [[]env: pytest_rocm_detect_environment[]]"])


def test_requires_and_feature_do_not_detect(pytester) -> None:
    supplier = rx7900()
    pytester.makepyfile("""
        import pytest
        @pytest.mark.requires("pytest>=7")
        @pytest.mark.feature("operators/x")
        def test_a(): pass
    """)
    pytester.runpytest(plugins=[supplier]).assert_outcomes(passed=1)
    assert supplier.calls == 0


def test_hook_none_passes_to_the_next_implementation(pytester) -> None:
    declines, supplier = Declines(None), rx7900()
    pytester.makepyfile("def test_env(rocm_env): assert rocm_env.devices[0].gfx == 'gfx1100'")
    result = pytester.runpytest(plugins=[supplier, declines])
    result.assert_outcomes(passed=1)
    assert (declines.calls, supplier.calls) == (1, 1)


def test_hook_in_a_conftest_supplies_markers_and_fixtures(pytester) -> None:
    pytester.makeconftest(f"""
        from pytest_rocm.env.model import Environment
        def pytest_rocm_detect_environment(config):
            return Environment.load({str(ENVS / "mi300x_8.json")!r})
    """)
    pytester.makepyfile("""
        import pytest
        @pytest.mark.gpus(8)
        @pytest.mark.gfx("cdna3")
        def test_mi300x(rocm_env): assert len(rocm_env.devices) == 8
        @pytest.mark.gfx("rdna3")
        def test_rdna3(): pass
    """)
    result = pytester.runpytest("--junitxml=out.xml", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*needs rdna3, device 0 is gfx942 (cdna3)"])
    suite = ET.parse(pytester.path / "out.xml").getroot().find("testsuite")
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert props["rocm.source"] == "pytest_rocm_detect_environment"


def test_hook_is_not_asked_when_the_environment_is_recorded(pytester) -> None:
    supplier = rx7900()
    pytester.makepyfile("def test_env(rocm_env): assert rocm_env.devices[0].gfx == 'gfx942'")
    result = pytester.runpytest(f"--rocm-env={ENVS}/mi300x_8.json", plugins=[supplier])
    result.assert_outcomes(passed=1)
    assert supplier.calls == 0


def test_hook_returning_something_else_is_a_usage_error(pytester) -> None:
    pytester.makeconftest("def pytest_rocm_detect_environment(config):\n    return 'gfx942'\n")
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest("--rocm-gfx=gfx942")  # needs the environment at session start
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: pytest_rocm_detect_environment returned str: expected a *Environment*"])


# -- the device fixture ------------------------------------------------------------------------
def test_device_fixture_skips_naming_the_cause(pytester) -> None:
    pytester.makepyfile("def test_x(rocm_device): pass")
    result = pytester.runpytest(f"--rocm-env={ENVS}/cuda_wheel_on_amd.json", "-rs")
    result.stdout.fnmatch_lines(
        [
            "SKIPPED*no device to test on: torch 2.12.0+cu130 is a CUDA build and cannot use AMD GPUs; "
            "the kernel reports 1 GPU(s): gfx1150"
        ]
    )


def _fake_torch(available: bool, count: int = 0, arch: str | None = None) -> SimpleNamespace:
    props = SimpleNamespace(gcnArchName=arch) if arch else SimpleNamespace()
    cuda = SimpleNamespace(
        is_available=lambda: available, device_count=lambda: count, get_device_properties=lambda i: props
    )
    return SimpleNamespace(__version__="2.6.0+rocm6.2.4", cuda=cuda)


def test_recorded_device_must_really_be_here() -> None:
    assert live_device_problem(_fake_torch(False), 0, "gfx942") == "torch 2.6.0+rocm6.2.4 here sees no GPU"
    assert live_device_problem(_fake_torch(True, 1, "gfx942:sramecc+:xnack-"), 3, "gfx942") == (
        "torch here sees only 1 device(s)"
    )
    assert live_device_problem(_fake_torch(True, 1, "gfx1030"), 0, "gfx942") == "device 0 here is gfx1030"
    assert live_device_problem(_fake_torch(True, 1, "gfx942:sramecc+:xnack-"), 0, "gfx942") is None


# -- subprocess runs: the real entry point, real torch -----------------------------------------
PROBE = """
import sys
from pytest_rocm.plugin import session as state

def pytest_sessionfinish(session):
    known = state.environment_if_known(session.config) is not None
    print(f"\\nPROBE torch={'torch' in sys.modules} detected={known}")
"""


def test_plain_run_never_imports_torch_but_a_marked_one_does(pytester) -> None:
    pytester.makeconftest(PROBE)
    pytester.makepyfile(test_plain="def test_a(): pass\ndef test_b(): assert 1 + 1 == 2")
    pytester.makepyfile(
        test_marked="""
        import pytest
        @pytest.mark.gpu
        def test_gpu(): pass
        def test_cpu_device(rocm_device):
            assert str(rocm_device) == "cpu"
    """
    )
    env = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": None, "PYTEST_PLUGINS": None}
    with pytest.MonkeyPatch.context() as mp:
        for name in env:
            mp.delenv(name, raising=False)
        plain = pytester.runpytest_subprocess("test_plain.py", "-p", "no:cacheprovider")
        marked = pytester.runpytest_subprocess("test_marked.py", "-p", "no:cacheprovider", "--rocm-device=cpu", "-rs")
    plain.stdout.fnmatch_lines(["PROBE torch=False detected=False"])
    assert plain.ret == 0
    # the probe can see torch: with a marker and the device fixture it is there
    marked.stdout.fnmatch_lines(["PROBE torch=True detected=True"])
    marked.assert_outcomes(passed=1, skipped=1)
    marked.stdout.fnmatch_lines(["*needs a GPU, the device under test is the CPU (--rocm-device=cpu)"])


NO_TORCH_TESTS = """
import pytest
def test_device(rocm_device): pass
@pytest.mark.gpu
def test_gpu(): pass
@pytest.mark.torch_version(">=2")
def test_torch_version(): pass
def test_env(rocm_env):
    assert (rocm_env.backend, rocm_env.torch) == ("cpu", None)
"""


def test_without_torch_the_plugin_works_and_device_tests_say_why(pytester) -> None:
    # torch absent: an import of it fails as on a machine where it is not installed; the hook
    # declines (None), so the plugin's own detection runs
    pytester.makeconftest(
        "import sys\nsys.modules['torch'] = None\n\ndef pytest_rocm_detect_environment(config):\n    return None\n"
    )
    pytester.makepyfile(NO_TORCH_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(passed=1, skipped=3)
    result.stdout.fnmatch_lines(
        [
            "rocm: backend=cpu torch=not-installed device=none [[]env: detected[]] (torch is not installed)",
            "SKIPPED*no device to test on: torch is not installed",
            "SKIPPED*needs a GPU, torch is not installed",
            "SKIPPED*needs torch >=2, torch is not installed",
        ]
    )
    assert "installed (torch is not installed)" not in result.stdout.str()
    forced = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rs", "--rocm-device=cpu")
    forced.assert_outcomes(passed=1, skipped=3)
    forced.stdout.fnmatch_lines(["SKIPPED*the CPU device: torch is not installed*"])


def test_import_help_version_markers_never_import_torch(tmp_path) -> None:
    script = textwrap.dedent("""
        import sys, contextlib, io
        import pytest_rocm.plugin as plugin
        for name in plugin.pytest_plugins:
            __import__(name)
        assert "torch" not in sys.modules, "import"
        import pytest
        for args in (["--help"], ["--version"], ["--markers"]):
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                pytest.main(args + ["-p", "no:cacheprovider"])
            assert "torch" not in sys.modules, args
        print("CLEAN")
    """)
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("PYTEST_")}
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.stdout.strip().endswith("CLEAN"), done.stdout + done.stderr


XDIST_CONFTEST = """
import os
from pytest_rocm.env.model import Environment

def pytest_rocm_detect_environment(config):
    with open(os.environ["DETECT_LOG"], "a") as log:
        log.write(os.environ.get("PYTEST_XDIST_WORKER", "controller") + "\\n")
    return Environment.load(os.environ["FAKE_ENV"])
"""


def test_xdist_detects_once_on_the_controller(pytester, monkeypatch) -> None:
    """The hook's environment is asked for once, on the controller, and handed to the workers."""
    pytest.importorskip("xdist")
    log = pytester.path / "detect.log"
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD")
    monkeypatch.delenv("PYTEST_PLUGINS")
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)  # when this suite itself runs under xdist
    monkeypatch.setenv("DETECT_LOG", str(log))
    monkeypatch.setenv("FAKE_ENV", str(ENVS / "mi300x_8.json"))
    pytester.makeconftest(XDIST_CONFTEST)
    pytester.makepyfile("""
        import pytest
        @pytest.mark.parametrize("i", range(6))
        @pytest.mark.gfx("cdna3")
        def test_on_worker(i, rocm_env):
            assert rocm_env.devices[0].gfx == "gfx942"
        @pytest.mark.gfx("rdna3")
        def test_skipped_on_worker(): pass
        def test_source_on_worker(pytestconfig):
            from pytest_rocm.plugin import session
            assert session.get_state(pytestconfig).source == "pytest_rocm_detect_environment"
    """)
    quiet = ("-p", "no:hypothesispytest", "-p", "no:benchmark", "-p", "no:anyio")  # speed only
    result = pytester.runpytest_subprocess("-n", "2", "-p", "no:cacheprovider", *quiet)
    result.assert_outcomes(passed=7, skipped=1)
    assert log.read_text().split() == ["controller"]
    result.stdout.fnmatch_lines(["rocm: backend=rocm * device=0:gfx942 * [[]env: pytest_rocm_detect_environment[]]"])


def test_plugins_list_is_kept() -> None:
    for name in ("pytest_rocm.plugin.report", "pytest_rocm.plugin.fixtures"):
        assert name in plugin.pytest_plugins
    assert plugin.pytest_plugins == [
        "pytest_rocm.plugin.aliases",
        "pytest_rocm.plugin.report",
        "pytest_rocm.plugin.fixtures",
        "pytest_rocm.plugin.scale",
        "pytest_rocm.plugin.perf",
        "pytest_rocm.plugin.workload",
    ]
    assert "pytest_rocm.plugin.parity_fixtures" not in plugin.pytest_plugins  # folded into fixtures
