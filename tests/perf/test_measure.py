"""perf.measure on the CPU: warm-up, repetitions within the budget, the inner loop for fast calls.

No test depends on this machine's absolute speed: the timed callable sleeps (a floor the timer must
see) or its calls are counted.
"""

from __future__ import annotations

import time

import pytest
import torch

from pytest_rocm.perf.measure import device_of, measure

# asserts on what timers measured: a loaded machine moves the figures
pytestmark = pytest.mark.timing


def test_a_sleeping_call_is_timed_at_least_its_sleep() -> None:
    record = measure(time.sleep, 0.005, warmup=1, min_reps=3, reps=5, budget_s=0.5, work={"bytes": 5e6})
    assert 3 <= record["reps"] <= 5
    assert record["min_s"] >= 0.005  # a timer that measured nothing (or the launch only) fails here
    assert record["median_s"] < 0.5
    assert record["throughput"] == pytest.approx(5e6 / record["median_s"] / 1e9)
    assert record["unit"] == "GB/s" and record["device"] == "cpu" and record["peak_fraction"] is None


def test_warmup_and_repetitions_are_counted_calls() -> None:
    calls = []
    record = measure(lambda: calls.append(1), warmup=4, min_reps=3, reps=6, budget_s=10.0, min_sample_s=0.0)
    # 4 warm-up calls, 3 calibrating blocks of one call (kept as the first samples), 3 more samples
    assert record["reps"] + record.get("discarded", 0) == 6 and len(calls) == 4 + 6


def test_fast_calls_are_repeated_inside_one_sample() -> None:
    calls = []
    record = measure(lambda: calls.append(1), warmup=0, min_reps=3, reps=3, budget_s=1.0, min_sample_s=0.002)
    assert record["reps"] == 3 and len(calls) > 1 + 3 * 10  # each sample ran many calls
    assert record["median_s"] < 0.002  # seconds per call, not per sample


def test_budget_caps_the_repetitions() -> None:
    record = measure(time.sleep, 0.01, warmup=0, min_reps=2, reps=100, budget_s=0.1)
    assert 2 <= record["reps"] <= 12 and "truncated" not in record


def test_the_budget_bounds_the_whole_measurement_and_a_short_row_says_so() -> None:
    """0.15 s once took 1.4 s: warm-up and repetitions ignored it. Now a slow call gets the samples
    that fit (the calibrating blocks included) and the record says it stopped at its budget."""
    begin = time.perf_counter()
    record = measure(time.sleep, 0.05, warmup=5, min_reps=10, reps=100, budget_s=0.15)
    elapsed = time.perf_counter() - begin
    assert elapsed < 0.15 + 3 * 0.05 + 0.1, elapsed  # the budget, the calibrating round, slack for a loaded machine
    assert record["truncated"] == "budget" and record["reps"] < 10 and record["min_s"] >= 0.05


def test_a_call_longer_than_the_whole_budget_is_timed_once_after_its_warm_up() -> None:
    """The calibrating round timed three blocks whatever the budget: a 0.2 s call under a 0.05 s
    budget took four calls (0.8 s); now one warm-up call, one sample, and the row says so."""
    calls: list[int] = []

    def slow() -> None:
        calls.append(1)
        time.sleep(0.2)

    record = measure(slow, warmup=3, min_reps=3, reps=10, budget_s=0.05)
    assert len(calls) == 2 and record["reps"] == 1 and record["truncated"] == "budget"
    assert record["min_s"] >= 0.2


def test_calls_that_turn_slow_after_the_calibration_stop_at_the_budget() -> None:
    """Calibrated on fast calls, a sample holds thousands of them; when they turn slow (another
    process took the core: a 20 us GEMM took 25 ms on a loaded machine) a round of such samples
    ran for seconds past a 0.3 s budget (7.6 s once). The clock is read inside a sample now."""
    begin = time.perf_counter()

    def fast_then_slow() -> None:
        if time.perf_counter() - begin > 0.1:
            time.sleep(0.001)

    record = measure(fast_then_slow, warmup=1, min_reps=5, reps=25, budget_s=0.3, min_sample_s=0.002)
    elapsed = time.perf_counter() - begin
    assert elapsed < 0.3 + 0.6, elapsed  # the budget, and slack for a loaded machine (was 16 s and more)
    assert record["reps"] >= 1 and record["median_s"] > 0


def test_the_time_its_threads_waited_for_a_core_is_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Linux's run-queue time of the process's threads while the row was timed, per second of
    timing: here faked to 3 s of waiting, then read from this machine for a call that sleeps
    (sleeping is not waiting for a core)."""
    from pytest_rocm.perf import measure as module

    readings = iter([10.0, 13.0])
    monkeypatch.setattr(module, "run_queue_wait_s", lambda: next(readings))
    record = measure(time.sleep, 0.01, warmup=0, min_reps=3, reps=3, budget_s=5.0)
    timed = record["median_s"] * 3  # about the time the three samples took
    assert record["run_queue_share"] == pytest.approx(3.0 / timed, rel=0.5) and record["run_queue_share"] > 1
    monkeypatch.undo()
    assert module.run_queue_wait_s() is not None  # Linux with schedstats, as this machine
    sleeping = measure(time.sleep, 0.02, warmup=0, min_reps=3, reps=3, budget_s=5.0)
    assert 0 <= sleeping["run_queue_share"] < 0.5
    monkeypatch.setattr(module, "run_queue_wait_s", lambda: None)  # a kernel that does not say
    assert "run_queue_share" not in measure(time.sleep, 0.001, warmup=0, min_reps=1, reps=1)


def test_one_stalled_call_does_not_decide_the_calls_per_sample() -> None:
    """A 5 us call caught once in a stall was timed one call per sample (the estimate came from that
    one call); the median of three blocks sizes the sample instead."""
    calls: list[int] = []

    def fast_but_stalled_once() -> None:
        calls.append(1)
        if len(calls) == 2:  # the first call after the warm-up
            time.sleep(0.02)

    record = measure(fast_but_stalled_once, warmup=1, min_reps=3, reps=5, budget_s=2.0, min_sample_s=0.001)
    assert len(calls) > 1 + 3 + 5 * 10, len(calls)  # many calls per sample
    assert record["median_s"] < 0.001


def test_warm_up_left_overs_are_dropped_and_counted() -> None:
    calls: list[int] = []

    def slow_twice() -> None:
        calls.append(1)
        time.sleep(0.1 if len(calls) <= 2 else 0.002)

    record = measure(slow_twice, warmup=0, min_reps=4, reps=8, budget_s=5.0, min_sample_s=0.0)
    assert record["discarded"] == 2 and record["reps"] == 6
    assert record["median_s"] < 0.05  # the two 0.1 s left-overs are not in the figure


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="min_reps"):
        measure(lambda: None, min_reps=5, reps=3)
    with pytest.raises(ValueError, match="work"):
        measure(lambda: None, work={"flops": -1})


def test_device_is_that_of_the_first_tensor() -> None:
    assert device_of((1, torch.zeros(1)), {}) == torch.device("cpu")
    assert device_of((), {}) == torch.device("cpu")


class _FakeEvent:
    """A CUDA/HIP event on a CPU-only machine: records the host clock when the stream reaches it."""

    def __init__(self, enable_timing: bool = False) -> None:
        assert enable_timing
        self.at: float | None = None

    def record(self) -> None:
        self.at = time.perf_counter()

    def elapsed_time(self, end: _FakeEvent) -> float:
        assert self.at is not None and end.at is not None, "elapsed_time before both were recorded"
        return (end.at - self.at) * 1e3  # milliseconds, as torch's


def test_on_a_gpu_events_bracket_each_sample_and_the_device_is_synchronised(monkeypatch: pytest.MonkeyPatch) -> None:
    """The GPU path, on this CPU-only machine: events per sample, device synchronised after the
    warm-up and once after the samples (not per call), and the peak fraction of the named device."""
    import contextlib

    from pytest_rocm.perf import measure as module

    syncs: list[object] = []
    monkeypatch.setattr(torch.cuda, "Event", _FakeEvent)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: syncs.append(device))
    monkeypatch.setattr(torch.cuda, "device", lambda device: contextlib.nullcontext())
    monkeypatch.setattr(module, "arch_and_name", lambda device: ("gfx942", "AMD Instinct MI300X"))
    calls = []

    def kernel() -> None:
        calls.append(1)
        time.sleep(0.002)

    record = measure(
        kernel, device="cuda:0", work={"flops": 2.6148e12}, dtype="bfloat16", warmup=2, min_reps=3, reps=4, budget_s=10
    )
    assert (
        record["reps"] + record.get("discarded", 0) == 4 and len(calls) == 2 + 3 + 1
    )  # calibrating blocks are samples
    assert len(syncs) == 2 + 1 + 1  # in and after the warm-up, after the calibration, after the last round
    assert record["min_s"] >= 0.002
    assert record["device"] == "cuda:0 (gfx942, AMD Instinct MI300X)"
    assert record["peak"] == pytest.approx(1307.4e3)
    assert record["peak_fraction"] == pytest.approx(record["throughput"] / 1307.4e3)
