"""GEMM family: mm, bmm, addmm, baddbmm, linear, einsum, a large-K reduction, TunableOp and TF32.

On ROCm these go through rocBLAS / hipBLASLt (and TunableOp when enabled), on CUDA through cuBLAS,
on the CPU through MKL/oneDNN: the same call, different kernels, hence the per-dtype parity rows.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import shapes
import torch
import torch.nn.functional as F
from opsupport import backend_of, check, describe_device, dtypes, randn

from pytest_rocm import INFO_PROPERTY

# name -> (fn, inputs): small shapes keep the serial CPU run inside its budget. Ops are looked up
# when called (lambdas), so a test that patches torch.mm to break it reaches them.
GEMMS: dict[str, tuple[Callable[..., torch.Tensor], tuple[torch.Tensor, ...]]] = {
    "mm": (lambda a, b: torch.mm(a, b), (randn(16, 24, seed=1), randn(24, 8, seed=2))),
    "bmm": (lambda a, b: torch.bmm(a, b), (randn(3, 16, 24, seed=1), randn(3, 24, 8, seed=2))),
    "addmm": (
        lambda c, a, b: torch.addmm(c, a, b, beta=0.5, alpha=2.0),
        (randn(16, 8, seed=3), randn(16, 24, seed=1), randn(24, 8, seed=2)),
    ),
    "baddbmm": (
        lambda c, a, b: torch.baddbmm(c, a, b, beta=0.5, alpha=2.0),
        (randn(3, 16, 8, seed=3), randn(3, 16, 24, seed=1), randn(3, 24, 8, seed=2)),
    ),
    "linear": (lambda x, w, b: F.linear(x, w, b), (randn(4, 16, 24, seed=1), randn(8, 24, seed=2), randn(8, seed=3))),
    "einsum": (
        lambda a, b: torch.einsum("bhqd,bhkd->bhqk", a, b),
        (randn(2, 3, 8, 16, seed=1), randn(2, 3, 12, 16, seed=2)),
    ),
    # A long accumulation: fp16/bf16 must accumulate in fp32 or the normwise error explodes.
    "large_k": (lambda a, b: torch.mm(a, b), (randn(8, 8192, seed=1), randn(8192, 8, seed=2))),
}


@dtypes
@pytest.mark.parametrize("op", list(GEMMS))
def test_matmul(op: str, dtype: str, parity, rocm_device: torch.device) -> None:
    fn, args = GEMMS[op]
    check(parity, rocm_device, op, fn, *args, dtype=dtype)


def _needs_accelerator(what: str, device: torch.device) -> None:
    if device.type != "cuda":
        pytest.skip(f"{what} is a ROCm/CUDA GEMM setting; {describe_device(device)} has none")


@pytest.fixture
def tunableop(rocm_device: torch.device, tmp_path, record_property):
    """torch.cuda.tunable switched by the test, restored afterwards; results go to tmp_path."""
    _needs_accelerator("TunableOp (PYTORCH_TUNABLEOP_ENABLED)", rocm_device)
    tunable = getattr(torch.cuda, "tunable", None)
    if tunable is None:
        pytest.skip(f"torch {torch.__version__} has no torch.cuda.tunable (TunableOp)")
    before = (tunable.is_enabled(), tunable.tuning_is_enabled(), tunable.get_filename())
    tunable.set_filename(str(tmp_path / "tunableop_results.csv"))
    tunable.set_max_tuning_iterations(10)  # keep tuning to seconds, not minutes
    yield tunable
    tunable.enable(before[0])
    tunable.tuning_enable(before[1])
    tunable.set_filename(before[2])


@dtypes
@pytest.mark.parametrize("state", ["on", "off"])
def test_matmul_tunableop(
    state: str, dtype: str, tunableop, parity, rocm_device: torch.device, record_property
) -> None:
    enabled = state == "on"
    tunableop.enable(enabled)
    tunableop.tuning_enable(enabled)
    check(
        parity,
        rocm_device,
        f"mm tunableop={state}",
        torch.mm,
        randn(64, 256, seed=1),
        randn(256, 32, seed=2),
        dtype=dtype,
    )
    record_property(
        INFO_PROPERTY,
        {
            "backend": backend_of(rocm_device),
            "tunableop": tunableop.is_enabled(),
            "tuned_results": len(tunableop.get_results()) if enabled else 0,
        },
    )


@pytest.mark.parametrize("state", ["on", "off"])
def test_matmul_tf32(state: str, parity, rocm_device: torch.device, record_property) -> None:
    """fp32 GEMM with TF32 allowed and forbidden. TF32 keeps a 10-bit mantissa, so "on" is held to
    a bf16-like tolerance; on devices without TF32 hardware the flag is ignored and both pass."""
    _needs_accelerator("TF32 (torch.backends.cuda.matmul.allow_tf32)", rocm_device)
    before = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = state == "on"
    try:
        options = {"tolerances": {"float32": {"rtol": 1e-2, "atol": 1e-2}}} if state == "on" else {}
        check(
            parity,
            rocm_device,
            f"mm tf32={state}",
            torch.mm,
            randn(64, 512, seed=1),
            randn(512, 32, seed=2),
            dtype="float32",
            **options,
        )
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before
    record_property(INFO_PROPERTY, {"backend": backend_of(rocm_device), "allow_tf32": state == "on"})


# -- the sweep: long K, unaligned sizes, transposed/strided views, batches (shapes.GEMM) ----------
def gemm_inputs(g: shapes.Gemm) -> tuple[torch.Tensor, ...]:
    """CPU inputs in the storage layout ``gemm_call`` turns into the views the BLAS receives."""
    m, n, k, b = g.m, g.n, g.k, g.batch
    if g.op == "bmm":
        if g.layout == "batch_strided":  # (S, H, D)-ordered storage, permuted to (H, S, D)
            return randn(m, b, k, seed=1), randn(k, b, n, seed=2)
        return randn(b, m, k, seed=1), randn(b, k, n, seed=2)
    if g.op == "matmul":
        return randn(b, m, k, seed=1), randn(k, n, seed=2)
    if g.op == "linear_bias":
        return randn(m, k, seed=1), randn(n, k, seed=2), randn(n, seed=3)
    a = {
        "a_transposed": (k, m),
        "both_transposed": (k, m),
        "a_sliced": (m, 3 * k),
        "a_step2": (m, 2 * k),
        "a_offset": (m + 1, k),
    }.get(g.layout, (m, k))
    w = (n, k) if g.layout in ("b_transposed", "both_transposed") else (k, n)
    return randn(*a, seed=1), randn(*w, seed=2)


def gemm_call(g: shapes.Gemm) -> Callable[..., torch.Tensor]:
    k = g.k

    def fn(a: torch.Tensor, b: torch.Tensor, *bias: torch.Tensor) -> torch.Tensor:
        if g.op == "bmm":
            if g.layout == "batch_strided":
                a, b = a.transpose(0, 1), b.transpose(0, 1)
            return torch.bmm(a, b)
        if g.op == "matmul":
            return torch.matmul(a, b)
        if g.op == "linear_bias":
            return F.linear(a, b, *bias)
        if g.layout in ("a_transposed", "both_transposed"):
            a = a.t()
        elif g.layout == "a_sliced":
            a = a[:, k : 2 * k]  # the middle third: a storage offset and a row stride of 3k
        elif g.layout == "a_step2":
            a = a[:, ::2]
        elif g.layout == "a_offset":
            a = a[1:]
        if g.layout in ("b_transposed", "both_transposed"):
            b = b.t()
        return torch.mm(a, b)

    return fn


@dtypes
@shapes.marker("case", shapes.GEMM)
def test_matmul_sweep(
    case: shapes.Row, dtype: str, parity, rocm_device: torch.device, rocm_scale: str, record_property
) -> None:
    g: shapes.Gemm = case.shape
    record_property(INFO_PROPERTY, {"backend": backend_of(rocm_device), **case.info(rocm_scale)})
    check(
        parity,
        rocm_device,
        f"matmul {case.id}",
        gemm_call(g),
        *gemm_inputs(g),
        dtype=dtype,
        grad=g.grad,
        reduction_length=max(g.m, g.n, g.k),
    )


@dtypes
@shapes.marker("case", shapes.GEMM_VIEWS)
def test_matmul_tunableop_views(
    case: shapes.Row, dtype: str, tunableop, parity, rocm_device: torch.device, rocm_scale: str, record_property
) -> None:
    """TunableOp on and tuning, on transposed, sliced, strided and offset views (pytorch#140278)."""
    g: shapes.Gemm = case.shape
    tunableop.enable(True)
    tunableop.tuning_enable(True)
    check(
        parity,
        rocm_device,
        f"matmul tunableop {case.id}",
        gemm_call(g),
        *gemm_inputs(g),
        dtype=dtype,
        grad=g.grad,
        reduction_length=max(g.m, g.n, g.k),
    )
    record_property(
        INFO_PROPERTY,
        {"backend": backend_of(rocm_device), "tuned_results": len(tunableop.get_results()), **case.info(rocm_scale)},
    )
