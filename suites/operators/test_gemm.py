"""GEMM family: mm, bmm, addmm, baddbmm, linear, einsum, a large-K reduction, TunableOp and TF32.

On ROCm these go through rocBLAS / hipBLASLt (and TunableOp when enabled), on CUDA through cuBLAS,
on the CPU through MKL/oneDNN: the same call, different kernels, hence the per-dtype parity rows.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from opsupport import backend_of, check, describe_device, dtypes, randn

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
        "rocm_info",
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
    record_property("rocm_info", {"backend": backend_of(rocm_device), "allow_tf32": state == "on"})
