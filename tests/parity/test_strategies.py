"""pytest_rocm.parity.strategies: tensors that respect their dtype, and property tests of parity with them."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("hypothesis")

from hypothesis import find, given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from pytest_rocm.parity.strategies import (  # noqa: E402
    PROFILE,
    matmul_shapes,
    profile_settings,
    rocm_gpu_settings,
    shapes,
    tensors,
)

fast = rocm_gpu_settings(max_examples=15)


@pytest.fixture(scope="session")
def rocm_device():
    """These property tests check parity itself: the CPU is the device under test, always."""
    return torch.device("cpu")


def test_profile_has_no_deadline_and_derandomizes_only_in_ci():
    assert profile_settings({})["deadline"] is None
    assert profile_settings({})["derandomize"] is False
    assert profile_settings({"CI": "true"})["derandomize"] is True
    assert profile_settings({"CI": "0"})["derandomize"] is False
    assert rocm_gpu_settings().deadline is None and PROFILE == "rocm-gpu"


@fast
@given(shape=shapes(max_dims=4, max_side=8, max_numel=100))
def test_shapes_respect_their_bounds(shape):
    assert 1 <= len(shape) <= 4 and all(1 <= s <= 8 for s in shape) and math.prod(shape) <= 100


@fast
@given(t=tensors("float16", min_value=-3, max_value=5))
def test_values_stay_in_range_and_dtype(t):
    assert t.dtype == torch.float16
    assert bool(torch.isfinite(t).all()) and t.min() >= -3 and t.max() <= 5


@fast
@given(t=tensors("float32", exact_in=("float16", "bfloat16")))
def test_exact_in_puts_values_on_the_low_precision_grids(t):
    for dtype in (torch.float16, torch.bfloat16):
        assert torch.equal(t.to(dtype).to(torch.float32), t)


@fast
@given(t=tensors("float32", min_value=-0.1, max_value=0.1, exact_in=("bfloat16",)))
def test_rounding_onto_a_grid_never_leaves_the_range(t):
    # 0.1 rounds to 0.10009765625 in bfloat16 and to 0.100000001 in float32: both above max_value
    assert float(t.max()) <= 0.1 and float(t.min()) >= -0.1
    assert torch.equal(t.to(torch.bfloat16).to(torch.float32), t)


def test_a_range_without_a_representable_value_is_refused():
    with pytest.raises(ValueError, match=r"no value in \[0.1001, 0.1002\] is representable in bfloat16"):
        tensors("float32", min_value=0.1001, max_value=0.1002, exact_in=("bfloat16",))


@fast
@given(t=tensors("int64", min_value=0, max_value=9, shape=(5,)))
def test_integer_tensors(t):
    assert t.dtype == torch.int64 and t.shape == (5,) and 0 <= int(t.min()) <= int(t.max()) <= 9


def test_special_values_appear_when_asked():
    found = find(tensors("float16", special_values=True), lambda t: bool(torch.isnan(t).any()))
    assert torch.isnan(found).any()
    found = find(tensors("bfloat16", special_values=True), lambda t: bool(torch.isinf(t).any()))
    assert torch.isinf(found).any()


@pytest.mark.parametrize(
    ("kw", "shown"),
    [
        (dict(dtype="float16", max_value=1e6), r"max_value=1000000.0 is not representable in float16"),
        (dict(dtype="float32", min_value=-1e5, exact_in=("float16",)), r"not representable in float32, float16"),
        (dict(dtype="float12"), r"unknown dtype 'float12'"),
        (dict(dtype="int8", max_value=300), r"does not fit int8"),
    ],
)
def test_unrepresentable_requests_are_refused(kw, shown):
    with pytest.raises(ValueError, match=shown):
        tensors(**kw)


# ---- property tests: parity of simple ops over random shapes and values ----------------------


@fast
@given(x=tensors("float32", exact_in=("float16", "bfloat16")))
def test_relu_parity(parity, x):
    parity(torch.relu, x, allow_vacuous=True)  # all-negative inputs give an all-zero reference


@fast
@given(x=tensors("float32", shape=shapes(min_dims=2), exact_in=("float16", "bfloat16")), dim=st.integers(0, 1))
def test_sum_parity(parity, x, dim):
    parity(lambda t: t.sum(dim=dim), x, name="sum", allow_vacuous=True)


@fast
@given(shapes_=matmul_shapes(max_side=16, max_k=256), data=st.data())
def test_matmul_parity(parity, shapes_, data):
    a = data.draw(tensors("float32", shapes_[0], min_value=-2, max_value=2))
    b = data.draw(tensors("float32", shapes_[1], min_value=-2, max_value=2))
    # cpu-relative: hypothesis finds structured inputs (a repeated value) whose float32 rounding
    # errors add up linearly in K instead of like sqrt(K); the same-dtype CPU run judges those fairly
    parity(torch.matmul, a, b, mode="cpu-relative", allow_vacuous=True)


@fast
@given(x=tensors("float32", exact_in=("float16",), min_value=-10, max_value=10))
def test_parity_property_catches_a_wrong_op(x):
    """The property check is not vacuous: a 1% error is found for some drawn tensor."""
    from pytest_rocm.parity.check import ParityError, assert_parity

    if float(x.abs().max()) < 1:
        return  # too small for a 1% error to exceed the float32 atol everywhere; not informative
    with pytest.raises(ParityError):
        assert_parity(lambda t: t * 1.01, x, dtypes=("float32",), reference_fn=lambda t: t * 1)
