"""The distributed suite judged from outside: gloo rows run and pass on the CPU, a collective that
returns wrong numbers fails its row, and ranks that hang become a ``timeout`` row (the ranks are
killed, the run goes on, and the next row starts a fresh process group).

The suite runs in-process through pytester from its real location; the ranks are real processes,
broken on purpose through ``PYTEST_ROCM_DIST_PRELOAD`` (a module every rank imports first).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")
# imported here, before any in-process run: pytester drops the modules a run imported, and a second
# import of torch.distributed or of triton (which the optimizer's torch._dynamo pulls in) in one
# process aborts it
import torch._dynamo
import torch.distributed  # noqa: F401
from suite_runs import run_suite

SUITE = Path(__file__).resolve().parents[2] / "suites" / "distributed"
ROW = re.compile(r"^distributed/[a-z_-]+\[(gloo|nccl|cuda)\]$")

#: all_reduce that adds 1 on rank 1: wrong numbers, no error
WRONG_ALL_REDUCE = """
import torch.distributed as dist

real = dist.all_reduce


def all_reduce(tensor, *args, **kwargs):
    work = real(tensor, *args, **kwargs)
    if dist.get_rank() == 1:
        tensor.add_(1)
    return work


dist.all_reduce = all_reduce
"""

#: broadcast in which rank 1 never arrives: rank 0 waits forever (a hang, as in an RCCL deadlock)
HANGING_BROADCAST = """
import time

import torch.distributed as dist

real = dist.broadcast


def broadcast(tensor, *args, **kwargs):
    if dist.get_rank() == 1:
        time.sleep(3600)
    return real(tensor, *args, **kwargs)


dist.broadcast = broadcast
"""


def _run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, preload: str | None, *args: str) -> dict:
    if preload is not None:  # a module every rank imports first (the ranks are other processes)
        pytester.makepyfile(rank_breakage=preload)
        monkeypatch.setenv("PYTHONPATH", str(pytester.path))
        monkeypatch.setenv("PYTEST_ROCM_DIST_PRELOAD", "rank_breakage")
    return run_suite(pytester, SUITE, *args)


def test_gloo_rows_pass_on_the_cpu_and_gpu_rows_say_why_they_skip(pytester, monkeypatch) -> None:
    rows = _run(pytester, monkeypatch, None)
    assert all(ROW.match(r) for r in rows), list(rows)
    outcomes = {r: rec["outcome"] for r, rec in rows.items()}
    assert outcomes == {
        "distributed/all_reduce[gloo]": "passed",
        "distributed/all_gather[gloo]": "passed",
        "distributed/broadcast[gloo]": "passed",
        "distributed/ddp-step[gloo]": "passed",
        "distributed/all_reduce[nccl]": "skipped",
        "distributed/all_gather[nccl]": "skipped",
        "distributed/broadcast[nccl]": "skipped",
        "distributed/ddp-step[nccl]": "skipped",
        "distributed/peer-copy[cuda]": "skipped",
    }
    assert "needs 2 GPUs" in rows["distributed/all_reduce[nccl]"]["reason"]
    assert "peer copies need 2 GPUs" in rows["distributed/peer-copy[cuda]"]["reason"]
    ddp = rows["distributed/ddp-step[gloo]"]["parity"]
    assert ddp and all(p["ok"] for p in ddp) and max(p["normwise"] for p in ddp) < 1e-5


def test_a_collective_with_wrong_numbers_fails_its_row(pytester, monkeypatch) -> None:
    rows = _run(pytester, monkeypatch, WRONG_ALL_REDUCE, "-k", "gloo")
    assert {r: rec["outcome"] for r, rec in rows.items()} == {
        "distributed/all_reduce[gloo]": "failed",
        "distributed/all_gather[gloo]": "passed",
        "distributed/broadcast[gloo]": "passed",
        "distributed/ddp-step[gloo]": "passed",  # DDP reduces through the C++ reducer, not dist.all_reduce
    }
    assert "rank1.out: normwise error" in rows["distributed/all_reduce[gloo]"]["reason"]


@pytest.mark.slow
@pytest.mark.parametrize("with_pytest_timeout", [True, False], ids=["pytest-timeout", "watchdog-only"])
def test_hanging_ranks_become_a_timeout_row_and_the_run_goes_on(pytester, monkeypatch, with_pytest_timeout) -> None:
    # the row's limit: 30 s, the watchdog fires at 24 s from the row's start (before pytest-timeout
    # would); the next row's fresh group must start, join and pass within its own 30 s, which a
    # loaded machine needs (two ranks importing torch)
    monkeypatch.setenv("PYTEST_ROCM_DIST_TIMEOUT", "30")
    extra = () if with_pytest_timeout else ("-p", "no:timeout")
    start = time.monotonic()
    rows = _run(pytester, monkeypatch, HANGING_BROADCAST, "-k", "gloo and (broadcast or ddp)", *extra)
    elapsed = time.monotonic() - start
    hung = rows["distributed/broadcast[gloo]"]
    # with or without pytest-timeout, the watchdog ends the row at once with its own message, which
    # the report reads as a timeout: the row does not wait for the 30 s marker
    assert hung["outcome"] == "timeout", hung
    assert "Timeout (>24s) from the distributed watchdog" in hung["reason"], hung
    assert hung["duration"] < 30, hung
    assert "rank 1: no answer after 24 s, killed" in hung["info"]["ranks"]["answers"]
    # the next row gets a fresh process group and passes
    assert rows["distributed/ddp-step[gloo]"]["outcome"] == "passed"
    # nothing waited for the hung group's own timeout (the watchdog's 24 s + 60)
    assert elapsed < 84, elapsed
