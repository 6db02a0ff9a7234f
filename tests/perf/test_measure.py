"""perf.measure on the CPU: warm-up, repetitions within the budget, the inner loop for fast calls.

No test depends on this machine's absolute speed: the timed callable sleeps (a floor the timer must
see) or its calls are counted.
"""

from __future__ import annotations

import time

import pytest
import torch

from pytest_rocm.perf.measure import device_of, measure


def test_a_sleeping_call_is_timed_at_least_its_sleep() -> None:
    record = measure(time.sleep, 0.005, warmup=1, min_reps=3, reps=5, budget_s=0.05, work={"bytes": 5e6})
    assert 3 <= record["reps"] <= 5
    assert record["min_s"] >= 0.005  # a timer that measured nothing (or the launch only) fails here
    assert record["median_s"] < 0.5
    assert record["throughput"] == pytest.approx(5e6 / record["median_s"] / 1e9)
    assert record["unit"] == "GB/s" and record["device"] == "cpu" and record["peak_fraction"] is None


def test_warmup_and_repetitions_are_counted_calls() -> None:
    calls = []
    record = measure(lambda: calls.append(1), warmup=4, min_reps=3, reps=6, budget_s=10.0, min_sample_s=0.0)
    # 4 warm-up calls, 1 estimating call, then as many samples as the budget allows (capped at reps)
    assert record["reps"] == 6 and len(calls) == 4 + 1 + 6


def test_fast_calls_are_repeated_inside_one_sample() -> None:
    calls = []
    record = measure(lambda: calls.append(1), warmup=0, min_reps=3, reps=3, budget_s=1.0, min_sample_s=0.002)
    assert record["reps"] == 3 and len(calls) > 1 + 3 * 10  # each sample ran many calls
    assert record["median_s"] < 0.002  # seconds per call, not per sample


def test_budget_caps_the_repetitions() -> None:
    record = measure(time.sleep, 0.01, warmup=0, min_reps=2, reps=100, budget_s=0.03)
    assert 2 <= record["reps"] <= 4


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
    assert record["reps"] == 4 and len(calls) == 2 + 1 + 4
    assert len(syncs) == 1 + 1 + 1  # after the warm-up, after the estimate, after all samples
    assert record["min_s"] >= 0.002
    assert record["device"] == "cuda:0 (gfx942, AMD Instinct MI300X)"
    assert record["peak"] == pytest.approx(1307.4e3)
    assert record["peak_fraction"] == pytest.approx(record["throughput"] / 1307.4e3)
