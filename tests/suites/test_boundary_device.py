"""The device profile's rows on the CPU: every row's call on meta tensors of its real shapes gives
the outputs its memory cost counts; the same builders at a small size pass parity on the CPU, and
fail it when the low-precision result is broken; the suite's rows skip here naming their cost."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
SUITE = Path(__file__).resolve().parents[2] / "suites" / "operators"
sys.path.insert(0, str(SUITE))

import boundary_device  # noqa: E402

from pytest_rocm import ParityError, assert_parity  # noqa: E402
from pytest_rocm.coverage.catalogue_device import DEVICE_ROWS, DeviceRow  # noqa: E402


def small(row: DeviceRow) -> tuple[list[tuple[int, ...]], dict[str, str]]:
    """The row at a CPU size: every dimension past 64 becomes 37 (consistently: the same size
    shrinks to the same size), topk's k to 5."""
    shapes = [tuple(37 if s > 64 else s for s in t.shape) for t in row.inputs]
    dims = {**row.dims, **({"k": "k5"} if "k" in row.dims and row.op == "topk" else {})}
    return shapes, dims


@pytest.mark.parametrize("row", [r for r in DEVICE_ROWS if r.dtype == "float32"], ids=lambda r: r.feature)
def test_the_call_on_meta_tensors_gives_the_declared_outputs(row: DeviceRow) -> None:
    built = boundary_device.builder(row.key, row.dims)([t.shape for t in row.inputs], "meta")
    assert [tuple(a.shape) for a in built.args] == [t.shape for t in row.inputs]
    out = built.fn(*built.args)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    declared = [t.shape for t in row.outputs if t.kind == "row"]
    assert [tuple(o.shape) for o in outs] == declared, row.feature


@pytest.mark.parametrize(
    "row", [r for r in DEVICE_ROWS if r.dtype != "float32" or r.family in ("linalg", "fft")], ids=lambda r: r.feature
)
def test_the_builders_pass_parity_at_a_cpu_size(row: DeviceRow) -> None:
    shapes, dims = small(row)
    built = boundary_device.builder(row.key, dims)(shapes, "cpu")
    assert_parity(
        built.fn, *built.args, device="cpu", dtypes=(row.dtype,), grad=False, allow_vacuous=True, **built.options
    )


def test_a_broken_low_precision_result_fails_them() -> None:
    row = next(r for r in DEVICE_ROWS if r.key == "reductions/softmax" and r.dtype == "float16")
    shapes, dims = small(row)
    built = boundary_device.builder(row.key, dims)(shapes, "cpu")

    def wrong(x: torch.Tensor) -> torch.Tensor:
        out = built.fn(x)
        return out * 1.05 if out.dtype != torch.float64 else out

    with pytest.raises(ParityError):
        assert_parity(wrong, *built.args, device="cpu", dtypes=("float16",), grad=False, **built.options)


def test_pattern_is_exact_in_bf16_and_wraps_to_other_values() -> None:
    x = boundary_device.pattern((1000,), seed=1)
    assert torch.equal(x, x.bfloat16().float())
    assert x.mean().item() > 0  # a sum is not a cancellation to zero
    # the element 2^32 (an int32 offset wrapping) further on holds another value than this one
    assert boundary_device.PERIOD == 251 and 2**32 % 251 != 0 and 2**31 % 251 != 0
    idx = boundary_device.indices(5, 100)
    assert idx.max().item() == 99 and idx.min().item() >= 0
