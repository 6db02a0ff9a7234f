"""Whether each test really used the accelerator, measured while it runs (``--rocm-report`` only).

A foreign suite picks its device itself (einops tests CPU tensors, kornia defaults to
``--device=cpu``), so a column labelled ``rocm ... gfx1100`` may never have touched the GPU. The
probe reads, before the test's setup and after its call, the cumulative count of allocations
torch's caching allocator made on each visible device (``torch.cuda.memory_stats``: read-only, no
peak reset, nothing of the suite's state changed). A test whose count grew, or that initialised
CUDA/HIP itself, used the accelerator. It never imports torch: a test that did not import it did
not use the GPU through it. Not seen: a kernel that allocates nothing through torch (all its
tensors made before the test). Cost: benchmarks/bench_accelerator_probe.py.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

from pytest_rocm.report.properties import ACCELERATOR_PROPERTY


def allocations() -> int | None:
    """Allocations made so far on all visible devices; None while CUDA/HIP is not initialised."""
    torch: Any = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None) if torch is not None else None
    if cuda is None or not cuda.is_initialized():
        return None
    total = 0
    for index in range(cuda.device_count()):
        total += int(cuda.memory_stats(index).get("allocation.all.allocated", 0))
    return total


def used(before: int | None, after: int | None) -> bool:
    """Whether the test allocated on the accelerator (or initialised it: before unknown, after known)."""
    if after is None:
        return False
    return before is None or after > before


_USED, _NOT_USED = (ACCELERATOR_PROPERTY, True), (ACCELERATOR_PROPERTY, False)


class AcceleratorProbe:
    """Hands each test's ``rocm_accelerator`` (True/False) to the report through user_properties
    (set before the teardown report is made, so xdist workers carry it to the controller). A test
    whose setup did not pass (skipped, errored) never ran its body: ``records.build_record`` keeps
    the answer only for a test with a call phase, so the probe needs no hook on the call.

    Two plain hooks, and the count kept on the probe, not on the item: a process runs one test at
    a time (setup, call, teardown, then the next test's setup), and a wrapper's generator, a stash
    entry or a third hook per test is most of what a probe costs a trivial test
    (benchmarks/bench_report_instructions.py).
    """

    def __init__(self) -> None:
        #: the count before the running test's setup
        self.before: int | None = None

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self) -> None:
        self.before = allocations()

    @pytest.hookimpl(tryfirst=True)  # before the fixtures' teardown: read after the body, as it ended
    def pytest_runtest_teardown(self, item: pytest.Item) -> None:
        # a failed test used the accelerator or not all the same; one of two shared pairs, not a
        # tuple per test kept alive with the item to the run's end
        item.user_properties.append(_USED if used(self.before, allocations()) else _NOT_USED)
