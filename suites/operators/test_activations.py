"""Activations: GELU (exact erf form and tanh approximation), SiLU, softmax, log_softmax.

Forward is held to one eps per element and normwise: these ops compute in fp32 ("opmath") and round
once, so anything worse is a wrong kernel, and a 1% error in bf16 (2.5x its rounding) fails.
Backward runs with the default table, softmax/log_softmax backward with 8 eps normwise: their
gradient ``y * (g - <g, y>)`` cancels, and its rounding error follows the terms, not the result.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from opsupport import check, dtypes, eps_tolerances, randn

ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "gelu": lambda x: F.gelu(x),
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": lambda x: F.silu(x),
    "softmax": lambda x: F.softmax(x, dim=-1),
    "log_softmax": lambda x: F.log_softmax(x, dim=-1),
}
CANCELLING_BACKWARD = {"softmax", "log_softmax"}

# Wide range (|x| up to ~12) so the tails of GELU and the max-subtraction in softmax are exercised.
INPUT = randn(8, 64, seed=7, scale=4.0)


@dtypes
@pytest.mark.parametrize("op", list(ACTIVATIONS))
def test_activation(op: str, dtype: str, parity, rocm_device: torch.device) -> None:
    fn = ACTIVATIONS[op]
    check(
        parity,
        rocm_device,
        op,
        fn,
        INPUT,
        dtype=dtype,
        grad=False,
        tolerances=eps_tolerances(rtol_eps=1, normwise_eps=1),
    )
    backward = eps_tolerances(normwise_eps=8) if op in CANCELLING_BACKWARD else None
    check(parity, rocm_device, op, fn, INPUT, dtype=dtype, tolerances=backward)
