"""Report hooks: ``--rocm-report=FILE`` writes the compatibility report (see ``report``).

Thin: the hooks collect phase reports and hand them to pure functions in ``pytest_rocm.report.records``.
Under pytest-xdist only the controller writes; it receives every worker's reports (with their
user_properties) through ``pytest_runtest_logreport``, and xdist's report for a crashed worker.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from pytest_rocm.env.model import Environment
from pytest_rocm.plugin import session as state
from pytest_rocm.plugin.accelerator import AcceleratorProbe
from pytest_rocm.plugin.markcache import feature_of
from pytest_rocm.plugin.markspec import MarkerError
from pytest_rocm.report import collection, files
from pytest_rocm.report import records as report
from pytest_rocm.report.features import row_of


# -- bridges to the core plugin (options.py resolves precedence and publishes to config.option) ----
def setting(config: pytest.Config, name: str) -> Any:
    """An option's resolved value, else None."""
    return config.getoption(name, None) or None


def environment_of(config: pytest.Config) -> Environment:
    return state.get_environment(config)


def device_string_of(config: pytest.Config) -> str:
    return state.device_string(config)


def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def report_origin(config: pytest.Config, path: Path) -> str:
    """The report path named with where it came from (option, variable or ini file), for errors."""
    from pytest_rocm.plugin.options import named

    return named(state.get_state(config).settings.report_source or "--rocm-report", path)


# -- hooks ------------------------------------------------------------------------------------------
@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    path = setting(config, "rocm_report")
    if not path:
        return
    config.pluginmanager.register(FeatureTagger(), "rocm-report-features")
    config.pluginmanager.register(AcceleratorProbe(), "rocm-report-accelerator")
    if not is_worker(config):
        report_path = Path(path)
        where = report_origin(config, report_path)
        problem = files.unwritable(report_path)
        if problem:
            raise pytest.UsageError(f"{where}: cannot write ({problem})")
        writer = ReportWriter(config, report_path)
        try:  # before any test runs: a second run on this report path is refused, not interleaved
            writer.sidecar = files.Sidecar(files.sidecar_path(report_path))
        except files.UnsafeTarget as exc:
            raise pytest.UsageError(f"{where}: {exc}") from None
        config.pluginmanager.register(writer, "rocm-report-writer")
        # the report needs the environment, the tests perhaps never: detect on another core meanwhile
        state.prefetch(config)


class FeatureTagger:
    """Hands the ``rocm_feature`` marker's name, and a ``timeout`` marker's seconds, to the report
    through user_properties (works in xdist workers, whose reports carry them to the controller)."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            try:
                feature = feature_of(item)  # the parsed-marker cache: validated, parsed once
            except MarkerError:
                continue  # the core plugin's collection hook reports it and drops the test
            if feature:
                item.user_properties.append((report.FEATURE_PROPERTY, feature))
            seconds = _marker_timeout(item)
            if seconds:
                item.user_properties.append((report.TIMEOUT_PROPERTY, seconds))


def _marker_timeout(item: pytest.Item) -> float | None:
    """pytest-timeout's ``@pytest.mark.timeout(S)`` / ``timeout(timeout=S)`` on this test."""
    marker = item.get_closest_marker("timeout")
    if marker is None:
        return None
    value = marker.args[0] if marker.args else marker.kwargs.get("timeout")
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None  # pytest-timeout reports its own bad marker


class ReportWriter:
    """Gathers phase reports per test, appends each finished record to the sidecar, writes the JSON."""

    def __init__(self, config: pytest.Config, path: Path) -> None:
        self.config = config
        self.path = path
        self.pending: dict[str, list[Any]] = {}
        self.started: dict[str, float] = {}
        self.results: list[report.ResultRecord] = []
        self.sidecar: files.Sidecar | None = None
        self.label = ""
        self.created: str | None = None
        self.environment: dict[str, Any] = {}
        self.device: str | None = None
        self.scale: str | None = None
        #: whether environment, device, label and scale are known (_settle)
        self.settled = False
        self.timeout = _timeout_seconds(config)
        #: node ids collected (in-process or by the xdist workers), to list those never run
        self.collected: dict[str, None] = {}
        #: attempts that pytest-rerunfailures ran again, per test still to finish
        self.reruns: dict[str, int] = {}
        #: the node ids of collection errors already recorded (xdist sends one from each worker)
        self.collection_errors: set[str] = set()
        self.device_tokens = state.get_state(config).settings.device_ids
        #: whether an earlier run's report at the path was removed (at this run's first result)
        self.claimed = False
        #: why the earlier report was kept (the terminal summary says it), else ""
        self.kept = ""
        #: how the xdist worker of a crashed test ended (``killed by SIGSEGV (signal 11)``), per test
        self.deaths: dict[str, str] = {}

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.created = report.now_iso()
        self.label = setting(self.config, "rocm_label") or ""
        # A report left by an earlier run is removed at this run's first result (_claim): from then
        # on only the sidecar may speak. A run that records nothing (--collect-only, stopped before
        # any test) leaves it as it was: never replaced by less.
        if self.sidecar is None:
            self.sidecar = files.Sidecar(files.sidecar_path(self.path))
        if state.pending_detection(self.config) is None:
            self._settle(wait=True)  # known, or detected here now: the header line has it all
            self.sidecar.start({"created": self.created, **self._settled_fields()})
        else:  # detecting in a child (session.prefetch): its line follows when it is known
            self.sidecar.start({"created": self.created, **({"label": self.label} if self.label else {})})

    def _settle(self, wait: bool) -> bool:
        """Fill in the environment, device, label and scale once the environment is known; True if
        they were filled in now. ``wait=False`` never blocks: with a child detection still running
        it leaves them for later (the first result after the child exits, or a test that needs the
        environment, or at the latest the report's writing)."""
        if self.settled:
            return False
        pending = state.pending_detection(self.config)
        if not wait and pending is not None and not pending.done():
            return False
        env = environment_of(self.config)
        self.device = device_string_of(self.config)
        self.label = self.label or report.default_label(env, self.device)
        self.environment = report.jsonable(env.to_dict())
        from pytest_rocm.plugin.scale import get_scale  # a plugin module itself: imported once, by pytest

        self.scale = get_scale(self.config)
        self.settled = True
        return True

    def _settled_fields(self) -> dict[str, Any]:
        return {"label": self.label, "environment": self.environment, "device": self.device, "scale": self.scale}

    def _settle_sidecar(self, wait: bool) -> None:
        """Settle, and hand the fields to the sidecar as its environment line (a killed run keeps them)."""
        if self._settle(wait) and self.sidecar is not None:
            self.sidecar.append_environment(self._settled_fields())

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.collected.update(dict.fromkeys(item.nodeid for item in session.items))

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self.collected.update(dict.fromkeys(ids))

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        self.started[nodeid] = time.monotonic()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> None:
        """Serial runs only (an xdist controller runs no test itself; xdist names a dead worker's
        test): the test's name goes to the sidecar as it starts, so a crash of the whole process
        leaves its row (``report.load.from_sidecar``)."""
        if self.sidecar is not None:
            self.sidecar.append_running(item.nodeid, *self._row(item))

    def _row(self, item: pytest.Item) -> tuple[str, str]:
        try:
            marker = feature_of(item)  # the parsed-marker cache: no second parse
        except MarkerError:
            marker = None
        return row_of(item.nodeid, marker, self.device_tokens)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if str(report.when) == "???":  # xdist: the worker died running it; its exit status says how
            from pytest_rocm.plugin.xdist import worker_exit_status

            self.deaths[report.nodeid] = worker_exit_status(getattr(report, "node", None))
        self.pending.setdefault(report.nodeid, []).append(report)
        if report.when in ("teardown", "???"):
            if report.when == "teardown" and any(p.outcome == "rerun" for p in self.pending[report.nodeid]):
                # an attempt pytest-rerunfailures runs again: one test, one result (the last attempt's)
                del self.pending[report.nodeid]
                self.reruns[report.nodeid] = self.reruns.get(report.nodeid, 0) + 1
                return
            self._finish(report.nodeid)

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

    def _record(self, record: report.ResultRecord) -> None:
        self._claim()
        self._settle_sidecar(wait=False)
        self.results.append(record)
        if self.sidecar is not None:
            self.sidecar.append(record)

    def _finish(self, nodeid: str) -> None:
        phases = self.pending.pop(nodeid)
        start = self.started.pop(nodeid, None)
        elapsed = time.monotonic() - start if start is not None else None
        attempts = self.reruns.pop(nodeid, 0) + 1
        died = self.deaths.pop(nodeid, None)
        self._record(report.build_record(nodeid, phases, elapsed, self.timeout, self.device_tokens, attempts, died))

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
            self.results.extend(report.not_run_record(nodeid, why, self.device_tokens) for nodeid in never_run)
            extra["interrupted"] = True
            extra["interrupted_reason"] = why
        if self._keeps_earlier_report():
            return
        self._settle_sidecar(wait=True)  # the environment, at the latest now (a child may still run)
        extra.update(device=self.device, scale=self.scale)
        document = report.assemble(self.label, self.environment, self.results, self.created, **extra)
        files.write_json(self.path, document)
        if self.sidecar is not None:
            self.sidecar.close(remove=True)

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
        if self.config.getoption("collectonly", False):
            return []
        done = {record["nodeid"] for record in self.results}
        return [nodeid for nodeid in self.collected if nodeid not in done]

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.kept:
            terminalreporter.write_line(f"rocm report ({self.label}): {self.kept}")
            return
        summary = report.summarize(self.results)
        counts = ", ".join(f"{v} {k}" for k, v in summary.items() if v and k != "total")
        terminalreporter.write_line(f"rocm report ({self.label}): {self.path} [{counts or 'no tests'}]")
        flags = [r["accelerator"] for r in self.results if "accelerator" in r]
        if self.device and self.device != "cpu" and flags:
            line = f"rocm report: {sum(flags)} of {len(flags)} tests used the GPU ({self.device})"
            if not any(flags):
                line += ": warning: none did, the suite chose its own device (CPU?); the column is not a GPU result"
            terminalreporter.write_line(line, yellow=not any(flags))


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


def _timeout_seconds(config: pytest.Config) -> float | None:
    """pytest-timeout's global timeout (option or ini), to tell its kills from other crashes."""
    value = config.getoption("timeout", None)
    if value in (None, ""):
        try:
            value = config.getini("timeout")
        except (ValueError, KeyError):
            value = None
    try:
        seconds = float(value) if value not in (None, "") else 0.0
    except (TypeError, ValueError):
        return None
    return seconds or None
