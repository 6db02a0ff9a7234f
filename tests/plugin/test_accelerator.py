"""The accelerator probe's rule, on a stand-in for ``torch.cuda`` (the real one on a GPU machine:
benchmarks/bench_accelerator_probe.py)."""

from __future__ import annotations

import sys
import types

import pytest

from pytest_rocm.plugin import accelerator


class FakeCuda:
    def __init__(self, counts: list[int] | None) -> None:
        self.counts = counts  # per device; None: not initialised

    def is_initialized(self) -> bool:
        return self.counts is not None

    def device_count(self) -> int:
        return len(self.counts or [])

    def memory_stats(self, index: int) -> dict[str, int]:
        assert self.counts is not None
        return {"allocation.all.allocated": self.counts[index], "allocated_bytes.all.current": 0}


def test_allocations_sum_over_devices_and_need_an_initialised_runtime(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.SimpleNamespace(cuda=FakeCuda(None))
    monkeypatch.setitem(sys.modules, "torch", fake)
    assert accelerator.allocations() is None
    fake.cuda = FakeCuda([3, 4])
    assert accelerator.allocations() == 7
    monkeypatch.delitem(sys.modules, "torch")
    assert accelerator.allocations() is None  # torch never imported: nothing asked, nothing imported
    assert "torch" not in sys.modules


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        (None, None, False),  # never initialised
        (5, 5, False),  # initialised earlier, nothing allocated by this test
        (5, 6, True),
        (None, 0, True),  # this test initialised the runtime
    ],
)
def test_used_means_the_count_grew_or_the_test_initialised_the_runtime(before, after, expected) -> None:
    assert accelerator.used(before, after) is expected
