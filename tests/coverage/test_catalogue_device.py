"""The device profile's rows: generated from size rules, each past the limit it names, each with a
memory cost computed from its shapes and dtype (pure: no torch)."""

from __future__ import annotations

import math

import pytest

from pytest_rocm.coverage.catalogue import CATALOGUE
from pytest_rocm.coverage.catalogue_device import (
    DEVICE_ROWS,
    GRID_LIMIT,
    INT32_LIMIT,
    DeviceRow,
    TensorSpec,
    device_rows,
    gib,
)


def crossed(row: DeviceRow) -> set[str]:
    """The limits the row's shapes cross, measured from the shapes alone."""
    tensors = (*row.inputs, *row.outputs)
    found = set()
    if any(t.numel > INT32_LIMIT for t in tensors):
        found.add("int32 elements")
    if any(len(t.shape) >= 3 and t.shape[0] > GRID_LIMIT for t in tensors) or (
        row.family == "conv" and row.inputs[0].shape[0] > GRID_LIMIT
    ):
        found.add("batch past the grid")
    rows_ = [t for t in row.inputs if t.kind == "row" and len(t.shape) == 2]
    if row.family == "indexing" and any((t.shape[0] - 1) * t.shape[1] >= INT32_LIMIT for t in rows_):
        found.add("index offset past int32")
    if row.key == "matmul/mm" and math.ceil(row.outputs[0].shape[-1] / 64) > GRID_LIMIT:
        found.add("column tiles past the grid")
    if row.family in ("fft", "sorting") and max(t.shape[-1] for t in row.inputs) > 2**27:
        found.add("long transform or segment")
    return found


@pytest.mark.parametrize("row", DEVICE_ROWS, ids=lambda r: r.feature)
def test_every_row_crosses_a_limit_a_cpu_row_does_not(row: DeviceRow) -> None:
    assert crossed(row), f"{row.feature}: no tensor past 2^31 elements, no batch past 65,535 ({row.crosses})"


def test_the_families_the_issue_names_are_there() -> None:
    by_key: dict[str, set[str]] = {}
    for row in DEVICE_ROWS:
        by_key.setdefault(row.key, set()).update(crossed(row))
    for key in ("elementwise/add", "elementwise/exp", "reductions/sum", "reductions/softmax", "norm/layer_norm"):
        assert "int32 elements" in by_key[key], key
    for key in ("matmul/bmm", "matmul/baddbmm", "linalg/solve", "conv/conv2d"):
        assert "batch past the grid" in by_key[key], key
    assert "index offset past int32" in by_key["indexing/embedding"]
    assert {"fft/fft", "fft/rfft", "fft/ifft", "sorting/sort", "sorting/topk"} <= set(by_key)
    # every family of the device profile is a family of the generator's catalogue
    assert {r.family for r in DEVICE_ROWS} <= {k.split("/")[0] for k in CATALOGUE}


def test_ids_are_unique_and_name_sizes_then_dtype() -> None:
    features = [r.feature for r in DEVICE_ROWS]
    assert len(set(features)) == len(features)
    row = next(r for r in DEVICE_ROWS if r.key == "reductions/softmax" and r.dtype == "float16")
    assert row.feature == "boundary/reductions/softmax[r65537-l32769-float16]"
    assert row.dims == {"rows": "r65537", "length": "l32769", "dtype": "float16"}
    assert device_rows() == list(DEVICE_ROWS)  # generated, the same every time


def test_cost_is_inputs_outputs_and_the_float64_reference() -> None:
    n = INT32_LIMIT + 1
    exp16 = next(r for r in DEVICE_ROWS if r.key == "elementwise/exp" and r.dtype == "float16")
    cost = exp16.cost()
    assert cost.device_bytes == 2 * n + 2 * n  # input and output in fp16
    # float32 input + its float64 copy + float64 reference output + device output widened to float64
    assert cost.host_bytes == 4 * n + 8 * n + 8 * n + 8 * n
    add32 = next(r for r in DEVICE_ROWS if r.key == "elementwise/add" and r.dtype == "float32")
    assert add32.cost().device_bytes == 3 * 4 * n
    # an index tensor costs int64 on both sides, whatever the row's dtype
    emb = DeviceRow(
        "indexing",
        "embedding",
        (("v", "v4"),),
        "float16",
        (TensorSpec((3,), "int64"), TensorSpec((4, 2))),
        (TensorSpec((3, 2)),),
        "",
    )
    assert emb.cost().device_bytes == 3 * 8 + 8 * 2 + 6 * 2
    assert emb.cost().host_bytes == 3 * 8 + 8 * (4 + 8) + 2 * 6 * 8


def test_cost_text_never_reads_zero() -> None:
    assert gib(3 * 2**30) == "3.0 GiB"
    assert gib(5 * 2**20) == "5.0 MiB"
    small = next(r for r in DEVICE_ROWS if r.key == "linalg/inv")
    assert "0.0" not in small.cost().text()


def test_the_last_rounds_gpu_only_classes_are_reached() -> None:
    """The three public classes the CPU profiles could not reach (docs/coverage.md): batched
    linalg.solve past 65,536 matrices (pytorch#196745), getrf on huge batches of small matrices
    (rocSOLVER#987), layer_norm past 2^23 rows with features % 4 != 0 (pytorch#184826)."""
    shapes = {(r.key, r.inputs[0].shape) for r in DEVICE_ROWS}
    assert any(k == "linalg/solve" and s[0] > 65536 for k, s in shapes)
    assert any(k == "linalg/lu_factor" and s[0] > 65536 and s[-1] <= 8 for k, s in shapes)
    assert any(k == "norm/layer_norm" and s[0] >= 2**23 and s[1] % 4 for k, s in shapes)
