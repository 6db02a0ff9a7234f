"""Measured rows: how fast, not only whether (docs/perf.md).

Each test times one operation with the ``perf`` fixture and records ``results[*].perf``: the
median of the repetitions, their spread, the work (FLOPs or bytes) and the throughput, the
fraction of the device's published peak (data/peaks.json) and which library ran (BLAS preference,
TunableOp, the SDPA backend seen in the profiler's kernel names). The shapes are per scale profile:
``ci`` the smallest that exercises the path (cheap on 2 CPU cores), ``full`` the sizes real models
run (Llama-3-8B: hidden 4096, head_dim 128, intermediate 14336; SDXL's 320-channel 128x128 conv).
A row checks only that its result is finite: correctness is the parity rows' job, speed the gate's
(``rocm-compat diff --max-slowdown``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from opsupport import backend_of

from pytest_rocm import INFO_PROPERTY, scale_cases
from pytest_rocm.suite_support import kernel_names, sdpa_backend_from_names

DTYPES = ("float32", "float16", "bfloat16")

# id -> (ci shape, full shape)
GEMM = scale_cases(
    "shape",
    {
        "mm": (("mm", 128, 128, 128), ("mm", 4096, 4096, 4096)),
        "bmm": (("bmm", 4, 64, 64, 64), ("bmm", 32, 1024, 1024, 128)),
        "linear_bias": (("linear", 64, 128, 256), ("linear", 4096, 4096, 14336)),
    },
)
TUNABLE_MM = scale_cases("shape", {"mm": ((128, 128, 128), (4096, 4096, 4096))})
SDPA = scale_cases(
    "shape",
    {  # (batch, heads, query length, key length, head_dim)
        "prefill": ((1, 4, 128, 128, 64), (1, 32, 4096, 4096, 128)),
        "decode": ((1, 4, 1, 256, 64), (8, 32, 1, 4096, 128)),
    },
)
CONV = scale_cases("shape", {"sdxl_3x3": ((1, 8, 16, 16), (1, 320, 128, 128))})  # (batch, channels, h, w)
NORM = scale_cases("shape", {"hidden": ((64, 256), (4096, 4096))})  # (tokens, features)
ELEMENTWISE = scale_cases("numel", {"add": (1 << 20, 1 << 28)})
COPY = scale_cases("nbytes", {"copy": (4 << 20, 256 << 20)})


def _tensor(*shape: int, dtype: str, device: torch.device, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=generator).to(device=device, dtype=getattr(torch, dtype))


def _finite(out: torch.Tensor) -> None:
    assert bool(torch.isfinite(out.float()).all()), "non-finite output: see the parity rows"


@pytest.mark.parametrize("dtype", DTYPES)
@GEMM
def test_perf_gemm(shape: tuple[Any, ...], dtype: str, rocm_device: torch.device, perf: Any) -> None:
    kind, *dims = shape
    if kind == "mm":
        m, n, k = dims
        a, b = _tensor(m, k, dtype=dtype, device=rocm_device), _tensor(k, n, dtype=dtype, device=rocm_device, seed=1)
        fn: Callable[[], torch.Tensor] = lambda: torch.mm(a, b)  # noqa: E731
        flops = 2 * m * n * k
    elif kind == "bmm":
        batch, m, n, k = dims
        a = _tensor(batch, m, k, dtype=dtype, device=rocm_device)
        b = _tensor(batch, k, n, dtype=dtype, device=rocm_device, seed=1)
        fn = lambda: torch.bmm(a, b)  # noqa: E731
        flops = 2 * batch * m * n * k
    else:
        tokens, features, out = dims
        x = _tensor(tokens, features, dtype=dtype, device=rocm_device)
        w = _tensor(out, features, dtype=dtype, device=rocm_device, seed=1)
        bias = _tensor(out, dtype=dtype, device=rocm_device, seed=2)
        fn = lambda: F.linear(x, w, bias)  # noqa: E731
        flops = 2 * tokens * features * out + tokens * out
    perf(fn, work={"flops": flops}, dtype=dtype, device=rocm_device, name=kind)
    _finite(fn())


@contextmanager
def _tunableop(on: bool) -> Iterator[None]:
    tunable = torch.cuda.tunable
    before = tunable.is_enabled()
    tunable.enable(on)
    try:
        yield
    finally:
        tunable.enable(before)


@pytest.mark.parametrize("tunableop", ["off", "on"])
@TUNABLE_MM
def test_perf_gemm_tunableop(shape: tuple[int, int, int], tunableop: str, rocm_device: torch.device, perf: Any) -> None:
    """TunableOp side by side: the same bf16 GEMM with it off and on (a lost tuning is a slowdown)."""
    if rocm_device.type != "cuda":
        pytest.skip(f"TunableOp is a GPU feature; the device under test is {rocm_device}")
    m, n, k = shape
    a = _tensor(m, k, dtype="bfloat16", device=rocm_device)
    b = _tensor(k, n, dtype="bfloat16", device=rocm_device, seed=1)
    with _tunableop(tunableop == "on"):
        perf(lambda: torch.mm(a, b), work={"flops": 2 * m * n * k}, dtype="bfloat16", device=rocm_device, warmup=5)


SDPA_BACKENDS = {
    "math": "MATH",
    "flash": "FLASH_ATTENTION",
    "efficient": "EFFICIENT_ATTENTION",
    "cudnn": "CUDNN_ATTENTION",
}


@pytest.mark.parametrize("backend", list(SDPA_BACKENDS))
@SDPA
def test_perf_sdpa(
    shape: tuple[int, ...], backend: str, rocm_device: torch.device, perf: Any, record_property: Any
) -> None:
    from torch.nn.attention import SDPBackend, sdpa_kernel

    batch, heads, q_len, kv_len, head_dim = shape
    dtype = "float32" if rocm_device.type == "cpu" else "bfloat16"
    q = _tensor(batch, heads, q_len, head_dim, dtype=dtype, device=rocm_device)
    k = _tensor(batch, heads, kv_len, head_dim, dtype=dtype, device=rocm_device, seed=1)
    v = _tensor(batch, heads, kv_len, head_dim, dtype=dtype, device=rocm_device, seed=2)
    causal = q_len == kv_len and q_len > 1

    def attend() -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    with sdpa_kernel([getattr(SDPBackend, SDPA_BACKENDS[backend])]):
        try:
            ran = sdpa_backend_from_names(kernel_names(attend))
        except RuntimeError as exc:  # "No available kernel": this backend cannot run this case here
            pytest.skip(f"SDPA {backend} on {backend_of(rocm_device)}: {str(exc).splitlines()[0][:200]}")
        flops = 4 * batch * heads * q_len * kv_len * head_dim // (2 if causal else 1)
        record_property(INFO_PROPERTY, {"sdpa_requested": backend, "sdpa_backend": ran})
        perf(attend, work={"flops": flops}, dtype=dtype, device=rocm_device, backend={"sdpa": ran})
        _finite(attend())


@CONV
def test_perf_conv2d(shape: tuple[int, ...], rocm_device: torch.device, perf: Any) -> None:
    batch, channels, h, w = shape
    dtype = "float32" if rocm_device.type == "cpu" else "bfloat16"
    x = _tensor(batch, channels, h, w, dtype=dtype, device=rocm_device)
    weight = _tensor(channels, channels, 3, 3, dtype=dtype, device=rocm_device, seed=1)
    flops = 2 * batch * channels * h * w * channels * 9
    perf(lambda: F.conv2d(x, weight, padding=1), work={"flops": flops}, dtype=dtype, device=rocm_device)
    _finite(F.conv2d(x, weight, padding=1))


@pytest.mark.parametrize("norm", ["layer_norm", "rms_norm"])
@NORM
def test_perf_norm(shape: tuple[int, int], norm: str, rocm_device: torch.device, perf: Any) -> None:
    tokens, features = shape
    dtype = "float32" if rocm_device.type == "cpu" else "bfloat16"
    x = _tensor(tokens, features, dtype=dtype, device=rocm_device)
    weight = torch.ones(features, device=rocm_device, dtype=x.dtype)
    fn = getattr(F, norm)
    # memory-bound: the input read once and the output written once
    perf(lambda: fn(x, (features,), weight), work={"bytes": 2 * x.numel() * x.element_size()}, device=rocm_device)
    _finite(fn(x, (features,), weight))


@ELEMENTWISE
def test_perf_elementwise_bandwidth(numel: int, rocm_device: torch.device, perf: Any) -> None:
    """``a + b`` into a preallocated output: three passes over memory, the bandwidth figure."""
    a = _tensor(numel, dtype="float32", device=rocm_device)
    b = _tensor(numel, dtype="float32", device=rocm_device, seed=1)
    out = torch.empty_like(a)
    perf(lambda: torch.add(a, b, out=out), work={"bytes": 3 * numel * 4}, device=rocm_device)
    _finite(out)


@pytest.mark.parametrize("direction", ["h2d-pinned", "h2d-pageable", "d2h-pinned", "d2h-pageable"])
@COPY
def test_perf_copy(nbytes: int, direction: str, rocm_device: torch.device, perf: Any) -> None:
    if rocm_device.type != "cuda":
        pytest.skip(f"host-device copies need an accelerator; the device under test is {rocm_device}")
    pinned = direction.endswith("-pinned")
    host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=pinned)
    device = torch.empty(nbytes, dtype=torch.uint8, device=rocm_device)
    if direction.startswith("h2d"):
        fn: Callable[[], Any] = lambda: device.copy_(host, non_blocking=pinned)  # noqa: E731
    else:
        fn = lambda: host.copy_(device, non_blocking=pinned)  # noqa: E731
    perf(fn, work={"bytes": nbytes}, device=rocm_device, name=direction)
