"""assert_parity on what it cannot judge as floats: a bool output is compared exactly; a sparse,
meta or nested tensor (input or output) is one clear ValueError naming it; complex input is
compared as complex (complex128 reference, complex64 and complex32 runs) and bfloat16, which has
no complex dtype in torch, is unsupported: never a record of error 0 claiming a dtype ran."""

from __future__ import annotations

import pytest
import torch

from pytest_rocm import DtypeUnsupported, ParityError, assert_parity


def test_a_bool_output_is_compared_exactly() -> None:
    x = torch.linspace(-1, 1, 9)
    result = assert_parity(lambda t: t > 0, x, device="cpu")
    assert {c.dtype for c in result.comparisons} == {"float32", "float16", "bfloat16"}
    assert all(c.ok and c.n_bad == 0 for c in result.comparisons)
    # a mask that differs in a low-precision dtype is caught, not crashed on
    with pytest.raises(ParityError) as info:
        assert_parity(lambda t: t > 0.3 if t.dtype == torch.float16 else t > 0, x, device="cpu")
    bad = [c for c in info.value.result.comparisons if not c.ok]
    assert [c.dtype for c in bad] == ["float16"] and bad[0].kind == "mismatch"


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda: torch.randn(4, 4).to_sparse(), "is a sparse tensor (torch.sparse_coo)"),
        (lambda: torch.randn(4, 4).to_sparse_csr(), "is a sparse tensor (torch.sparse_csr)"),
        (lambda: torch.empty(4, device="meta"), "is a meta tensor"),
    ],
    ids=["sparse coo", "sparse csr", "meta"],
)
@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta")
def test_an_input_it_cannot_judge_is_one_clear_error(make, words: str) -> None:
    with pytest.raises(ValueError, match="argument 0 " + words.replace("(", r"\(").replace(")", r"\)")):
        assert_parity(lambda t: t * 2, make(), device="cpu", name="double")
    with pytest.raises(ValueError, match="assert_parity\\(double\\): x " + words.split(" (")[0]):
        assert_parity(lambda x: x * 2, kwargs={"x": make()}, device="cpu", name="double")


def test_an_input_nested_in_a_list_is_found() -> None:
    with pytest.raises(ValueError, match="argument 1 is a meta tensor"):
        assert_parity(lambda a, b: a + b[0], torch.ones(3), [torch.empty(3, device="meta")], device="cpu")


def test_an_output_it_cannot_judge_is_one_clear_error() -> None:
    with pytest.raises(ValueError, match=r"output sparse_double is a sparse tensor \(torch.sparse_coo\)"):
        assert_parity(lambda t: (t * 2).to_sparse(), torch.randn(4, 4), device="cpu", name="sparse_double")
    with pytest.raises(ValueError, match=r"output to_meta\[1\] is a meta tensor"):
        assert_parity(lambda t: (t, t.to("meta")), torch.randn(4), device="cpu", name="to_meta")


def test_complex_is_compared_as_complex_and_bfloat16_is_unsupported() -> None:
    z = torch.randn(16, dtype=torch.complex64)
    with pytest.raises(DtypeUnsupported) as info:
        assert_parity(lambda t: t * (1 + 2j), z, device="cpu")
    assert set(info.value.dtypes) == {"bfloat16"} and "no complex bfloat16" in info.value.dtypes["bfloat16"]
    ran = {c.dtype: c for c in info.value.result.comparisons}
    assert set(ran) == {"float32", "float16"} and all(c.ok for c in ran.values())
    assert ran["float16"].max_abs > 0  # complex32 rounding: it really ran in half precision
    assert ran["float32"].max_abs < ran["float16"].max_abs
    # only the dtypes that exist for complex: a pass
    result = assert_parity(lambda t: t * (1 + 2j), z, device="cpu", dtypes=("float32", "float16"))
    assert [c.numel for c in result.comparisons] == [32, 32]  # real and imaginary parts


def test_a_wrong_complex_result_is_caught() -> None:
    z = torch.randn(16, dtype=torch.complex64)

    def conj_in_low_precision(t: torch.Tensor) -> torch.Tensor:
        return t.conj() if t.dtype == torch.complex64 else t  # the imaginary part flips in complex64

    with pytest.raises(ParityError) as info:
        assert_parity(conj_in_low_precision, z, device="cpu", dtypes=("float32",))
    assert info.value.result.comparisons[0].kind == "mismatch"


def test_a_zero_gradient_autograd_returns_as_a_zerotensor_is_compared() -> None:
    """sgn's gradient is autograd's immutable ZeroTensor in both runs: the comparison computed
    |got - ref| in place and raised "ZeroTensors are immutable" (the corpus's sgn row)."""
    x = torch.tensor([-1.5, 0.5, 2.0])
    for mode in ("model", "cpu-relative"):
        result = assert_parity(
            torch.sgn, x, grad=True, device="cpu", dtypes=("float32",), mode=mode, allow_vacuous=True
        )
        assert result.ok and any(c.name.endswith("grad[0]") for c in result.comparisons)
