"""torch.compile (inductor) of a small block, compared with eager through parity, forward and
backward, per dtype. On a GPU inductor emits Triton kernels (AMD's Triton backend on ROCm); on the
CPU it emits C++ (needs a C compiler). Compiling is slow on a CPU, so this carries the ``compile``
marker: ``-m "not compile"`` deselects it.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from opsupport import check, dtypes, is_reference, randn

from pytest_rocm import INFO_PROPERTY

pytestmark = pytest.mark.compile


def block(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    hidden = F.gelu(x @ w + b)
    return F.layer_norm(hidden, hidden.shape[-1:]) * torch.sigmoid(hidden)


compiled_block = torch.compile(block, dynamic=False)


@dtypes
def test_compile(dtype: str, parity, rocm_device: torch.device, record_property) -> None:
    def run(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        # The float64 reference stays eager: compiling it too would only cost another graph.
        return block(x, w, b) if is_reference(x) else compiled_block(x, w, b)

    check(
        parity,
        rocm_device,
        "compile[block]",
        run,
        randn(8, 32, seed=1),
        randn(32, 16, seed=2),
        randn(16, seed=3),
        dtype=dtype,
    )
    record_property(INFO_PROPERTY, {"torch_compile_backend": "inductor"})
