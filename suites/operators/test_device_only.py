"""Device-only features (the ``gpu`` marker): pinned memory with non_blocking copies, streams and
events, peer copies between two GPUs (``gpus(2)``). They check bits, not rounding: a copy must be
exact, so the checks are equality, and what the device offers (peer access) goes to rocm_info.
With --rocm-device=cpu they skip naming the device, even on a machine that has a GPU.
"""

from __future__ import annotations

import pytest
import torch
from opsupport import backend_of, randn

from pytest_rocm import INFO_PROPERTY

pytestmark = pytest.mark.rocm_gpu


@pytest.fixture
def gpu(rocm_device: torch.device) -> torch.device:
    if rocm_device.type != "cuda":
        pytest.skip(f"device-only feature: the device under test is {rocm_device}, not a GPU")
    return rocm_device


def test_pinned_memory_non_blocking(gpu: torch.device) -> None:
    host = randn(1024, 256, seed=1).pin_memory()
    assert host.is_pinned(), "pin_memory() returned pageable memory"
    on_device = host.to(gpu, non_blocking=True)
    back = torch.empty_like(host).pin_memory()
    back.copy_(on_device * 2, non_blocking=True)
    torch.cuda.current_stream(gpu).synchronize()
    assert torch.equal(back, host * 2), "pinned non_blocking round trip changed the data"


def test_streams_and_events(gpu: torch.device, record_property) -> None:
    a, b = randn(256, 256, seed=1).to(gpu), randn(256, 256, seed=2).to(gpu)
    side = torch.cuda.Stream(device=gpu)
    start, done = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    side.wait_stream(torch.cuda.current_stream(gpu))  # inputs were made on the default stream
    with torch.cuda.stream(side):
        start.record()
        product = a @ b
        for _ in range(4):
            product = product.tanh() @ b
        done.record()
    torch.cuda.current_stream(gpu).wait_event(done)
    result = product.cpu()  # ordered after `done` by the wait above
    done.synchronize()
    assert done.query(), "event not complete after synchronize()"
    expected = a @ b
    for _ in range(4):
        expected = expected.tanh() @ b
    torch.testing.assert_close(result, expected.cpu(), msg=lambda m: f"side-stream result differs: {m}")
    elapsed = start.elapsed_time(done)
    assert elapsed >= 0.0, f"event elapsed_time {elapsed} ms"
    record_property(INFO_PROPERTY, {"backend": backend_of(gpu), "side_stream_ms": round(elapsed, 3)})


@pytest.mark.rocm_gpus(2)
def test_peer_copy(gpu: torch.device, record_property) -> None:
    if torch.cuda.device_count() < 2:
        pytest.skip(f"peer copy needs 2 GPUs, torch sees {torch.cuda.device_count()}")
    other = torch.device("cuda", (gpu.index + 1) % torch.cuda.device_count())
    data = randn(512, 512, seed=3).to(gpu)
    copied = data.to(other)
    assert copied.device == other
    assert torch.equal(copied.cpu(), data.cpu()), f"{gpu} -> {other} copy changed the data"
    back = torch.empty_like(data)
    back.copy_(copied * 3)
    assert torch.equal(back.cpu(), data.cpu() * 3), f"{other} -> {gpu} copy changed the data"
    record_property(
        INFO_PROPERTY,
        {"backend": backend_of(gpu), "peer_access": torch.cuda.can_device_access_peer(gpu.index, other.index)},
    )
