"""pytest entry point (``pytest11: rocm``): options, markers, the device under test, the header.

Hooks stay thin and call pure functions (options, device_choice.choose_device, marks.evaluate, header).
Importing this module imports no torch, and a run whose tests use no marker or fixture of the
plugin never detects the environment (detection imports torch). What forces detection: a plugin
marker that needs it on a test being set up, the ``rocm_env``/``rocm_device`` fixtures, an option
about the hardware (--rocm-gfx, --rocm-device=cuda:N, --rocm-require-gpu), --junitxml (the
environment goes into the test-suite properties, at the end of the run), and an xdist controller
(it detects once and hands the environment to its workers). Detection reads torch's installed
files first and imports torch only where they cannot tell (``env.torchfiles``). A conftest or
plugin can supply the environment instead through the ``pytest_rocm_detect_environment`` hook
(:mod:`pytest_rocm.plugin.hookspecs`).
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from pytest_rocm.env.model import Environment, EnvironmentFileError
from pytest_rocm.env.seam import distribution_version
from pytest_rocm.parity.result import ParityResult, add_listener
from pytest_rocm.plugin import header, hookspecs, marks, options, plan, xdist
from pytest_rocm.plugin.device_choice import require_gpu_problem
from pytest_rocm.plugin.markcache import item_marks, refresh
from pytest_rocm.plugin.session import (
    RocmState,
    environment_if_known,
    get_device_choice,
    get_state,
    install,
)
from pytest_rocm.report.properties import PARITY_PROPERTY

pytest_plugins = [
    "pytest_rocm.plugin.aliases",
    "pytest_rocm.plugin.report",
    "pytest_rocm.plugin.fixtures",
    "pytest_rocm.plugin.scale",
    "pytest_rocm.plugin.perf",
    "pytest_rocm.plugin.workload",
]

#: fixtures whose use means a test needs the environment
ENV_FIXTURES = frozenset({"rocm_env", "rocm_device", "parity"})


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    options.add_options(parser)


# -- session setup ------------------------------------------------------------------------------
def _check_sysroot() -> None:
    value = os.environ.get("PYTEST_ROCM_SYSROOT")
    if not value:
        return
    from pytest_rocm.env import seam  # only when set: keeps the plain path import-free

    try:
        seam.check_sysroot(value)
    except seam.SysrootError as exc:
        message = str(exc)
        if "PYTEST_ROCM_SYSROOT" not in message:
            message = f"PYTEST_ROCM_SYSROOT={value!r}: {message}"
        raise pytest.UsageError(message) from None


def _initial_state(config: pytest.Config, settings: options.Settings) -> RocmState:
    st = RocmState(settings)
    handed = xdist.handed_environment(config)
    if handed is not None:
        st.environment, st.source, st.recorded = handed
    elif settings.env_file is not None:
        try:
            st.environment = Environment.load(settings.env_file)
        except EnvironmentFileError as exc:
            raise pytest.UsageError(f"{settings.env_source}: {exc}") from None
        st.source = str(settings.env_file)
        st.recorded = True
    return st


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    marks.register(config)
    config.pluginmanager.register(FixtureMarkers(), "rocm-fixture-markers")
    config.pluginmanager.register(PlanSummary(config), "rocm-plan-summary")
    if getattr(config.option, "help", False):
        return
    settings = options.resolve(config)
    options.publish(config, settings)
    _check_sysroot()
    install(config, _initial_state(config, settings))
    xdist.configure(config)  # the environment and one device per worker


def _junit(config: pytest.Config) -> Any:
    try:
        from _pytest.junitxml import xml_key
    except ImportError:  # pragma: no cover - older pytest
        return getattr(config, "_xml", None)
    return config.stash.get(xml_key, None)


def _needs_environment_now(config: pytest.Config) -> bool:
    s = get_state(config).settings
    return bool(
        s.gfx
        or isinstance(s.device, int)
        or s.require_gpu
        or config.pluginmanager.hasplugin("dsession")  # xdist controller: workers get it at startup
    )  # --junitxml needs it only for the properties it writes at the end (pytest_sessionfinish)


def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    if not _needs_environment_now(config):
        return
    choice = get_device_choice(config)  # UsageError when --rocm-gfx/--rocm-device cannot be met
    settings = get_state(config).settings
    if settings.require_gpu:
        problem = require_gpu_problem(choice, settings)
        if problem:
            raise pytest.UsageError(problem)


# -- markers ------------------------------------------------------------------------------------
def _needs_environment(item: pytest.Item, parsed: list[marks.Parsed]) -> bool:
    """Whether the test reads the environment: a fixture of ours or a marker that does."""
    return not ENV_FIXTURES.isdisjoint(getattr(item, "fixturenames", ())) or any(
        p.name in marks.ENV_NAMES for p in parsed
    )


@pytest.hookimpl(trylast=True)  # after other plugins have added their markers
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Validate every test's markers once; a bad one is a collection error naming the test. Only
    the plugin's own names are read: a short alias the project registered is the project's."""
    refresh(config, get_state(config).settings.short_markers)  # sub-folders' conftests registered theirs
    bad: list[tuple[pytest.Item, marks.MarkerError]] = []
    needs_env = False
    for item in items:
        try:
            parsed = item_marks(item)
        except marks.MarkerError as exc:
            bad.append((item, exc))
            continue
        needs_env = needs_env or _needs_environment(item, parsed)
    get_state(config).tests_need_environment = needs_env
    if not bad:
        return
    dropped = {id(item) for item, _ in bad}
    items[:] = [item for item in items if id(item) not in dropped]
    for item, error in bad:
        # counted like any collection error: the run stops before tests start, exit status 2
        report = pytest.CollectReport(item.nodeid, "failed", f"{item.nodeid}: {error}", [])
        config.hook.pytest_collectreport(report=report)


def _version_lookup(config: pytest.Config) -> Any:
    st = get_state(config)
    recorded = st.environment.libraries if st.recorded and st.environment else None
    return marks.library_lookup(recorded, distribution_version, st.source if recorded is not None else None)


#: how many markers the item had when they were last decided (a fixture may add more)
_DECIDED_MARKS = pytest.StashKey[int]()


@pytest.hookimpl(tryfirst=True)  # before pytest's own skipping: our xfail mark must be seen
def pytest_runtest_setup(item: pytest.Item) -> None:
    _apply_markers(item)


class ParityToProperties:
    """A listener that appends each finished parity result's records to a test's user_properties
    under the report's ``rocm_parity`` key."""

    __slots__ = ("properties", "with_repro")

    def __init__(self, properties: list[tuple[str, object]], with_repro: bool) -> None:
        self.properties = properties
        self.with_repro = with_repro  # a reproducer spec only where a report will keep it

    def __call__(self, result: ParityResult) -> None:
        self.properties.append((PARITY_PROPERTY, result.records(self.with_repro)))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    # While the test runs, every finished assert_parity result (the fixture's or a direct call's)
    # goes to its user properties, where the report reads it. Added and removed here, without a
    # context manager: this runs for every test of every suite (benchmarks/bench_plugin_overhead.py).
    stop = add_listener(ParityToProperties(item.user_properties, bool(get_state(item.config).settings.report)))
    try:
        return (yield)
    finally:
        stop()


class FixtureMarkers:
    """Markers a fixture adds (``request.node.add_marker(pytest.mark.rocm_min_vram('lots'))``)
    exist only once the fixtures ran: validated and decided then, at the end of setup, as the
    others were at collection and before setup (a bad one is a setup error naming the test)."""

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Any:
        result = yield
        if item.stash.get(_DECIDED_MARKS, 0) != len(item.own_markers):
            _apply_markers(item)
        return result


def _apply_markers(item: pytest.Item) -> None:
    try:
        parsed = item_marks(item)
    except marks.MarkerError as exc:  # a marker added after collection
        pytest.fail(f"{item.nodeid}: {exc}", pytrace=False)
    item.stash[_DECIDED_MARKS] = len(item.own_markers)
    if not parsed:
        return
    needs_env = any(p.name in marks.ENV_NAMES for p in parsed)
    choice = get_device_choice(item.config) if needs_env else None
    decision = marks.evaluate(parsed, choice, _version_lookup(item.config))
    if decision.skip:
        raise pytest.skip.Exception(decision.skip, _use_item_location=True)
    if choice is not None and choice.plan and any(p.name in marks.DEVICE_NAMES for p in parsed):
        # decided as on the plan's architecture; never executed on this machine's hardware
        xfail = decision.xfail[0] if decision.xfail else None
        raise pytest.skip.Exception(plan.would_run(choice.plan, xfail, choice.plan_wheel_gap), _use_item_location=True)
    if decision.xfail:
        reason, strict = decision.xfail
        # strict None: left out, so pytest applies its xfail_strict ini as for its own xfail marker
        mark = pytest.mark.xfail(reason=reason) if strict is None else pytest.mark.xfail(reason=reason, strict=strict)
        item.add_marker(mark)
        item.stash[_DECIDED_MARKS] = len(item.own_markers)


# -- reporting ----------------------------------------------------------------------------------
def _lines(config: pytest.Config) -> list[str]:
    st = get_state(config)
    st.header_shown = True
    choice = get_device_choice(config)
    # this machine's environment is judged as the doctor judges it, with the probed facts; a
    # recorded one describes another machine, so nothing here is probed for it
    checks = None if st.recorded else header.probed_diagnosis(choice.env)
    lines = header.header_lines(choice, st.source, config.get_verbosity(), checks)
    return [line for line in lines if line not in st.early_lines]  # said once, before collection


def pytest_report_header(config: pytest.Config) -> list[str]:
    if xdist.is_worker(config):  # what an xdist worker prints is thrown away: work for nothing
        return []
    if environment_if_known(config) is None:
        # the environment is decided after collection, only if a test needs it; until then the
        # checks that need no torch speak
        checks = header.system_diagnosis()
        lines = header.doctor_lines(checks) if checks else []
        get_state(config).early_lines = frozenset(lines)
        return lines
    return _lines(config)


def pytest_report_collectionfinish(config: pytest.Config) -> list[str]:
    st = get_state(config)
    if st.header_shown or not st.tests_need_environment or xdist.is_worker(config):
        return []
    return _lines(config)


@pytest.hookimpl(tryfirst=True)  # before the report's own summary line, which names the column
def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """The environment lines a header could not show because the environment was found during the
    run (detected in a child process for the report while the tests ran): said at the end, so the
    log of a run with a report always names its environment."""
    st = get_state(config)
    if st.header_shown or xdist.is_worker(config) or environment_if_known(config) is None:
        return
    for line in _lines(config):
        terminalreporter.write_line(line)


@pytest.hookimpl(tryfirst=True)  # before junitxml writes the file
def pytest_sessionfinish(session: pytest.Session) -> None:
    xml = _junit(session.config)
    if xml is None:
        return
    st = get_state(session.config)
    for name, value in header.junit_properties(get_device_choice(session.config), st.source):
        xml.add_global_property(name, value)


class PlanSummary:
    """Counts what a plan decided and says it at the end: how many tests would run on the
    architecture, how many would skip and why (counted where the reports arrive: the xdist
    controller gets every worker's)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.tally: plan.PlanTally | None = None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if xdist.is_worker(self.config):
            return
        st = get_state(self.config)
        if st.device_choice is None or not st.device_choice.plan:
            return
        # one count per test: its setup when that did not pass (a skip), else its call
        if not (report.when == "call" or (report.when == "setup" and not report.passed)):
            return
        self.tally = self.tally or plan.PlanTally(st.device_choice.plan)
        reason = report.longrepr[2] if report.skipped and isinstance(report.longrepr, tuple) else None
        self.tally.add(report.outcome, reason)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.tally is not None:
            terminalreporter.section("rocm plan")
            for line in self.tally.lines():
                terminalreporter.write_line(line)
