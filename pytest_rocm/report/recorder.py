"""One run's report as it is recorded: the state the ``--rocm-report`` hooks share, without pytest.

The plugin's writer (``plugin/report``) forwards each hook here with plain values (a node id, the
phase's name and outcome, how an xdist worker died, a collection error's text), as pytest's
``LogXML`` forwards to its ``_NodeReporter``; what a test's record says is ``records.build_record``'s
business, from the phase reports kept here until the test ends. This holds what happens in between:

- the phases of each test until its teardown (or xdist's crash report) ends it;
- the attempts pytest-rerunfailures ran again (one test, one result: the last attempt's, counted);
- how the worker of a crashed test ended, and when each test started (under xdist);
- the tests collected, to list those never run when the run stops early;
- the sidecar: its header at the start, the environment once known, each record as it ends;
- the report at the path: claimed (removed) at the first result, kept when nothing was recorded,
  written at the end, and why it could not be (a full disk).

What only the running session knows (the environment, device and scale; what the run selected;
which modules it imported; why it stopped) comes in through callables, asked only when needed.

Why this module is long: it is one state machine (a test's attempts, its worker's death, the
sidecar and the report it ends in); split, one run's state would be spread across modules that
each change it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_rocm.report import collection, files, fleet, records
from pytest_rocm.report.encoded import EncodedResults
from pytest_rocm.report.features import DEFAULT_DEVICE_TOKENS


@dataclass(frozen=True)
class Settled:
    """What the session knows once its environment is detected (``Recorder``'s ``detect`` gives it)."""

    environment: dict[str, Any]  #: the environment, JSON-ready (``records.jsonable``)
    device: str | None
    scale: str | None
    default_label: str  #: the column's label when the run was given none (``records.default_label``)


#: ``detect(wait)``: the settled facts, or None when they cannot be known now without waiting
#: (``wait=False`` never imports torch nor starts a child; ``wait=True`` always answers)
Detect = Callable[[bool], "Settled | None"]


class Recorder:
    """Gathers phases per test, appends each finished record to the sidecar, writes the report.

    ``sidecar``: the claimed sidecar of ``path`` (``files.Sidecar``); ``timeout``: pytest-timeout's
    global timeout (to tell its kills from crashes); ``collect_only``: whether the run only collects
    (no test was meant to run); ``warn``: says a line to the user (the sidecar's full disk)."""

    def __init__(
        self,
        path: Path,
        sidecar: files.Sidecar,
        detect: Detect,
        warn: Callable[[str], None],
        *,
        label: str = "",
        host_label: str | None = None,
        device_tokens: tuple[str, ...] = DEFAULT_DEVICE_TOKENS,
        timeout: float | None = None,
        collect_only: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = path
        self.sidecar = sidecar
        self._detect = detect
        self._warn = warn
        self._clock = clock
        #: the column label: --rocm-label, else (once the environment is known) the default
        self.label = label
        self.host_label = host_label
        self.device_tokens = device_tokens
        self.timeout = timeout
        self.collect_only = collect_only
        self.created: str | None = None
        self.environment: dict[str, Any] = {}
        self.device: str | None = None
        self.scale: str | None = None
        self.machine: dict[str, Any] = {}
        #: whether environment, device, label, scale and machine are known (_settle)
        self.settled = False
        #: the results, each kept as its JSON line (encoded once: the sidecar's and the report's)
        self.results = EncodedResults()
        #: the phase reports of each test still running (the last attempt's)
        self.pending: dict[str, list[Any]] = {}
        #: the tests whose current attempt pytest-rerunfailures will run again
        self.rerunning: set[str] = set()
        #: attempts run again so far, per test still to finish
        self.reruns: dict[str, int] = {}
        #: a crashed attempt pytest-rerunfailures runs again on the replacement worker: its phases,
        #: the test's record only if no later attempt comes (the run ended first)
        self.crashed_attempts: dict[str, list[Any]] = {}
        #: how the xdist worker of a crashed test ended (``killed by SIGSEGV (signal 11)``), per test
        self.deaths: dict[str, str] = {}
        #: when each test started, by ``clock`` (told under pytest-xdist only: ``started``)
        self.starts: dict[str, float] = {}
        #: node ids collected (in-process or by the xdist workers), to list those never run
        self.collected: dict[str, None] = {}
        #: the node ids of collection errors already recorded (xdist sends one from each worker)
        self.collection_errors: set[str] = set()
        #: whether an earlier run's report at the path was removed (at this run's first result)
        self.claimed = False
        #: the report's ``modules`` once written (the summary warns of a project package imported elsewhere)
        self.modules: dict[str, Any] = {}
        #: why the earlier report was kept (the summary says it), else ""
        self.kept = ""
        #: whether the sidecar's failure (a full disk) was said; why the final report was not written
        self.sidecar_warned = False
        self.unwritten = ""

    # -- the run's start ----------------------------------------------------------------------------
    def start(self, selection: Mapping[str, Any]) -> None:
        """The session starts: the sidecar's header. A report left by an earlier run is removed at
        this run's first result (``_claim``): from then on only the sidecar may speak. A run that
        records nothing (--collect-only, stopped before any test) leaves it as it was: never
        replaced by less."""
        self.created = records.now_iso()
        tool = {"tool": fleet.tool_record()}  # which pytest-rocm wrote the report (a fleet's merge notes it)
        if self._settle(wait=False):  # known, or harmless to detect now: the header line has it all
            self.sidecar.start({"created": self.created, **tool, **self._settled_fields(), "selection": selection})
        else:  # detected once torch is imported, or at the end: its line follows when it is known
            label = {"label": self.label} if self.label else {}
            self.sidecar.start({"created": self.created, **tool, **label, "selection": selection})

    def _settle(self, wait: bool) -> bool:
        """Fill in the environment, device, label, scale and machine once known; True if filled in now
        (``wait=False``: only where ``detect`` finds it harmless now, else left for later: the first
        result after that, at the latest the report's writing)."""
        if self.settled:
            return False
        found = self._detect(wait)
        if found is None:
            return False
        self.device = found.device
        self.label = self.label or found.default_label
        self.environment = found.environment
        self.machine = fleet.machine_record(self.environment, self.host_label)
        self.scale = found.scale
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
        if self._settle(wait):
            self.sidecar.append_environment(self._settled_fields())

    # -- collection ---------------------------------------------------------------------------------
    def collection_finished(self, nodeids: list[str], marked: Mapping[str, str]) -> None:
        """This process collected ``nodeids`` (none on an xdist controller); ``marked``: node id ->
        its ``rocm_feature`` marker's name. A serial run's order goes to the sidecar once: a crash of
        the whole process is then named by the loader as the first of them without a result."""
        self.collected.update(dict.fromkeys(nodeids))
        self._settle_sidecar(wait=False)  # the test modules imported torch: known before the first test
        if nodeids:
            self.sidecar.append_collected(nodeids, marked, self.device_tokens)

    def worker_collected(self, nodeids: Iterable[str]) -> None:
        """An xdist worker collected ``nodeids`` (the controller runs none itself)."""
        self.collected.update(dict.fromkeys(nodeids))

    def collection_error(self, nodeid: str, text: str) -> None:
        """A module that failed to collect is a row, outcome ``error`` (once: xdist sends one from
        each worker); ``text``: pytest's error text (its last ``E`` line is the reason)."""
        if nodeid in self.collection_errors:
            return
        self.collection_errors.add(nodeid)
        self._record(collection.collection_record(nodeid, text, self.device_tokens))

    # -- the tests ----------------------------------------------------------------------------------
    def started(self, nodeid: str) -> None:
        """A test started (told under xdist only: how long a crashed test ran tells a timeout)."""
        self.starts[nodeid] = self._clock()

    def phase(self, nodeid: str, when: str, outcome: str, report: Any, died: str | None = None) -> None:
        """One phase of a test ended: ``when`` is ``setup``/``call``/``teardown``, or ``???`` for
        xdist's report of a worker that died running it (``died``: how its process ended).
        ``report``: the phase report ``records.build_record`` reads, kept until the test ends."""
        if self.crashed_attempts and self.crashed_attempts.pop(nodeid, None) is not None:
            self.deaths.pop(nodeid, None)  # the next attempt began: its own ending decides
        if when == "???" and died:
            self.deaths[nodeid] = died
        phases = self.pending.get(nodeid)
        if phases is None:
            phases = self.pending[nodeid] = []
        phases.append(report)
        if outcome == "rerun":
            self.rerunning.add(nodeid)
        if when == "teardown":
            if self.rerunning and nodeid in self.rerunning:
                # an attempt pytest-rerunfailures runs again: one test, one result (the last attempt's)
                self.rerunning.discard(nodeid)
                del self.pending[nodeid]
                self.reruns[nodeid] = self.reruns.get(nodeid, 0) + 1
                return
            self._finish(nodeid)
        elif when == "???" and outcome == "rerun":
            # xdist's report of a dead worker that pytest-rerunfailures runs again: one test, and
            # the last attempt's result, as for any rerun (kept in case the run ends first)
            self.rerunning.discard(nodeid)
            self.crashed_attempts[nodeid] = self.pending.pop(nodeid)
            self.reruns[nodeid] = self.reruns.get(nodeid, 0) + 1
        elif when == "???":
            self._finish(nodeid)

    def _finish(self, nodeid: str) -> None:
        phases = self.pending.pop(nodeid)
        if self.rerunning:  # a crash or the run's end during an attempt that was to run again
            self.rerunning.discard(nodeid)
        start = self.starts.pop(nodeid, None) if self.starts else None
        elapsed = self._clock() - start if start is not None else None
        attempts = self.reruns.pop(nodeid, 0) + 1 if self.reruns else 1
        died = self.deaths.pop(nodeid, None) if self.deaths else None
        self._record(records.build_record(nodeid, phases, elapsed, self.timeout, self.device_tokens, attempts, died))

    def _record(self, record: records.ResultRecord) -> None:
        # once per test: the checks inline, the calls only when there is something to do
        if not self.claimed:
            self.claimed = True
            files.remove_if_regular(self.path)
        if not self.settled:
            self._settle_sidecar(wait=False)
        line = self.results.add(record)
        self.sidecar.append_line(line)
        if self.sidecar.problem is not None:
            self._warn_sidecar()

    def _warn_sidecar(self) -> None:
        """Once: the sidecar stopped (a full disk); the run goes on, the results are in memory."""
        if self.sidecar.problem is None or self.sidecar_warned:
            return
        self.sidecar_warned = True
        self._warn(
            f"rocm report: warning: cannot write the sidecar ({self.sidecar.problem}); the tests go on,"
            f" their results are kept in memory for {self.path}"
        )

    # -- the run's end ------------------------------------------------------------------------------
    def finish(
        self,
        stopped: bool,
        why_stopped: Callable[[], str],
        selection: Callable[[], Mapping[str, Any]],
        modules: Callable[[], dict[str, Any]],
    ) -> bool:
        """The session ends: write the report; False when it could not be written (``unwritten``
        says why, and the sidecar stays with every result). ``stopped``: Ctrl-C, -x or --maxfail
        ended it (the table marks the column partial); ``why_stopped``: why collected tests got no
        result; ``selection`` and ``modules``: the report's fields of those names."""
        for nodeid in list(self.pending):  # interrupted mid-test (Ctrl-C, -x): keep what is known
            self._finish(nodeid)
        for nodeid, phases in self.crashed_attempts.items():  # run again never came: the crash it was
            self.pending[nodeid] = phases
            self.reruns[nodeid] -= 1
            self._finish(nodeid)
        self.crashed_attempts.clear()
        extra: dict[str, Any] = {}
        if stopped:
            extra["interrupted"] = True
        never_run = self.never_run()
        if never_run:
            why = why_stopped()
            for nodeid in never_run:
                self.results.add(records.not_run_record(nodeid, why, self.device_tokens))
            extra["interrupted"] = True
            extra["interrupted_reason"] = why
        if self._keeps_earlier_report():
            return True
        self._settle_sidecar(wait=True)  # the environment, at the latest now
        extra.update(device=self.device, scale=self.scale, machine=self.machine, tool=fleet.tool_record())
        extra["selection"] = selection()
        extra["modules"] = self.modules = modules()
        document = records.assemble(self.label, self.environment, [], self.created, self.results.summary(), **extra)
        self._warn_sidecar()
        try:  # a full disk may have room again by now: tried twice
            files.write_json(self.path, document, attempts=2, lines=self.results.lines)
        except OSError as exc:
            kept = "" if self.sidecar.problem else f"; {self.sidecar.path} has them all"
            self.unwritten = (
                f"cannot write {self.path} ({exc.strerror or exc}): {len(self.results)} results not saved{kept}"
            )
            self.sidecar.append_finished()  # ended in order: the tests without a result never ran
            self.sidecar.close()  # kept: what it holds is all there is
            return False
        self.sidecar.close(remove=True)
        return True

    def _keeps_earlier_report(self) -> bool:
        """Nothing recorded (--collect-only, a run stopped before it collected anything) and a
        report is there: it stays, never replaced by less. A run that recorded anything (a
        collection error, tests it never ran) writes its report, marked interrupted."""
        if self.results or self.claimed or not self.path.is_file():
            return False
        self.sidecar.close(remove=True)
        self.kept = f"nothing recorded: kept the earlier report {self.path}"
        return True

    def never_run(self) -> list[str]:
        """Collected tests with no result (a worker-restart limit, Ctrl-C, -x); none under
        --collect-only, where no test was meant to run."""
        if self.collect_only:
            return []
        done = self.results.nodeids
        return [nodeid for nodeid in self.collected if nodeid not in done]

    def summary_lines(self, warnings: Iterable[str] = ()) -> list[tuple[str, str | None]]:
        """The terminal summary's lines of the report, each with its colour (``red``, ``yellow``, None);
        ``warnings`` (the modules the tests imported from elsewhere) follow the first, in yellow."""
        if self.unwritten:
            return [(f"rocm report: ERROR: {self.unwritten}", "red")]
        if self.kept:
            return [(f"rocm report ({self.label}): {self.kept}", None)]
        summary = self.results.summary()
        counts = ", ".join(f"{v} {k}" for k, v in summary.items() if v and k != "total")
        lines: list[tuple[str, str | None]] = [
            (f"rocm report ({self.label}): {self.path} [{counts or 'no tests'}]", None)
        ]
        lines.extend((line, "yellow") for line in warnings)
        used, probed = self.results.used_accelerator, self.results.probed
        if self.device and self.device != "cpu" and probed:
            line = f"rocm report: {used} of {probed} tests used the GPU ({self.device})"
            if not used:
                line += ": warning: none did, the suite chose its own device (CPU?); the column is not a GPU result"
            lines.append((line, None if used else "yellow"))
        return lines
