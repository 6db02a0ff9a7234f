"""The operator suite catches wrong numbers: deliberately broken ops make the right test fail.

Each test copies suites/operators into a pytester directory (under suites/, so feature names come
out as in a real run), adds a conftest that breaks one op in one dtype, runs a few suite items in
process, and checks which fail and that the failure names the op and the dtype.
"""

from __future__ import annotations

import importlib
import json
import shutil
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
# pytester's in-process runs forget the modules a run imported; importing triton's native module a
# second time then aborts the process (nanobind). torch._dynamo (imported lazily by the suite, and
# it brings triton) is loaded once here, so every run finds it already there.
importlib.import_module("torch._dynamo")

SUITE = Path(__file__).resolve().parents[2] / "suites" / "operators"


@pytest.fixture
def suite(pytester: pytest.Pytester) -> Path:
    target = pytester.path / "suites" / "operators"
    shutil.copytree(SUITE, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def run(pytester: pytest.Pytester, *ids: str, conftest: str = "", extra: tuple[str, ...] = ()):
    if conftest:
        (pytester.path / "conftest.py").write_text(conftest)
    args = [f"suites/operators/{i}" for i in ids]
    return pytester.runpytest("--rocm-device=cpu", "-p", "no:cacheprovider", "-rfs", *extra, *args)


GELU_OFF_BY_ONE_PERCENT_IN_BF16 = """
import pytest, torch
import torch.nn.functional as F

@pytest.fixture(autouse=True)
def broken_gelu(monkeypatch):
    real = F.gelu
    def gelu(x, *args, **kwargs):
        out = real(x, *args, **kwargs)
        return out * 1.01 if x.dtype == torch.bfloat16 else out
    monkeypatch.setattr(F, "gelu", gelu)
"""


def test_gelu_with_1_percent_error_in_bf16_fails_only_bf16(pytester, suite) -> None:
    ids = [f"test_activations.py::test_activation[gelu-{d}]" for d in ("float32", "float16", "bfloat16")]
    result = run(pytester, *ids, conftest=GELU_OFF_BY_ONE_PERCENT_IN_BF16)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*parity mismatch: gelu on cpu*",
            "*bfloat16*gelu*mismatch*",
            "FAILED suites/operators/test_activations.py::test_activation[[]gelu-bfloat16[]]*",
        ]
    )


def test_unbroken_gelu_passes_in_every_dtype(pytester, suite) -> None:
    """The control for the test above: same items, no patch, all pass (so the failure is the bug)."""
    ids = [f"test_activations.py::test_activation[gelu-{d}]" for d in ("float32", "float16", "bfloat16")]
    run(pytester, *ids).assert_outcomes(passed=3)


STALE_MM_IN_FP16 = """
import pytest, torch

@pytest.fixture(autouse=True)
def stale_mm(monkeypatch):
    real = torch.mm
    buffers = {}
    def mm(a, b, **kwargs):
        out = real(a, b, **kwargs)
        if a.dtype != torch.float16:
            return out
        key = (tuple(a.shape), tuple(b.shape))
        stale = buffers.setdefault(key, out.detach().clone())
        return out + (stale - out).detach()  # the previous call's values, gradients still flow
    monkeypatch.setattr(torch, "mm", mm)
    # "a previous batch" of the suite's shape leaves its result in the buffer
    torch.mm(torch.ones(16, 24, dtype=torch.float16), torch.ones(24, 8, dtype=torch.float16))
"""


def test_mm_returning_a_stale_buffer_in_fp16_fails_mm_fp16(pytester, suite) -> None:
    ids = [f"test_gemm.py::test_matmul[mm-{d}]" for d in ("float32", "float16", "bfloat16")]
    result = run(pytester, *ids, conftest=STALE_MM_IN_FP16)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*parity mismatch: mm on cpu*",
            "*float16*mm *mismatch*",
            "FAILED suites/operators/test_gemm.py::test_matmul[[]mm-float16[]]*",
        ]
    )


UNSUPPORTED_GELU_IN_BF16 = """
import pytest, torch
import torch.nn.functional as F

@pytest.fixture(autouse=True)
def no_bf16_gelu(monkeypatch):
    real = F.gelu
    def gelu(x, *args, **kwargs):
        if x.dtype == torch.bfloat16:
            raise RuntimeError('"GeluKernelImpl" not implemented for \\'BFloat16\\'')
        return real(x, *args, **kwargs)
    monkeypatch.setattr(F, "gelu", gelu)
"""


def test_dtype_without_kernel_is_a_skip_naming_op_dtype_backend(pytester, suite) -> None:
    ids = [f"test_activations.py::test_activation[gelu-{d}]" for d in ("float32", "bfloat16")]
    result = run(pytester, *ids, conftest=UNSUPPORTED_GELU_IN_BF16)
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED*gelu*bfloat16*cpu*not implemented for 'BFloat16'*"])


def test_feature_names_and_parity_records_reach_the_report(pytester, suite) -> None:
    report = pytester.path / "report.json"
    result = run(
        pytester,
        "test_gemm.py::test_matmul[mm-bfloat16]",
        "test_fft_linalg.py::test_linalg[qr-float16]",
        extra=(f"--rocm-report={report}",),
    )
    result.assert_outcomes(passed=1, skipped=1)
    rows = {r["feature"]: r for r in json.loads(report.read_text())["results"]}
    mm = rows["operators/matmul[mm-bfloat16]"]
    assert mm["outcome"] == "passed"
    assert {p["dtype"] for p in mm["parity"]} == {"bfloat16"}
    assert all(p["ok"] and p["max_abs"] > 0 for p in mm["parity"]), mm["parity"]  # measured, not vacuous
    qr = rows["operators/linalg[qr-float16]"]
    assert qr["outcome"] == "skipped" and "float16" in qr["reason"] and "cpu" in qr["reason"]


def test_sdpa_records_offered_and_default_backends(pytester, suite) -> None:
    report = pytester.path / "report.json"
    result = run(
        pytester,
        "test_attention.py::test_sdpa_default[float32]",
        "test_attention.py::test_sdpa[efficient-float32]",
        extra=(f"--rocm-report={report}",),
    )
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED*SDPA backend efficient is not available for float32 on backend cpu*"])
    row = next(
        r for r in json.loads(report.read_text())["results"] if r["feature"].startswith("operators/sdpa_default")
    )
    info = row.get("info") or {}
    assert info.get("sdpa_default") in {"math", "flash"}, row
    assert "math" in info.get("sdpa_offered", []), row


SDPA_FAILS_IN_FP16 = """
import pytest, torch
import torch.nn.functional as F

@pytest.fixture(autouse=True)
def sdpa_without_fp16_kernels(monkeypatch):
    real = F.scaled_dot_product_attention
    def sdpa(q, *args, **kwargs):
        if q.dtype == torch.float16:
            raise RuntimeError("HIP error: invalid device function")
        return real(q, *args, **kwargs)
    monkeypatch.setattr(F, "scaled_dot_product_attention", sdpa)
"""


def test_sdpa_backend_that_fails_is_a_failure_not_a_skip(pytester, suite) -> None:
    """Only torch's "no kernel for these inputs" is "not offered": a kernel that was picked and
    failed on this gfx is the incompatibility the table exists to show."""
    ids = [f"test_attention.py::test_sdpa[math-{d}]" for d in ("float32", "float16")]
    result = run(pytester, *ids, "test_attention.py::test_sdpa_default[float32]", conftest=SDPA_FAILS_IN_FP16)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "E*RuntimeError: HIP error: invalid device function",
            "FAILED suites/operators/test_attention.py::test_sdpa[[]math-float16[]]*",
        ]
    )


# -- helpers of the suite, without pytester ---------------------------------------------------
sys.path.insert(0, str(SUITE))
import opsupport  # noqa: E402  (the suite's helper module; the suite folder is not a package)


@pytest.mark.parametrize(
    "message",
    [
        "\"addmm_impl_cpu_\" not implemented for 'Half'",
        "Unsupported dtype BFloat16",
        "linalg.solve: Low precision dtypes not supported. Got Half",
    ],
)
def test_unsupported_errors_become_skips(message: str) -> None:
    with (
        pytest.raises(pytest.skip.Exception, match=r"op does not support float16 on backend cpu \(cpu\)"),
        opsupport.unsupported_as_skip("op", "float16", torch.device("cpu")),
    ):
        raise RuntimeError(message)


@pytest.mark.parametrize("error", [RuntimeError("CUDA error: an illegal memory access"), AssertionError("Half")])
def test_other_errors_are_not_swallowed(error: Exception) -> None:
    with pytest.raises(type(error)), opsupport.unsupported_as_skip("op", "float16", torch.device("cpu")):
        raise error


def test_inputs_are_exact_in_every_low_dtype() -> None:
    x = opsupport.randn(64, 64, seed=3, scale=4.0)
    for dtype in (torch.float16, torch.bfloat16):
        assert torch.equal(x.to(dtype).float(), x), dtype
    d = opsupport.distinct(4, 32)
    assert d.unique().numel() == d.numel()
    assert torch.equal(d.to(torch.bfloat16).float(), d)
