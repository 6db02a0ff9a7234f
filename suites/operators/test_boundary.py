"""Boundary rows: per op, a covering array over the dimensions where GPU libraries switch kernels.

Every pair of values of any two dimensions of an op (sizes, layouts, keyword arguments, value
patterns, dtype, variant) is in some row in the ``ci`` profile, every triple in ``full`` (which
also adds the big sizes); the catalogue of dimensions is ``pytest_rocm.suite_support.BOUNDARY_CATALOGUE``
(docs/coverage.md). Each row runs through parity (device against the float64 CPU reference,
forward and, where the variant allows, backward) in its one dtype (``allow_vacuous``: zeros, a masked row or a
constant row give outputs or gradients of 0 on purpose; a wrong value there is still a mismatch), is named
``boundary/<family>/<op>[<values>]`` (the same in every column) and records its values as
``info["dims"]``, which the table's coverage section adds up.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import boundary_families as families
import boundary_more as more
import boundary_ops as ops
import pytest
import torch
from boundary import Case
from boundary_cpu_limits import full_cpu_marking
from opsupport import check

from pytest_rocm import INFO_PROPERTY
from pytest_rocm.suite_support import BOUNDARY_CATALOGUE, boundary_row_id

BUILDERS: dict[str, Callable[[dict[str, str]], Case]] = {
    "matmul/mm": ops.mm,
    "matmul/bmm": ops.bmm,
    "matmul/linear": ops.linear,
    **{f"conv/{op}": ops.conv(op) for op in ("conv1d", "conv2d", "conv3d", "conv_transpose2d")},
    "pooling/max_pool2d": ops.max_pool2d,
    "pooling/avg_pool2d": ops.avg_pool2d,
    "pooling/adaptive_avg_pool2d": ops.adaptive_avg_pool2d,
    "interpolation/interpolate": ops.interpolate,
    "norm/layer_norm": more.layer_norm,
    "norm/batch_norm": more.batch_norm,
    "norm/group_norm": more.group_norm,
    **{f"reductions/{op}": more.reduction(op) for op in ("softmax", "log_softmax", "sum", "var", "cumsum")},
    "attention/scaled_dot_product_attention": more.sdpa,
    "indexing/embedding": more.embedding,
    "indexing/gather": more.gather,
    "indexing/scatter_add": more.scatter_add,
    "indexing/index_select": more.index_select,
    **{f"elementwise/{op}": more.elementwise(op) for op in ("add", "mul", "gelu", "silu", "exp")},
    **families.BUILDERS,
    **families.optimizer_builders([s.op for s in BOUNDARY_CATALOGUE.values() if s.family == "optimizer"]),
}


class _Rows:
    """The parameters of one profile, built when the marker reads them: only the session's profile
    is iterated, so a ``ci`` collection never builds the three-way ``full`` arrays (seconds)."""

    def __init__(self, scale: str) -> None:
        self.scale = scale

    def __iter__(self) -> Iterator[Any]:
        return iter(_params(self.scale))


#: rows the CPU backend itself cannot get right, measured on torch 2.13 (x86, oneDNN): expected to
#: fail on the CPU only (``xfail``, not strict: the figure stays in the report), run as usual on a GPU
CPU_LIMITS: tuple[tuple[Callable[[str, dict[str, str]], bool], str], ...] = (
    (
        lambda key, r: key.startswith("matmul/") and r.get("values") == "subnormal" and r["dtype"] == "bfloat16",
        "the CPU's bf16 GEMM (oneDNN) flushes subnormal inputs to zero for some shapes "
        "(mm m65-k16-n33: every output 0, normwise error 1.0)",
    ),
    (
        lambda key, r: key.startswith("conv/") and r.get("values") == "nan" and r["dtype"] == "bfloat16",
        "the CPU's bf16 grouped convolution backward spreads a NaN into other groups' weight gradients "
        "(conv_transpose2d g2: non-finite where the float64 reference is finite)",
    ),
    (
        lambda key, r: key == "conv/conv3d" and r.get("values") == "near_max" and r["dtype"] == "float16",
        "the CPU's fp16 grouped conv3d backward loses the digits of input-gradient elements that cancel "
        "(near-max inputs, b1-g2-s8 channels_last: 0.0488 for 0.0477, 3 of 2048 elements past rtol 1e-3); "
        "seen on an AVX-512 (no AVX512-FP16, no AMX) host; the same torch passed these rows on another x86 host",
    ),
)


CPU_LIMITS += (
    (
        lambda key, r: (
            key == "conv/conv3d"
            and r["groups"] == "depthwise"
            and r["dtype"] == "float16"
            and r["dilation"] == "dil2x1"
        ),
        "the CPU's fp16 depthwise conv3d backward with an asymmetric dilation: 4 of 8788 input-gradient "
        "elements past rtol 1e-3 (-0.365 for -0.361; b1-k3-s13, offset input)",
    ),
)
#: optimizer steps on the CPU's own foreach / fused paths in fp16/bf16, against the model criterion
#: (the float64 step rounded to the dtype per op), measured on torch 2.13 x86 (ci profile)
CPU_LIMITS += (
    (
        lambda key, r: key == "optimizer/sgd" and r["impl"] == "fused" and r["dtype"] != "float32",
        "the CPU's fused SGD in fp16/bf16: normwise error 0.019-0.021 where the yardstick's is 0.0004 "
        "(fp16) / 0.003 (bf16): 50x and 7x",
    ),
    (
        lambda key, r: key == "optimizer/adafactor" and r["dtype"] != "float32",
        "the CPU's foreach Adafactor in fp16/bf16: normwise 0.0014-0.0095, 2.2-6.6x the yardstick's",
    ),
    (
        lambda key, r: key == "optimizer/rmsprop" and r["dtype"] == "float16" and r["options"] == "weight_decay",
        "the CPU's foreach RMSprop in fp16 with weight decay: normwise 0.0018, 2.5x the yardstick's 0.0007",
    ),
)


def cpu_limit(key: str, row: dict[str, str]) -> str | None:
    return next((why for matches, why in CPU_LIMITS if matches(key, row)), None)


def _params(scale: str) -> list[Any]:
    out = []
    for key, space in BOUNDARY_CATALOGUE.items():
        for row in space.array(scale).rows:
            row_id = boundary_row_id(row)
            feature = f"boundary/{key}[{row_id}]"
            out.append(pytest.param((key, row), id=f"{key}[{row_id}]", marks=pytest.mark.rocm_feature(feature)))
    return out


@pytest.mark.rocm_scaled("case", ci=_Rows("ci"), full=_Rows("full"))
def test_boundary(
    case: tuple[str, dict[str, str]],
    parity,
    rocm_device: torch.device,
    rocm_scale: str,
    record_property,
    request: pytest.FixtureRequest,
) -> None:
    key, row = case
    limit = cpu_limit(key, row) if rocm_device.type == "cpu" else None
    full = full_cpu_marking(key, row, rocm_device.type, rocm_scale)
    limit = limit or (full.why if full is not None else None)
    if limit is not None:
        request.applymarker(pytest.mark.xfail(reason=f"known limit of the CPU backend: {limit}", strict=False))
    family, op = key.split("/")
    record_property(INFO_PROPERTY, {"op": op, "family": family, "dims": dict(row), "scale": rocm_scale})
    if full is not None and full.crashes:  # an xfail would still run it and take the worker down
        pytest.skip(f"known limit of the CPU backend: {full.why}")
    built = BUILDERS[key](row)
    check(
        parity,
        rocm_device,
        f"{key}[{boundary_row_id(row)}]",
        built.fn,
        *built.args,
        dtype=row["dtype"],
        grad=built.grad,
        allow_vacuous=True,
        **built.options,
    )
