"""torch.compile of the tiny Llama forward against eager, on the device under test.

On ROCm the default backend (inductor) generates Triton kernels for the device, a separate
code path from the eager kernels. Compiling is slow on a CPU (about 20 s with a cold inductor
cache on 2 cores, 5 s warm), so the row is marked ``slow``: deselect with ``-m "not slow"``.
Row: ``models/tiny-llama/compile[float32]``.
"""

from __future__ import annotations

import time

import pytest

from pytest_rocm import INFO_PROPERTY, PARITY_PROPERTY, not_installed_reason

torch = pytest.importorskip("torch", reason=not_installed_reason("torch"))

from . import tiny  # noqa: E402
from .rows import rows  # noqa: E402

WORKLOAD = "tiny-llama"
pytestmark = [pytest.mark.rocm_requires("transformers"), pytest.mark.slow]

#: compiled against eager logits on the same device: fused kernels reorder sums, nothing more
#: (measured 3.5e-7 on the CPU)
COMPILE_NORMWISE = {"float32": 1e-5}


@pytest.mark.parametrize("dtype", rows(WORKLOAD, "compile", ("float32",)))
def test_compile(dtype: str, rocm_device: torch.device, record_property) -> None:
    sequence = torch.tensor([tiny.PROMPT + tiny.reference_tokens()], dtype=torch.long, device=rocm_device)
    model = tiny.llama(rocm_device, dtype)
    torch._dynamo.reset()  # no graphs left from another test: this row measures a full compile
    try:
        with torch.no_grad():
            eager = model(sequence, use_cache=False).logits
            compiled_forward = torch.compile(model, dynamic=False)
            started = time.perf_counter()
            compiled = compiled_forward(sequence, use_cache=False).logits
            seconds = time.perf_counter() - started
    finally:
        torch._dynamo.reset()
    error = tiny.normwise_error(compiled, eager)
    bound = COMPILE_NORMWISE[dtype]
    record_property(INFO_PROPERTY, {"compile_backend": "inductor", "compile_seconds": round(seconds, 2)})
    record_property(PARITY_PROPERTY, [tiny.record(dtype, "compiled-vs-eager-logits", error, bound)])
    assert error <= bound, f"torch.compile logits differ from eager: normwise {error:.3g} > {bound:g}"
