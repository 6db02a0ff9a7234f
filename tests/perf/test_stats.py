"""perf.stats: median and spread of timings, work -> throughput, the perf record (torch-free)."""

from __future__ import annotations

import pytest

from pytest_rocm.perf.stats import build_perf_record, check_work, median_and_spread, throughput


def test_median_and_relative_interquartile_spread() -> None:
    # quartiles (inclusive) of 1..5 are 2 and 4: IQR 2 over the median 3
    assert median_and_spread([5.0, 1.0, 3.0, 2.0, 4.0]) == (3.0, pytest.approx(2 / 3))
    assert median_and_spread([0.5]) == (0.5, 0.0)
    assert median_and_spread([2.0, 2.0, 2.0]) == (2.0, 0.0)


@pytest.mark.parametrize("times", [[], [1.0, float("nan")], [-1.0, 1.0], [float("inf")]])
def test_bad_timings_are_refused(times: list[float]) -> None:
    with pytest.raises(ValueError, match="timings"):
        median_and_spread(times)


def test_throughput_in_giga_units() -> None:
    assert throughput({"flops": 2e12}, 0.5) == (4000.0, "GFLOP/s")
    assert throughput({"bytes": 3e9}, 1.5) == (2.0, "GB/s")
    assert throughput({"tokens": 100}, 0.5) == (200.0, "tokens/s")
    assert throughput({"steps": 3}, 1.5) == (2.0, "steps/s")
    assert throughput({}, 1.0) == (None, None)


@pytest.mark.parametrize(
    "work",
    [{"flops": 0}, {"flops": -5}, {"bytes": float("nan")}, {"ops": 3}, {"flops": 1, "bytes": 1}, {"flops": True}],
)
def test_bad_work_is_one_clear_error(work: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="work"):
        check_work(work)


def test_record_carries_throughput_and_peak_fraction() -> None:
    record = build_perf_record([0.002, 0.001, 0.003], {"flops": 2e9}, peak=4000.0, name="mm", dtype="bfloat16")
    assert record["median_s"] == 0.002 and record["reps"] == 3 and record["min_s"] == 0.001
    assert record["throughput"] == pytest.approx(1000.0) and record["unit"] == "GFLOP/s"
    assert record["peak_fraction"] == pytest.approx(0.25)
    assert record["name"] == "mm" and record["dtype"] == "bfloat16"
    bare = build_perf_record([0.1])
    assert bare["throughput"] is None and bare["peak_fraction"] is None and bare["work"] == {}
