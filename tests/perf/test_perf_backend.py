"""perf.backend: the SDPA backend from kernel names, the BLAS facts on the CPU."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from pytest_rocm.perf.backend import blas_facts, kernel_names, sdpa_backend_from_names


@pytest.mark.parametrize(
    ("names", "backend"),
    [
        (["aten::scaled_dot_product_attention", "aten::_scaled_dot_product_flash_attention_for_cpu"], "flash"),
        (["aten::_scaled_dot_product_efficient_attention", "fmha_cutlassF_f16_aligned_64x64_rf_sm80"], "efficient"),
        (["aten::_scaled_dot_product_cudnn_attention", "cudnn_generated_fort_native_sdpa"], "cudnn"),
        (["aten::_scaled_dot_product_attention_math", "aten::bmm", "aten::softmax"], "math"),
        (["aten::mm", "Cijk_Alik_Bljk_HHS_BH_MT128x128x32"], None),
    ],
)
def test_sdpa_backend_from_names(names: list[str], backend: str | None) -> None:
    assert sdpa_backend_from_names(names) == backend


def test_the_cpu_sdpa_that_ran_is_seen_through_the_profiler() -> None:
    q = torch.randn(1, 2, 8, 4)
    names = kernel_names(lambda: F.scaled_dot_product_attention(q, q, q))
    assert sdpa_backend_from_names(names) in ("flash", "math")  # torch 2.13 CPU: the flash kernel
    with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH):
        names = kernel_names(lambda: F.scaled_dot_product_attention(q, q, q))
    assert sdpa_backend_from_names(names) == "math"


def test_blas_facts_on_the_cpu() -> None:
    facts = blas_facts("cpu")
    assert facts["blas"] in ("mkl", "cpu") and facts["threads"] >= 1 and facts["torch"] == torch.__version__
