"""The rank processes of the distributed rows, with a hard timeout: a hang is killed, never waited on.

:class:`Ranks` starts one ``dist_worker.py`` process per rank (each in its own process group, so a
kill also takes anything it started); they join the process group once and then serve one task per
row. :meth:`Ranks.run` hands every rank the task and waits for their answers until ``watchdog_s``
(counted from the row's start, so it covers starting and joining too); ranks that have not
answered by then are killed, the whole group with them (a group with a dead rank is unusable), and
the next row starts a fresh one. The row ends at once as a ``timeout`` outcome
(:func:`fail_as_timeout`), without waiting for pytest-timeout.

Rendezvous is a ``file://`` path in a temporary folder: nothing listens on a network port.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

WORKER = Path(__file__).with_name("dist_worker.py")


@dataclass
class Result:
    answers: list[str | None]  # per rank: "done", "error ...", or None (no answer)
    seconds: float
    hung: list[int] = field(default_factory=list)  # ranks still running, silent, when the watchdog fired
    died: dict[int, str] = field(default_factory=dict)  # rank -> how it ended, with its stderr's tail
    watchdog_s: float = 0.0

    def ok(self) -> bool:
        return not self.hung and not self.died and all(a == "done" for a in self.answers)

    def describe(self) -> str:
        parts = []
        for rank, answer in enumerate(self.answers):
            if rank in self.hung:
                parts.append(f"rank {rank}: no answer after {self.watchdog_s:g} s, killed")
            elif rank in self.died:
                parts.append(f"rank {rank}: {self.died[rank]}")
            else:
                parts.append(f"rank {rank}: {answer}")
        return "; ".join(parts)


class Ranks:
    """``world`` worker processes joined in one process group over ``backend``."""

    def __init__(self, world: int, backend: str, pg_timeout: float, env: dict[str, str] | None = None) -> None:
        self.world, self.backend = world, backend
        self.folder = Path(tempfile.mkdtemp(prefix=f"rocm-dist-{backend}-"))
        child_env = {**os.environ, **(env or {})}
        child_env.setdefault("OMP_NUM_THREADS", "1")  # two ranks on a small machine: do not oversubscribe
        self.logs = [self.folder / f"rank{r}.stderr" for r in range(world)]
        self.procs: list[subprocess.Popen[str]] = []
        init = f"file://{self.folder / 'rendezvous'}"
        for rank in range(world):
            cmd = [
                sys.executable,
                str(WORKER),
                f"--rank={rank}",
                f"--world={world}",
                f"--backend={backend}",
                f"--init={init}",
                f"--pg-timeout={pg_timeout}",
            ]
            with open(self.logs[rank], "w", encoding="utf-8") as log:
                self.procs.append(
                    subprocess.Popen(
                        cmd,
                        env=child_env,
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                        stderr=log,
                        text=True,
                        bufsize=1,
                        start_new_session=True,
                    )
                )

    def alive(self) -> bool:
        return all(p.poll() is None for p in self.procs)

    def _tail(self, rank: int) -> str:
        text = self.logs[rank].read_text(encoding="utf-8", errors="replace")
        return " | ".join(line.strip() for line in text.strip().splitlines()[-3:])[:300] or "no output"

    def run(self, task: str, out: Path, deadline: float, watchdog_s: float, **opts: Any) -> Result:
        """Hand every rank the task; wait for all answers until ``deadline`` (time.monotonic())."""
        start = time.monotonic()
        answers: list[str | None] = [None] * self.world
        died: dict[int, str] = {}
        request = json.dumps({"task": task, "out": str(out), **opts}) + "\n"
        for proc in self.procs:
            try:
                assert proc.stdin is not None
                proc.stdin.write(request)
                proc.stdin.flush()
            except (BrokenPipeError, OSError):
                pass  # it died: seen below
        pending = {p.stdout.fileno(): r for r, p in enumerate(self.procs) if p.stdout is not None}
        while pending:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            ready, _, _ = select.select(list(pending), [], [], min(left, 0.5))
            for fd in ready:
                rank = pending.pop(fd)
                stdout = self.procs[rank].stdout
                line = stdout.readline() if stdout is not None else ""
                if line:
                    answers[rank] = line.strip()
                else:  # end of file: the rank died
                    rc = self.procs[rank].wait()
                    how = f"signal {signal.Signals(-rc).name}" if rc < 0 else f"exit {rc}"
                    died[rank] = f"died ({how}): {self._tail(rank)}"
        hung = sorted(pending.values())
        if hung or died:
            self.close(kill=True)
        return Result(answers, time.monotonic() - start, hung, died, watchdog_s)

    def close(self, kill: bool = False) -> None:
        if not kill and self.alive():
            for proc in self.procs:
                try:
                    assert proc.stdin is not None
                    proc.stdin.write(json.dumps({"task": "quit"}) + "\n")
                    proc.stdin.close()
                except (BrokenPipeError, OSError):
                    pass
            deadline = time.monotonic() + 20
            for proc in self.procs:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        shutil.rmtree(self.folder, ignore_errors=True)  # the rendezvous file and the ranks' logs


WATCHDOG_MESSAGE = "Timeout (>{seconds:g}s) from the distributed watchdog: {detail}"


def fail_as_timeout(started: float, detail: str) -> None:
    """End a row whose ranks hung (already killed) at once, with a ``timeout`` outcome.

    The report reads the watchdog's "Timeout (>Ns) from the distributed watchdog" as ``timeout``,
    as it reads pytest-timeout's own message: there is no need to wait for pytest-timeout to fire.
    """
    sys.stderr.write(f"distributed row hung: {detail}\n")
    pytest.fail(WATCHDOG_MESSAGE.format(seconds=round(time.monotonic() - started), detail=detail), pytrace=False)
