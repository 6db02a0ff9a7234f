"""The accelerator probe's rule, on a stand-in for ``torch.cuda`` (the real one on a GPU machine:
benchmarks/bench_accelerator_probe.py)."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

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


# A suite on a stand-in torch (sys.modules["torch"]) whose caching allocator counts what the tests
# allocate: the probe end to end, through pytest's own setup, call and teardown.
FAKE_TORCH_SUITE = """
import sys, types
import pytest

class Cuda:
    count = None  # not initialised until a test allocates
    def is_initialized(self):
        return self.count is not None
    def device_count(self):
        return 1
    def memory_stats(self, index):
        return {"allocation.all.allocated": self.count}

cuda = Cuda()
sys.modules["torch"] = types.SimpleNamespace(cuda=cuda)

def allocate():
    cuda.count = (cuda.count or 0) + 1

@pytest.fixture
def gpu_tensor():
    allocate()  # in setup: the fixture put the test's data on the GPU

@pytest.fixture
def allocates_at_teardown():
    yield
    allocate()  # after the body: the next test's business, not this one's

def test_a_first_allocation_initialises():
    allocate()

def test_b_cpu_only():
    pass

def test_c_fixture_allocates(gpu_tensor):
    pass

def test_d_fails_after_allocating():
    allocate()
    assert False

def test_e_teardown_allocates(allocates_at_teardown):
    pass

@pytest.mark.skip(reason="no GPU for this one")
def test_f_skipped_in_setup():
    allocate()

@pytest.mark.parametrize("attempt", [1])
def test_g_after_teardown_allocation(attempt):
    pass
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_the_probe_sees_what_each_test_allocated(pytester: pytest.Pytester, workers: list[str]) -> None:
    if workers:
        pytest.importorskip("xdist")
        workers = [*workers, "--dist", "loadfile"]  # one worker: one allocator, in the suite's order
    pytester.makepyfile(test_gpu=FAKE_TORCH_SUITE)
    report = pytester.path / "r.json"
    env = Path(__file__).parents[1] / "data" / "envs" / "mi300x_8.json"
    result = pytester.runpytest_subprocess(
        f"--rocm-env={env}", f"--rocm-report={report}", "-p", "no:randomly", *workers
    )
    assert result.ret == 1, result.stdout.str()
    used = {r["nodeid"].split("::")[1]: r.get("accelerator") for r in json.loads(report.read_text())["results"]}
    assert used == {
        "test_a_first_allocation_initialises": True,  # initialised the runtime
        "test_b_cpu_only": False,
        "test_c_fixture_allocates": True,  # setup counts: read before the setup
        "test_d_fails_after_allocating": True,  # a failed test used it all the same
        "test_e_teardown_allocates": False,  # read after the body, before the fixtures' teardown
        "test_f_skipped_in_setup": None,  # its body never ran: no answer, not "no"
        "test_g_after_teardown_allocation[1]": False,  # the previous teardown's allocation is not its
    }
    result.stdout.fnmatch_lines(["rocm report: 3 of 6 tests used the GPU (cuda:0)"])
