"""The boundary suite's rows: one builder per catalogue op, rows that build, names that stay put."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
SUITE = Path(__file__).resolve().parents[2] / "suites" / "operators"
sys.path.insert(0, str(SUITE))
# under another name: a module named test_boundary in sys.modules would clash with the suite file
# that pytester runs collect in the same process (an "import file mismatch" collection error)
_spec = importlib.util.spec_from_file_location("boundary_suite_rows", SUITE / "test_boundary.py")
assert _spec is not None and _spec.loader is not None
test_boundary = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(test_boundary)

from pytest_rocm.coverage.arrays import t_tuples_missing  # noqa: E402
from pytest_rocm.suite_support import BOUNDARY_CATALOGUE, boundary_row_id  # noqa: E402


def test_every_catalogue_op_has_a_builder() -> None:
    assert set(test_boundary.BUILDERS) == set(BOUNDARY_CATALOGUE)


@pytest.mark.parametrize("key", list(BOUNDARY_CATALOGUE))
def test_every_ci_row_builds_and_has_a_unique_name(key: str) -> None:
    space = BOUNDARY_CATALOGUE[key]
    array = space.array("ci")
    assert not array.infeasible, array.infeasible[:3]
    names = [boundary_row_id(r) for r in array.rows]
    assert len(set(names)) == len(names)
    for row in array.rows:
        case = test_boundary.BUILDERS[key](row)
        assert case.args and all(isinstance(a, torch.Tensor) for a in case.args)


def test_the_rows_are_the_same_every_time() -> None:
    space = BOUNDARY_CATALOGUE["matmul/mm"]
    assert space.array("ci").rows == space.array("ci").rows


def test_a_ci_array_is_pairwise_over_its_dimensions() -> None:
    """The property itself on a real op (brute force: the gather space is small enough)."""
    space = BOUNDARY_CATALOGUE["indexing/gather"]
    dims = space.dimensions("ci")
    assert t_tuples_missing(dims, space.array("ci").rows, 2) == []


def test_full_holds_every_triple_and_the_big_sizes() -> None:
    space = BOUNDARY_CATALOGUE["indexing/gather"]
    full = space.array("full")
    assert t_tuples_missing(space.dimensions("full"), full.rows, 3) == []
    assert any(r["size"] == "s65537" for r in full.rows)
    assert not any(r["size"] == "s65537" for r in space.array("ci").rows)


@pytest.mark.parametrize("key", ["conv/conv2d", "conv/conv3d", "conv/conv_transpose2d", "pooling/max_pool2d"])
def test_non_square_kernels_and_asymmetric_windows_reach_the_op(key: str) -> None:
    """1xk and kx1 kernels, a stride, dilation and padding that differ per dim: in ci rows, and
    passed to the op as such (not squared by the builder); real image sizes in full."""
    seen: list[tuple] = []

    class Spy(torch.utils._python_dispatch.TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func in (torch.ops.aten.convolution.default, torch.ops.aten.max_pool2d_with_indices.default):
                seen.append(tuple(tuple(a) if isinstance(a, (list, tuple)) else a for a in args[1:]))
            return func(*args, **(kwargs or {}))

    rows = BOUNDARY_CATALOGUE[key].array("ci").rows
    labels = {value for row in rows for value in row.values()}
    assert {"k1x3", "k3x1", "stride1x2", "dil2x1"} <= labels and "s224" in BOUNDARY_CATALOGUE[key].all_values()[
        "spatial"
    ]
    row = next(r for r in rows if r["kernel"] == "k1x3" and r.get("stride") == "stride1x2")
    case = test_boundary.BUILDERS[key](row)
    with Spy():
        case.fn(*case.args)
    flat = [x for call in seen for x in call]
    if key.startswith("conv/"):
        assert tuple(flat[0].shape[2:]) in {(1, 3), (1, 3, 3)}  # the weight's kernel (3-d: 1x3x3)
        assert flat[2] in {(1, 2), (1, 2, 2)}  # stride
    else:
        assert flat[0] == (1, 3) and flat[1] == (1, 2)
