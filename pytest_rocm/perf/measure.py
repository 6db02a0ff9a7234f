"""Timing a callable properly (torch): warm-up, device synchronisation, repetitions in a budget.

``measure(fn, *args, work={"flops": 2*m*n*k})`` runs ``fn(*args)`` ``warmup`` times (kernel
selection, caches, TunableOp tuning, lazy initialisation), calibrates how many calls make one
sample, then times samples until ``reps`` or the budget. On a GPU each sample is bracketed by
CUDA/HIP events on the current stream and the device is synchronised once per round of samples
(events time the device's work, not the launch); on the CPU by ``time.perf_counter``.

- Calibration, as ``torch.utils.benchmark.Timer.blocked_autorange`` and pytest-benchmark do: blocks
  of 1, then more calls are timed three at a time, and the median block sets how many calls fill
  ``min_sample_s``. One slow call (a page fault, another process taking the core) no longer decides
  it: with one timed call, a 5 us matmul caught in a 7 ms stall was timed one call per sample.
- ``budget_s`` bounds the whole measurement: the warm-up stops early once it has used a quarter of
  it, and sampling stops when it is spent (at least one sample is always taken). A row that could
  not reach ``min_reps`` in its budget says so: ``truncated: "budget"``.
- Leading samples more than twice the median of the rest are warm-up left-overs: dropped and counted
  (``discarded``); the spread is the interquartile range of what is kept.
- ``run_queue_share``: the seconds this process's threads waited for a core (Linux's run-queue
  time, ``/proc/self/task/*/schedstat``) per second of timing. At ``stats.BUSY_SHARE`` (0.5) or
  more, other processes had the cores and the figure measured them (every sample alike: the spread
  stays small); the table and the gate say so. A call that sleeps or waits for a device does not
  count: only time spent runnable and not running does.

The result is a ``stats.PerfRecord`` with the device's peak fraction when ``data/peaks.json`` knows
the device.
"""

from __future__ import annotations

import functools
import math
import os
import statistics
import time
from collections.abc import Callable, Mapping
from typing import Any

import torch

from pytest_rocm.perf import peaks
from pytest_rocm.perf.stats import PerfRecord, build_perf_record, check_work


def device_of(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> torch.device:
    """The device of the first tensor among the arguments; the CPU when there is none."""
    for value in (*args, *kwargs.values()):
        if isinstance(value, torch.Tensor):
            return value.device
    return torch.device("cpu")


def arch_and_name(device: torch.device) -> tuple[str | None, str | None]:
    """(``gfx942`` / ``sm_90``, the device's name) of a GPU device; (None, None) on the CPU."""
    if device.type != "cuda":
        return None, None
    props = torch.cuda.get_device_properties(device)
    gcn = getattr(props, "gcnArchName", None)
    if torch.version.hip and gcn:
        return str(gcn).split(":", 1)[0], str(props.name)
    return f"sm_{props.major}{props.minor}", str(props.name)


#: where Linux keeps each thread's scheduler statistics: "<on cpu ns> <waiting on a run queue ns> <slices>"
_TASKS = "/proc/self/task"


def run_queue_wait_s() -> float | None:
    """Seconds this process's threads have waited on a run queue (runnable, no core free), summed;
    None where the kernel does not say (not Linux, schedstats off)."""
    total = 0
    try:
        tasks = os.listdir(_TASKS)
    except OSError:
        return None
    for task in tasks:
        try:
            with open(f"{_TASKS}/{task}/schedstat", "rb") as handle:
                total += int(handle.read().split()[1])
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended meanwhile; a kernel without the field
    return total / 1e9


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _event() -> Any:
    return torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]


def _time_samples(
    call: Callable[[], Any], device: torch.device, samples: int, inner: int, deadline: float | None = None
) -> list[float]:
    """Seconds per call of ``samples`` samples of ``inner`` calls each. On the CPU, with a
    ``deadline``, the clock is read a few times inside a sample: calls that turn slow after the
    calibration (another process took the core: a 20 us GEMM took 25 ms) cut the sample short at
    the deadline, and it is the last (a sample of 100 such calls took 2.5 s of a 0.3 s budget)."""
    if device.type == "cuda":
        with torch.cuda.device(device):
            events = [(_event(), _event()) for _ in range(samples)]
            for start, end in events:
                start.record()
                for _ in range(inner):
                    call()
                end.record()
            torch.cuda.synchronize(device)
            return [start.elapsed_time(end) / 1e3 / inner for start, end in events]
    times = []
    step = inner // _CHECKS if deadline is not None and inner >= _CHECKS else inner
    for _ in range(samples):
        begin = time.perf_counter()
        done = 0
        while done < inner:
            for _ in range(min(step, inner - done)):
                call()
            done += min(step, inner - done)
            if deadline is not None and done < inner and time.perf_counter() >= deadline:
                break
        times.append((time.perf_counter() - begin) / done)
        if done < inner:  # the budget ran out inside this sample: it is the last
            break
    return times


#: calibration: at most this many rounds of three blocks, each block up to this many times longer
_CALIBRATION_ROUNDS = 12
_GROWTH = 100
#: the share of the budget the warm-up may use before it stops early (after at least one call)
_WARMUP_SHARE = 0.25
#: samples timed between two looks at the clock (and, on a GPU, two synchronisations), at most;
#: the first rounds are smaller (1, 2, 4...), so calls that turned slow are seen before a full round
_ROUND = 8
#: how many times the clock is read inside one CPU sample (with a deadline): 64 reads of ~0.1 us
#: in a 2 ms sample are 0.3 % of it
_CHECKS = 64


def _calibrate(
    call: Callable[[], Any], where: torch.device, min_sample_s: float, deadline: float, estimate: float | None
) -> tuple[int, float, list[float]]:
    """(calls per sample, seconds per call, the last round's blocks): the median of three blocks at
    each size, the block grown until it lasts ``min_sample_s`` (or the budget ends). The blocks of
    the round that settled it are samples already: the caller keeps them. ``estimate``: seconds per
    call seen in the warm-up (None: none ran). Where three blocks might not fit in what is left of
    the budget they are timed one at a time, the clock read between them: a call longer than the
    whole budget is timed once, not three times."""
    inner = 1
    per_call = estimate
    for _ in range(_CALIBRATION_ROUNDS):
        if per_call is not None and 3 * per_call * inner <= deadline - time.perf_counter():
            blocks = _time_samples(call, where, 3, inner, deadline)
        else:
            blocks = []
            while len(blocks) < 3 and not (blocks and time.perf_counter() >= deadline):
                blocks += _time_samples(call, where, 1, inner, deadline)
        per_call = max(statistics.median(blocks), 1e-9)
        if per_call * inner >= min_sample_s or time.perf_counter() >= deadline:
            return inner, per_call, blocks
        wanted = math.ceil(min_sample_s / per_call)
        inner = max(inner + 1, min(wanted, inner * _GROWTH))
    return inner, max(per_call or 0.0, 1e-9), []


def _sample(
    call: Callable[[], Any],
    where: torch.device,
    inner: int,
    per_sample: float,
    reps: int,
    deadline: float,
    times: list[float],
) -> list[float]:
    """``times`` and more samples (seconds per call), in rounds, until ``reps`` or the deadline
    (at least one sample in all)."""
    calibrated, size = per_sample, 1
    while len(times) < reps:
        left = deadline - time.perf_counter()
        if left <= 0 and times:
            break
        fit = max(1, int(left // per_sample)) if left > 0 else 1
        batch = _time_samples(call, where, min(reps - len(times), fit, size), inner, deadline)
        times.extend(batch)
        # what a sample takes now, never less than calibrated: slow calls shrink the next round
        per_sample = max(calibrated, statistics.median(batch) * inner)
        size = min(2 * size, _ROUND)
    return times[:reps]


def _drop_warm_leaders(times: list[float], keep: int) -> tuple[list[float], int]:
    """Drop leading samples above twice the median of the rest (warm-up left-overs), keeping ``keep``."""
    dropped = 0
    while len(times) - dropped > max(keep, 2) and times[dropped] > 2 * statistics.median(times[dropped + 1 :]):
        dropped += 1
    return times[dropped:], dropped


def measure(
    fn: Callable[..., Any],
    *args: Any,
    work: Mapping[str, float] | None = None,
    warmup: int = 3,
    reps: int = 30,
    min_reps: int = 5,
    budget_s: float = 1.0,
    min_sample_s: float = 1e-3,
    name: str | None = None,
    dtype: str | None = None,
    backend: Mapping[str, Any] | None = None,
    device: torch.device | str | None = None,
    **kwargs: Any,
) -> PerfRecord:
    """Time ``fn(*args, **kwargs)`` and return its perf record (module docstring).

    ``work``: what one call does, ``{"flops": N}`` or ``{"bytes": N}`` (throughput in GFLOP/s or
    GB/s); ``dtype``: the dtype the peak is looked up for (``bfloat16``...); ``backend``: facts
    recorded next to the figure (``perf.backend.blas_facts``...)."""
    checked = check_work(work)
    if warmup < 0 or min_reps < 1 or reps < min_reps or not budget_s > 0:
        raise ValueError(
            f"need warmup >= 0, 1 <= min_reps <= reps and budget_s > 0, got {warmup}, {min_reps}, {reps}, {budget_s}"
        )
    where = torch.device(device) if device is not None else device_of(args, kwargs)

    # a C-level partial, not a Python closure: a closure's frame per call was ~3 % of a 4 us GEMM
    # that Timer.blocked_autorange (a compiled timeit loop) does not pay
    call: Callable[[], Any] = functools.partial(fn, *args, **kwargs)

    start = time.perf_counter()
    deadline = start + budget_s
    warmed = 0
    for i in range(warmup):
        call()
        warmed += 1
        if i == 0 or (i + 1) % 4 == 0:
            _sync(where)
            if time.perf_counter() - start > budget_s * _WARMUP_SHARE:
                break
    _sync(where)
    estimate = (time.perf_counter() - start) / warmed if warmed else None
    waited_from, timed_from = run_queue_wait_s(), time.perf_counter()
    inner, per_call, settled = _calibrate(call, where, min_sample_s, deadline, estimate)
    times = _sample(call, where, inner, per_call * inner, reps, deadline, settled)
    timed, waited_to = time.perf_counter() - timed_from, run_queue_wait_s()
    truncated = len(times) < min_reps
    times, discarded = _drop_warm_leaders(times, min_reps)
    arch, device_name = arch_and_name(where)
    kind = next(iter(checked), None)
    peak = peaks.peak_of(arch, device_name, kind, dtype) if arch and kind else None
    label = f"{where} ({arch}, {device_name})" if arch else str(where)
    record = build_perf_record(times, checked, peak=peak, name=name, dtype=dtype, device=label, backend=backend)
    if discarded:
        record["discarded"] = discarded
    if truncated:
        record["truncated"] = "budget"
    if waited_from is not None and waited_to is not None and timed > 0:
        record["run_queue_share"] = round(max(0.0, waited_to - waited_from) / timed, 3)
    return record
