"""Report hooks: ``--rocm-report=FILE`` writes the compatibility report (see ``report``).

Thin: each hook hands its report's plain values to ``report.recorder.Recorder``, which holds the
run's state (phases, reruns, deaths, the tests collected, the sidecar, the final write) and is
tested without pytest; what a record says is ``report.records``'. Under pytest-xdist only the
controller writes; it receives every worker's reports (with their user_properties) through
``pytest_runtest_logreport``, and xdist's report for a crashed worker.

The shape is pytest's own ``LogXML`` (``_pytest/junitxml.py``): ``pytest_configure`` builds the
writer from the session's resolved ``Settings`` (options, ini and environment variables after
precedence: ``plugin.options``), never from ``config.option``; ``pytest_unconfigure`` unregisters it.
Its hooks forward to the recorder as ``LogXML``'s forward to its ``_NodeReporter``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_rocm.plugin.accelerator import AcceleratorProbe
from pytest_rocm.plugin.markcache import feature_of
from pytest_rocm.plugin.markspec import MarkerError
from pytest_rocm.plugin.modules import MODULES_PLUGIN, ModulesRecorder, mismatch_lines
from pytest_rocm.plugin.numbers import timeout_setting
from pytest_rocm.plugin.options import Settings, named
from pytest_rocm.plugin.run_selection import SELECTION_PLUGIN, SelectionRecorder, recorded_selection, under_xdist
from pytest_rocm.plugin.session import detect_if_harmless, device_string, get_environment, get_state
from pytest_rocm.plugin.xdist import is_worker
from pytest_rocm.report import files, records
from pytest_rocm.report.recorder import Recorder, Settled

#: pytest's exit status when the tests ran but the report could not be written (a full disk):
#: distinct from pytest's own 0-5, so CI tells "tests failed" from "no report"
EXIT_REPORT_UNWRITTEN = 6


# -- hooks ------------------------------------------------------------------------------------------
#: the names the report's plugin objects are registered under (unregistered at the end)
PLUGIN_NAMES = (
    "rocm-report-features",
    "rocm-report-accelerator",
    "rocm-report-writer",
    "rocm-report-starts",
    MODULES_PLUGIN,
)


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    settings = get_state(config).settings  # resolved by the core plugin's pytest_configure
    if not settings.report:
        return
    config.pluginmanager.register(FeatureTagger(), "rocm-report-features")
    config.pluginmanager.register(AcceleratorProbe(), "rocm-report-accelerator")
    config.pluginmanager.register(SelectionRecorder(), SELECTION_PLUGIN)
    config.pluginmanager.register(ModulesRecorder(config), MODULES_PLUGIN)  # which code ran
    if not is_worker(config):
        writer = ReportWriter(config, settings, timeout_setting(config).seconds, bool(config.getoption("collectonly")))
        config.pluginmanager.register(writer, "rocm-report-writer")
        if under_xdist(config):
            config.pluginmanager.register(writer.starts, "rocm-report-starts")


def pytest_unconfigure(config: pytest.Config) -> None:
    for name in (*PLUGIN_NAMES, SELECTION_PLUGIN):
        plugin = config.pluginmanager.get_plugin(name)
        if plugin is not None:
            config.pluginmanager.unregister(plugin, name)


class FeatureTagger:
    """Hands the ``rocm_feature`` marker's name, and a ``timeout`` marker's seconds, to the report
    through user_properties (works in xdist workers, whose reports carry them to the controller)."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        parents_timeout: dict[int, pytest.Mark | None] = {}  # the tests of one class or module share it
        for item in items:
            try:
                feature = feature_of(item)  # the parsed-marker cache: validated, parsed once
            except MarkerError:
                continue  # the core plugin's collection hook reports it and drops the test
            if feature:
                item.user_properties.append((records.FEATURE_PROPERTY, feature))
            seconds = _marker_timeout(item, parents_timeout)
            if seconds:
                item.user_properties.append((records.TIMEOUT_PROPERTY, seconds))


def _closest_timeout(item: pytest.Item, of_parents: dict[int, pytest.Mark | None]) -> pytest.Mark | None:
    """``item.get_closest_marker("timeout")``, the parents' answer remembered per parent (by id: the
    nodes live through the loop): a walk of the node chain per test was most of the tagger's cost."""
    for mark in item.own_markers:
        if mark.name == "timeout":
            return mark
    parent = item.parent
    key = id(parent)
    if key in of_parents:
        return of_parents[key]
    found = None
    node = parent
    while node is not None and found is None:
        found = next((mark for mark in node.own_markers if mark.name == "timeout"), None)
        node = node.parent
    of_parents[key] = found
    return found


def _marker_timeout(item: pytest.Item, of_parents: dict[int, pytest.Mark | None]) -> float | None:
    """The seconds of pytest-timeout's ``timeout`` marker on this test (None: no marker, or one
    without seconds: the session's timeout applies)."""
    marker = _closest_timeout(item, of_parents)
    if marker is None:
        return None
    setting = timeout_setting(item.config, marker)
    return setting.seconds if setting.source == "marker" else None


class TestStarts:
    """When each test started, as this controller hears of it: registered only under pytest-xdist,
    where a worker that dies mid-test leaves a crash report, and how long its test ran tells a
    kill by pytest-timeout's thread method from a crash. In one process a crash ends the writer
    with it (the sidecar names the test) and a timeout is read from its failure message, so a
    serial run pays no hook per test for it."""

    __test__ = False  # not a test class, whatever its name

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        self.recorder.started(nodeid)


class ReportWriter:
    """The report's hooks: each hands its report's plain values to the ``Recorder``
    (``report.recorder``), which holds the run's state, the sidecar and the report's writing.

    Built from the session's ``Settings`` (the report path, label, device tokens), pytest-timeout's
    global timeout (to tell its kills from crashes) and whether the run only collects. Raises
    ``pytest.UsageError`` when the path cannot be written or another run holds its sidecar: before
    any test runs, a second run on this report path is refused, not interleaved."""

    def __init__(
        self, config: pytest.Config, settings: Settings, timeout: float | None = None, collect_only: bool = False
    ) -> None:
        if not settings.report:
            raise ValueError("ReportWriter needs settings.report")
        self.config = config
        path = Path(settings.report)
        # named with where the path came from (option, variable or ini file)
        where = named(settings.report_source or "--rocm-report", path)
        problem = files.unwritable(path)
        if problem:
            raise pytest.UsageError(f"{where}: cannot write ({problem})")
        try:
            sidecar = files.Sidecar(files.sidecar_path(path))
        except files.UnsafeTarget as exc:
            raise pytest.UsageError(f"{where}: {exc}") from None
        self.recorder = Recorder(
            path,
            sidecar,
            self._detect,
            self._warn,
            label=settings.label or "",
            host_label=settings.host_label,
            device_tokens=settings.device_ids,
            timeout=timeout,
            collect_only=collect_only,
        )
        #: when each test started (under pytest-xdist only: registered there)
        self.starts = TestStarts(self.recorder)

    def _detect(self, wait: bool) -> Settled | None:
        """The environment, device and scale: ``wait=False`` never imports torch nor starts a
        child, it detects only where that is harmless now (``session.detect_if_harmless``: the
        tests imported torch); ``wait=True`` at the report's writing detects in a child if torch
        was never imported."""
        if not wait and not detect_if_harmless(self.config):
            return None
        env = get_environment(self.config)
        device = device_string(self.config)
        from pytest_rocm.plugin.scale import get_scale  # a plugin module itself: imported once, by pytest

        return Settled(
            records.jsonable(env.to_dict()), device, get_scale(self.config), records.default_label(env, device)
        )

    def _warn(self, line: str) -> None:
        terminal = self.config.pluginmanager.get_plugin("terminalreporter")
        if terminal is not None:
            terminal.write_line(line, yellow=True)
        else:  # -p no:terminal
            import sys

            print(line, file=sys.stderr)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.recorder.start(recorded_selection(self.config))

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        # an xdist controller collects nothing: its workers' ids come through the hook below
        self.recorder.collection_finished([item.nodeid for item in session.items], _marked(session.items))

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self.recorder.worker_collected(ids)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        when = str(report.when)  # xdist's crash report says "???", not a phase pytest names
        died = None
        if when == "???":  # xdist: the worker died running it; its exit status says how
            from pytest_rocm.plugin.xdist import worker_exit_status

            died = worker_exit_status(getattr(report, "node", None))
        self.recorder.phase(report.nodeid, when, report.outcome, report, died)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """A module that failed to import (``hipErrorNoBinaryForGpu``, a CUDA-only extension) is a
        row, outcome ``error``: absent, the table would say "works everywhere"."""
        if report.failed:
            self.recorder.collection_error(report.nodeid, str(report.longrepr) if report.longrepr is not None else "")

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        stopped = exitstatus == pytest.ExitCode.INTERRUPTED or bool(session.shouldstop or session.shouldfail)
        written = self.recorder.finish(
            stopped, lambda: _why_stopped(session, exitstatus), lambda: recorded_selection(self.config), self._modules
        )
        if not written:
            session.exitstatus = EXIT_REPORT_UNWRITTEN

    def _modules(self) -> dict[str, Any]:
        """The report's ``modules``: which code the tests imported (``plugin.modules``)."""
        recorder = self.config.pluginmanager.get_plugin(MODULES_PLUGIN)
        return recorder.records() if isinstance(recorder, ModulesRecorder) else {}

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for line, colour in self.recorder.summary_lines(mismatch_lines(self.recorder.modules)):
            terminalreporter.write_line(line, **({colour: True} if colour else {}))


def _marked(items: list[pytest.Item]) -> dict[str, str]:
    """node id -> the ``rocm_feature`` marker's name that FeatureTagger handed to its record."""
    marked = {}
    for item in items:
        for entry in item.user_properties:
            if type(entry) is tuple and len(entry) == 2 and entry[0] == records.FEATURE_PROPERTY:
                marked[item.nodeid] = str(entry[1])
    return marked


def _why_stopped(session: pytest.Session, exitstatus: int | pytest.ExitCode) -> str:
    """Why collected tests got no result, for the report's ``interrupted_reason``."""
    dsession = session.config.pluginmanager.getplugin("dsession")  # pytest-xdist's controller
    summary = getattr(dsession, "_summary_report", None)  # "maximum crashed workers reached: 4"
    if summary:
        return f"not run: pytest-xdist stopped the run ({summary})"
    stop = session.shouldfail or session.shouldstop
    if stop:
        return f"not run: the run stopped early ({stop})"
    if exitstatus == pytest.ExitCode.INTERRUPTED:
        return "not run: the run was interrupted"
    return f"not run: the run ended first (pytest exit status {int(exitstatus)})"
