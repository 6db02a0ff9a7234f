"""Report hooks: ``--rocm-report=FILE`` writes the compatibility report (see ``report``).

Thin: the hooks collect phase reports and hand them to pure functions in ``pytest_rocm.report.records``.
Under pytest-xdist only the controller writes; it receives every worker's reports (with their
user_properties) through ``pytest_runtest_logreport``, and xdist's report for a crashed worker.

The shape is pytest's own ``LogXML`` (``_pytest/junitxml.py``): ``pytest_configure`` builds the
writer from the session's resolved ``Settings`` (options, ini and environment variables after
precedence: ``plugin.options``), never from ``config.option``; ``pytest_unconfigure`` unregisters it.

Why this module is long: the writer's hooks share one state (pending phases, the sidecar, what
was never run, a full disk's warning and the final write's failure); split, they would pass it around.
"""

from __future__ import annotations

import time
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
from pytest_rocm.report import collection, files, fleet, records
from pytest_rocm.report.encoded import EncodedResults

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

    def __init__(self) -> None:
        self.at: dict[str, float] = {}

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        self.at[nodeid] = time.monotonic()


class ReportWriter:
    """Gathers phase reports per test, appends each finished record to the sidecar, writes the JSON.

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
        self.path = Path(settings.report)
        # named with where the path came from (option, variable or ini file)
        where = named(settings.report_source or "--rocm-report", self.path)
        problem = files.unwritable(self.path)
        if problem:
            raise pytest.UsageError(f"{where}: cannot write ({problem})")
        try:
            self.sidecar = files.Sidecar(files.sidecar_path(self.path))
        except files.UnsafeTarget as exc:
            raise pytest.UsageError(f"{where}: {exc}") from None
        self.pending: dict[str, list[Any]] = {}
        #: when each test started (under pytest-xdist only: registered there, see TestStarts)
        self.starts = TestStarts()
        #: the results, each kept as its JSON line (encoded once: the sidecar's and the report's)
        self.results = EncodedResults()
        #: the column label: --rocm-label, else (once the environment is known) the default
        self.label = settings.label or ""
        self.host_label = settings.host_label
        self.machine: dict[str, Any] = {}
        self.created: str | None = None
        self.environment: dict[str, Any] = {}
        self.device: str | None = None
        self.scale: str | None = None
        #: whether environment, device, label and scale are known (_settle)
        self.settled = False
        self.timeout = timeout
        self.collect_only = collect_only
        #: node ids collected (in-process or by the xdist workers), to list those never run
        self.collected: dict[str, None] = {}
        #: attempts that pytest-rerunfailures ran again, per test still to finish
        self.reruns: dict[str, int] = {}
        #: the node ids of collection errors already recorded (xdist sends one from each worker)
        self.collection_errors: set[str] = set()
        self.device_tokens = settings.device_ids
        #: whether an earlier run's report at the path was removed (at this run's first result)
        self.claimed = False
        #: the report's ``modules`` once written (the summary warns of a project package imported elsewhere)
        self.modules: dict[str, Any] = {}
        #: why the earlier report was kept (the terminal summary says it), else ""
        self.kept = ""
        #: the sidecar's failure, once said (a full disk); why the final report was not written
        self.sidecar_warned = False
        self.unwritten = ""
        #: how the xdist worker of a crashed test ended (``killed by SIGSEGV (signal 11)``), per test
        self.deaths: dict[str, str] = {}

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.created = records.now_iso()
        # A report left by an earlier run is removed at this run's first result (_claim): from then
        # on only the sidecar may speak. A run that records nothing (--collect-only, stopped before
        # any test) leaves it as it was: never replaced by less.
        if self._settle(wait=False):  # known, or harmless to detect here now: the header line has it all
            self.sidecar.start({"created": self.created, **self._tool(), **self._settled_fields(), **self._selection()})
        else:  # detected once torch is imported, or at the end: its line follows when it is known
            label = {"label": self.label} if self.label else {}
            self.sidecar.start({"created": self.created, **self._tool(), **label, **self._selection()})

    @staticmethod
    def _tool() -> dict[str, Any]:
        """``{"tool": {"name", "version"}}``: which pytest-rocm wrote the report (a fleet's merge notes it)."""
        return {"tool": fleet.tool_record()}

    def _selection(self) -> dict[str, Any]:
        """``{"selection": ...}``: what this run selected (a killed run's sidecar keeps it too)."""
        return {"selection": recorded_selection(self.config)}

    def _settle(self, wait: bool) -> bool:
        """Fill in the environment, device, label and scale once the environment is known; True if
        they were filled in now. ``wait=False`` never imports torch nor starts a child: it detects
        only where that is harmless now (``session.detect_if_harmless``: the tests imported torch),
        else leaves them for later (the first result after that, a test that needs the environment,
        at the latest the report's writing, which detects in a child if torch was never imported)."""
        if self.settled:
            return False
        if not wait and not detect_if_harmless(self.config):
            return False
        env = get_environment(self.config)
        self.device = device_string(self.config)
        self.label = self.label or records.default_label(env, self.device)
        self.environment = records.jsonable(env.to_dict())
        self.machine = fleet.machine_record(self.environment, self.host_label)
        from pytest_rocm.plugin.scale import get_scale  # a plugin module itself: imported once, by pytest

        self.scale = get_scale(self.config)
        self.settled = True
        return True

    def _settled_fields(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "environment": self.environment,
            "device": self.device,
            "scale": self.scale,
            "machine": self.machine,
        }

    def _settle_sidecar(self, wait: bool) -> None:
        """Settle, and hand the fields to the sidecar as its environment line (a killed run keeps them)."""
        if self._settle(wait) and self.sidecar is not None:
            self.sidecar.append_environment(self._settled_fields())

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.collected.update(dict.fromkeys(item.nodeid for item in session.items))
        self._settle_sidecar(wait=False)  # the test modules imported torch: known before the first test
        if session.items and self.sidecar is not None:  # a serial run (an xdist controller collects nothing)
            # the run's order, once: a crash of the whole process is then named by the loader as the
            # first of these without a result, with no line written as each test starts
            self.sidecar.append_collected(
                [item.nodeid for item in session.items], _marked(session.items), self.device_tokens
            )

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self.collected.update(dict.fromkeys(ids))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        when = str(report.when)  # xdist's crash report says "???", not a phase pytest names
        nodeid = report.nodeid  # a property: read once
        if when == "???":  # xdist: the worker died running it; its exit status says how
            from pytest_rocm.plugin.xdist import worker_exit_status

            self.deaths[nodeid] = worker_exit_status(getattr(report, "node", None))
        phases = self.pending.get(nodeid)
        if phases is None:
            phases = self.pending[nodeid] = []
        phases.append(report)
        if when == "teardown":
            for phase in phases:
                if phase.outcome == "rerun":
                    # an attempt pytest-rerunfailures runs again: one test, one result (the last attempt's)
                    del self.pending[nodeid]
                    self.reruns[nodeid] = self.reruns.get(nodeid, 0) + 1
                    return
            self._finish(nodeid)
        elif when == "???":
            self._finish(nodeid)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """A module that failed to import (``hipErrorNoBinaryForGpu``, a CUDA-only extension) is a
        row, outcome ``error``: absent, the table would say "works everywhere"."""
        if not report.failed or report.nodeid in self.collection_errors:
            return
        self.collection_errors.add(report.nodeid)
        self._record(collection.collection_record(report, self.device_tokens))

    def _claim(self) -> None:
        if not self.claimed:
            self.claimed = True
            files.remove_if_regular(self.path)

    def _record(self, record: records.ResultRecord) -> None:
        # once per test: the checks inline, the calls only when there is something to do
        if not self.claimed:
            self._claim()
        if not self.settled:
            self._settle_sidecar(wait=False)
        line = self.results.add(record)
        if self.sidecar is not None:
            self.sidecar.append_line(line)
            if self.sidecar.problem is not None:
                self._warn_sidecar()

    def _warn_sidecar(self) -> None:
        """Once: the sidecar stopped (a full disk); the run goes on, the results are in memory."""
        if self.sidecar is None or self.sidecar.problem is None or self.sidecar_warned:
            return
        self.sidecar_warned = True
        line = (
            f"rocm report: warning: cannot write the sidecar ({self.sidecar.problem}); the tests go on,"
            f" their results are kept in memory for {self.path}"
        )
        terminal = self.config.pluginmanager.get_plugin("terminalreporter")
        if terminal is not None:
            terminal.write_line(line, yellow=True)
        else:  # -p no:terminal
            import sys

            print(line, file=sys.stderr)

    def _finish(self, nodeid: str) -> None:
        phases = self.pending.pop(nodeid)
        start = self.starts.at.pop(nodeid, None) if self.starts.at else None
        elapsed = time.monotonic() - start if start is not None else None
        attempts = self.reruns.pop(nodeid, 0) + 1 if self.reruns else 1
        died = self.deaths.pop(nodeid, None) if self.deaths else None
        self._record(records.build_record(nodeid, phases, elapsed, self.timeout, self.device_tokens, attempts, died))

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        for nodeid in list(self.pending):  # interrupted mid-test (Ctrl-C, -x): keep what is known
            self._finish(nodeid)
        extra: dict[str, Any] = {}
        if exitstatus == pytest.ExitCode.INTERRUPTED or session.shouldstop or session.shouldfail:
            extra["interrupted"] = True  # Ctrl-C, -x, --maxfail: the table marks the column partial
        never_run = self._never_run()
        if never_run:
            why = _why_stopped(session, exitstatus)
            for nodeid in never_run:
                self.results.add(records.not_run_record(nodeid, why, self.device_tokens))
            extra["interrupted"] = True
            extra["interrupted_reason"] = why
        if self._keeps_earlier_report():
            return
        self._settle_sidecar(wait=True)  # the environment, at the latest now (in a child if torch was never imported)
        extra.update(device=self.device, scale=self.scale, machine=self.machine, **self._tool(), **self._selection())
        extra["modules"] = self.modules = self._modules()
        summary = self.results.summary()
        document = records.assemble(self.label, self.environment, [], self.created, summary, **extra)
        self._warn_sidecar()
        try:  # a full disk may have room again by now: tried twice
            files.write_json(self.path, document, attempts=2, lines=self.results.lines)
        except OSError as exc:
            kept = "" if self.sidecar is None or self.sidecar.problem else f"; {self.sidecar.path} has them all"
            self.unwritten = (
                f"cannot write {self.path} ({exc.strerror or exc}): {len(self.results)} results not saved{kept}"
            )
            session.exitstatus = EXIT_REPORT_UNWRITTEN
            if self.sidecar is not None:
                self.sidecar.append_finished()  # ended in order: the tests without a result never ran
                self.sidecar.close()  # kept: what it holds is all there is
            return
        if self.sidecar is not None:
            self.sidecar.close(remove=True)

    def _modules(self) -> dict[str, Any]:
        """The report's ``modules``: which code the tests imported (``plugin.modules``)."""
        recorder = self.config.pluginmanager.get_plugin(MODULES_PLUGIN)
        return recorder.records() if isinstance(recorder, ModulesRecorder) else {}

    def _keeps_earlier_report(self) -> bool:
        """Nothing recorded (--collect-only, a run stopped before it collected anything) and a
        report is there: it stays, never replaced by less. A run that recorded anything (a
        collection error, tests it never ran) writes its report, marked interrupted."""
        if self.results or self.claimed or not self.path.is_file():
            return False
        if self.sidecar is not None:
            self.sidecar.close(remove=True)
        self.kept = f"nothing recorded: kept the earlier report {self.path}"
        return True

    def _never_run(self) -> list[str]:
        """Collected tests with no result (a worker-restart limit, Ctrl-C, -x); none under
        --collect-only, where no test was meant to run."""
        if self.collect_only:
            return []
        done = self.results.nodeids
        return [nodeid for nodeid in self.collected if nodeid not in done]

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.unwritten:
            terminalreporter.write_line(f"rocm report: ERROR: {self.unwritten}", red=True)
            return
        if self.kept:
            terminalreporter.write_line(f"rocm report ({self.label}): {self.kept}")
            return
        summary = self.results.summary()
        counts = ", ".join(f"{v} {k}" for k, v in summary.items() if v and k != "total")
        terminalreporter.write_line(f"rocm report ({self.label}): {self.path} [{counts or 'no tests'}]")
        for line in mismatch_lines(self.modules):
            terminalreporter.write_line(line, yellow=True)
        used, probed = self.results.used_accelerator, self.results.probed
        if self.device and self.device != "cpu" and probed:
            line = f"rocm report: {used} of {probed} tests used the GPU ({self.device})"
            if not used:
                line += ": warning: none did, the suite chose its own device (CPU?); the column is not a GPU result"
            terminalreporter.write_line(line, yellow=not used)


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
