"""Activations: GELU (exact erf form and tanh approximation), SiLU, softmax, log_softmax, and the
other torch.nn.functional activations of transformers and CNNs (ReLU and its in-place form,
LeakyReLU, ReLU6, Hardtanh, PReLU, Hardswish, Hardsigmoid, Mish, ELU, SELU, CELU, Softplus,
sigmoid, tanh, LogSigmoid, Softsign, GLU, dropout in eval mode); softmax/log_softmax over long rows.

Forward is held to one eps per element and normwise: these ops compute in fp32 ("opmath") and round
once, so anything worse is a wrong kernel, and a 1% error in bf16 (2.5x its rounding) fails.
Backward runs with the default table, softmax/log_softmax backward with 8 eps normwise: their
gradient ``y * (g - <g, y>)`` cancels, and its rounding error follows the terms, not the result;
piecewise-linear activations' backward with 1 eps per element (see EXACT_BACKWARD).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
import shapes
import torch
import torch.nn.functional as F
from opsupport import EPS, check, dtypes, eps_tolerances, randn

from pytest_rocm import INFO_PROPERTY, LOW_PRECISION_DTYPES, default_tolerance

ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "gelu": lambda x: F.gelu(x),
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": lambda x: F.silu(x),
    "softmax": lambda x: F.softmax(x, dim=-1),
    "log_softmax": lambda x: F.log_softmax(x, dim=-1),
    # the rest of torch.nn.functional's activations that transformers and CNNs use
    "relu": lambda x: F.relu(x),
    "relu_inplace": lambda x: F.relu(x, inplace=True),  # torchvision's ResNets
    "leaky_relu": lambda x: F.leaky_relu(x, 0.01),
    "relu6": lambda x: F.relu6(x),  # MobileNetV2
    "hardtanh": lambda x: F.hardtanh(x, -2.0, 2.0),
    "prelu": lambda x: F.prelu(x, x.new_full((1,), 0.25)),
    "hardswish": lambda x: F.hardswish(x),  # MobileNetV3
    "hardsigmoid": lambda x: F.hardsigmoid(x),  # squeeze-and-excitation gates
    "mish": lambda x: F.mish(x),  # YOLOv4
    "elu": lambda x: F.elu(x),
    "selu": lambda x: F.selu(x),
    "celu": lambda x: F.celu(x, 1.5),
    "softplus": lambda x: F.softplus(x),
    "sigmoid": lambda x: torch.sigmoid(x),
    "tanh": lambda x: torch.tanh(x),
    "logsigmoid": lambda x: F.logsigmoid(x),
    "softsign": lambda x: F.softsign(x),
    "glu": lambda x: F.glu(x, dim=-1),
    "dropout_eval": lambda x: F.dropout(x, 0.1, training=False),  # inference: the identity
}
CANCELLING_BACKWARD = {"softmax", "log_softmax"}
# Piecewise-linear: the gradient is the upstream gradient times 0, 1 or a slope, so its only error is
# the upstream gradient's rounding to the dtype (measured <= 0.7 eps): held to 1 eps per element and
# no normwise slack, so a 1 % error fails in bf16 too (fp32's default table already catches it).
EXACT_BACKWARD = {"relu", "relu_inplace", "leaky_relu", "relu6", "hardtanh", "prelu", "dropout_eval"}

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
    backward = None
    if op in CANCELLING_BACKWARD:
        backward = eps_tolerances(normwise_eps=8)
    elif op in EXACT_BACKWARD:
        backward = eps_tolerances(rtol_eps=1, normwise_eps=0)
    check(parity, rocm_device, op, fn, INPUT, dtype=dtype, tolerances=backward)


# -- softmax / log_softmax over long rows (shapes.SOFTMAX): >= 1024, >= 4096, vocabulary-sized ----
def row_tolerances(cols: int, backward: bool) -> dict[str, dict[str, float]]:
    """Per-dtype tolerances for a softmax over rows of ``cols``: the forward as above (1 eps), the
    backward with 4 eps per element and 8 eps normwise (the cancellation above, over a long row), and
    for every dtype the normalizer's accumulation in fp32 (sqrt(cols) fp32 eps, a random walk: it is
    what a 152064-wide fp32 row needs, negligible in fp16/bf16)."""
    acc = math.sqrt(cols) * EPS["float32"]
    rtol_eps, normwise_eps = (4, 8) if backward else (1, 1)
    # float32: parity's defaults (its normwise already adds sqrt(cols) fp32 eps), rtol widened by acc
    fp32 = default_tolerance("float32", cols)
    out = {"float32": {"rtol": fp32.rtol + acc, "normwise": fp32.normwise}}
    for dtype in LOW_PRECISION_DTYPES:
        out[dtype] = {"rtol": rtol_eps * EPS[dtype] + acc, "normwise": normwise_eps * EPS[dtype] + acc}
    return out


@dtypes
@shapes.marker("case", shapes.SOFTMAX)
def test_softmax_sweep(
    case: shapes.Row, dtype: str, parity, rocm_device: torch.device, rocm_scale: str, record_property
) -> None:
    r: shapes.Rows = case.shape
    record_property(INFO_PROPERTY, case.info(rocm_scale))
    op = case.id.split("-", 1)[0]
    fn = ACTIVATIONS[op]
    # Scale 1: flat rows, as attention scores and language-model logits are. (Scale-4 rows of 8192 are
    # nearly one-hot, and their gradient cancels at the dominant entry: a property of those inputs,
    # not of the row length; the rows above keep the wide range.)
    x = randn(r.rows, r.cols, seed=7)
    name = f"{op} {case.id}"
    check(parity, rocm_device, name, fn, x, dtype=dtype, grad=False, tolerances=row_tolerances(r.cols, False))
    check(parity, rocm_device, name, fn, x, dtype=dtype, tolerances=row_tolerances(r.cols, True))
