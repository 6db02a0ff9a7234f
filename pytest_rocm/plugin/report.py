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
from pytest_rocm.plugin.markcache import feature_of
from pytest_rocm.plugin.markspec import MarkerError
from pytest_rocm.report import files
from pytest_rocm.report import records as report


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


# -- hooks ------------------------------------------------------------------------------------------
@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    path = setting(config, "rocm_report")
    if not path:
        return
    config.pluginmanager.register(FeatureTagger(), "rocm-report-features")
    if not is_worker(config):
        report_path = Path(path)
        problem = files.unwritable(report_path)
        if problem:
            raise pytest.UsageError(f"--rocm-report {report_path}: cannot write ({problem})")
        config.pluginmanager.register(ReportWriter(config, report_path), "rocm-report-writer")


class FeatureTagger:
    """Hands the ``feature`` marker's name, and a ``timeout`` marker's seconds, to the report
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
        self.environment: dict[str, Any] = {}
        self.scale: str | None = None
        self.timeout = _timeout_seconds(config)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        env = environment_of(self.config)
        device = device_string_of(self.config)
        self.label = setting(self.config, "rocm_label") or report.default_label(env, device)
        self.environment = report.jsonable(env.to_dict())
        self.created = report.now_iso()
        header = {"label": self.label, "created": self.created, "environment": self.environment, "device": device}
        from pytest_rocm.plugin.scale import get_scale  # a plugin module itself: imported once, by pytest

        header["scale"] = self.scale = get_scale(self.config)
        self.device = device
        # A report left by an earlier run would outlive this one if it is killed, and be read
        # (by a person, `rocm-compat run`, table or diff) as this run's: only the sidecar may speak.
        self.path.unlink(missing_ok=True)
        self.sidecar = files.Sidecar(files.sidecar_path(self.path), header)

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        self.started[nodeid] = time.monotonic()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.pending.setdefault(report.nodeid, []).append(report)
        if report.when in ("teardown", "???"):
            self._finish(report.nodeid)

    def _finish(self, nodeid: str) -> None:
        phases = self.pending.pop(nodeid)
        start = self.started.pop(nodeid, None)
        elapsed = time.monotonic() - start if start is not None else None
        record = report.build_record(nodeid, phases, elapsed, self.timeout)
        self.results.append(record)
        if self.sidecar is not None:
            self.sidecar.append(record)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        for nodeid in list(self.pending):  # interrupted mid-test (Ctrl-C, -x): keep what is known
            self._finish(nodeid)
        extra: dict[str, Any] = {"device": self.device, "scale": self.scale}
        if exitstatus == pytest.ExitCode.INTERRUPTED or session.shouldstop or session.shouldfail:
            extra["interrupted"] = True  # Ctrl-C, -x, --maxfail: the table marks the column partial
        document = report.assemble(self.label, self.environment, self.results, self.created, **extra)
        files.write_json(self.path, document)
        if self.sidecar is not None:
            self.sidecar.close(remove=True)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        summary = report.summarize(self.results)
        counts = ", ".join(f"{v} {k}" for k, v in summary.items() if v and k != "total")
        terminalreporter.write_line(f"rocm report ({self.label}): {self.path} [{counts or 'no tests'}]")


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
