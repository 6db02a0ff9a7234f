"""assert_parity on the CPU: the checks catch wrong numbers, and only wrong numbers."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from pytest_rocm.parity.check import DtypeUnsupported, ParityError, ParityResult, assert_parity  # noqa: E402


@pytest.fixture
def x() -> torch.Tensor:
    return torch.randn(2000, generator=torch.Generator().manual_seed(1))


def off_by_half_percent(t: torch.Tensor) -> torch.Tensor:
    return t * 1.005


def identity(t: torch.Tensor) -> torch.Tensor:
    return t * 1


# ---- catching wrong numbers ------------------------------------------------------------------


def test_half_percent_error_fails_in_float32(x):
    # the CPU is the device here, so the wrong device is simulated by a wrong fn against a right reference
    with pytest.raises(ParityError) as info:
        assert_parity(off_by_half_percent, x, dtypes=("float32",), reference_fn=identity)
    assert info.value.kind == "mismatch"
    c = info.value.result["float32"]
    assert not c.ok and c.n_bad > 0
    assert c.max_rel == pytest.approx(0.005, rel=1e-3)
    assert isinstance(info.value, AssertionError)


def test_same_fn_and_reference_pass(x):
    result = assert_parity(identity, x)
    assert result.ok and [c.dtype for c in result.comparisons] == ["float32", "float16", "bfloat16"]


def test_half_percent_error_fails_in_cpu_relative_mode(x):
    with pytest.raises(ParityError) as info:
        assert_parity(
            off_by_half_percent,
            x,
            dtypes=("float32", "float16"),
            mode="cpu-relative",
            reference_fn=identity,
            baseline=identity,
        )
    c = info.value.result["float32"]
    assert not c.ok and c.mode == "cpu-relative" and c.cpu_max_abs is not None


def accumulate_rows(t: torch.Tensor) -> torch.Tensor:
    """Sums the rows one by one in the input's own dtype: lossy in float16 on any device."""
    total = torch.zeros_like(t[0])
    for row in t:
        total = total + row
    return total


def test_cpu_relative_accepts_a_lossy_dtype_that_absolute_rejects():
    rows = torch.rand(1024, 32, generator=torch.Generator().manual_seed(2))
    with pytest.raises(ParityError) as info:
        assert_parity(accumulate_rows, rows, dtypes=("float16",))
    assert info.value.kind == "mismatch"
    result = assert_parity(accumulate_rows, rows, dtypes=("float16",), mode="cpu-relative")
    c = result["float16"]
    assert c.ok and c.cpu_max_abs == pytest.approx(c.max_abs)  # same computation, same error
    assert result.records()[0]["cpu_factor"] == 2.0


def test_float16_overflow_is_non_finite(x):
    with pytest.raises(ParityError) as info:
        assert_parity(lambda t: t * 70000, x, name="scale")
    err = info.value
    assert err.kind == "non-finite"
    assert err.result["float16"].kind == "non-finite"
    assert err.result["float32"].ok and err.result["bfloat16"].ok  # bf16 has fp32's range
    assert "non-finite" in str(err) and "float16" in str(err)


def test_long_matmul_passes_with_defaults_and_needs_the_normwise_term():
    gen = torch.Generator().manual_seed(3)
    a, b = torch.randn(16, 4096, generator=gen), torch.randn(4096, 16, generator=gen)
    result = assert_parity(torch.matmul, a, b)
    assert result.ok
    # without the normwise slack the elementwise check alone rejects it: cancellation near 0
    with pytest.raises(ParityError) as info:
        assert_parity(torch.matmul, a, b, dtypes=("float16", "bfloat16"), normwise=0)
    assert info.value.kind == "mismatch"


def test_one_wrong_element_fails_even_when_normwise_is_tiny():
    t = torch.randn(100_000, generator=torch.Generator().manual_seed(4))

    def one_bad(u: torch.Tensor) -> torch.Tensor:
        u = u.clone()
        u[777] += 3.0
        return u

    with pytest.raises(ParityError) as info:
        assert_parity(one_bad, t, dtypes=("bfloat16",), reference_fn=identity)
    c = info.value.result["bfloat16"]
    assert c.n_bad == 1 and c.worst[0] == (777,) and c.normwise < 0.02


def test_in_place_fn_does_not_poison_the_reference(x):
    acc = torch.zeros_like(x)
    original = x.clone()

    def accumulate(t: torch.Tensor, into: torch.Tensor) -> torch.Tensor:
        into.add_(t)
        t.mul_(2)
        return into.clone()

    result = assert_parity(accumulate, x, acc)
    assert result.ok
    assert torch.equal(x, original) and not acc.any()  # the caller's tensors are untouched


def test_vacuous_reference(x):
    with pytest.raises(ParityError) as info:
        assert_parity(lambda t: t * 1e-9, x, dtypes=("float32",))
    assert info.value.kind == "vacuous"
    result = assert_parity(lambda t: t * 1e-9, x, dtypes=("float32",), allow_vacuous=True)
    assert result.ok and result.records()[0]["kind"] == "vacuous"


def test_wrong_gradient_fails_with_grad_suffix(x):
    def bad_backward(t: torch.Tensor) -> torch.Tensor:
        return t + (t * 0.01 - (t * 0.01).detach())  # forward is t, gradient is 1.01

    assert_parity(bad_backward, x, dtypes=("float32",), reference_fn=identity)  # forward only: fine
    with pytest.raises(ParityError) as info:
        assert_parity(bad_backward, x, dtypes=("float32",), reference_fn=identity, grad=True, name="f")
    bad = info.value.result.failures
    assert [c.name for c in bad] == ["f.grad[0]"]


def test_grad_of_correct_fn_passes_for_every_input():
    gen = torch.Generator().manual_seed(5)
    a, b = torch.randn(8, 256, generator=gen), torch.randn(256, 8, generator=gen)
    result = assert_parity(torch.matmul, a, b, grad=True)
    assert {c.name for c in result.comparisons} == {"matmul", "matmul.grad[0]", "matmul.grad[1]"}


# ---- outputs of every shape ------------------------------------------------------------------


def test_nested_outputs_are_compared_by_path(x):
    def many(t):
        return {"sum": t.sum(), "parts": (t.relu(), [t.abs()])}

    result = assert_parity(many, x, dtypes=("float32",), name="many")
    assert sorted(c.name for c in result.comparisons) == ["many['parts'][0]", "many['parts'][1][0]", "many['sum']"]


def test_integer_outputs_are_compared_exactly():
    t = torch.arange(64, dtype=torch.float32).reshape(8, 8).flip(1)  # distinct, exact in every dtype
    result = assert_parity(lambda u: u.topk(3, dim=1).indices, t)
    assert result.ok and result["bfloat16"].rtol == 0.0

    def off_by_one(u):
        idx = u.argmax(dim=1)
        return idx if u.dtype == torch.float64 else idx + 1

    with pytest.raises(ParityError) as info:
        assert_parity(off_by_one, t, dtypes=("float16",))
    assert info.value.kind == "mismatch" and info.value.result["float16"].n_bad == 8


def test_module_is_cast_per_run():
    torch.manual_seed(6)
    layer = torch.nn.Linear(64, 32)
    before = layer.weight.detach().clone()
    result = assert_parity(layer, torch.randn(4, 64))
    assert result.ok and result.name == "Linear"
    assert layer.weight.dtype == torch.float32 and torch.equal(layer.weight, before)


def test_metrics_match_a_direct_computation(x):
    result = assert_parity(off_by_half_percent, x, dtypes=("float32",), reference_fn=identity, rtol=0.01)
    c = result["float32"]
    got, ref = (x * 1.005).double(), x.double()
    d = (got - ref).abs()
    assert c.max_abs == pytest.approx(float(d.max()), rel=1e-6)
    assert c.normwise == pytest.approx(float(d.norm() / ref.norm()), rel=1e-6)
    assert c.numel == x.numel() and c.n_bad == 0


# ---- tolerances per call ---------------------------------------------------------------------


def test_tolerance_overrides_and_precedence(x):
    kw = dict(dtypes=("float32",), reference_fn=identity)
    assert assert_parity(off_by_half_percent, x, rtol=0.01, **kw).ok
    assert assert_parity(off_by_half_percent, x, tolerances={"fp32": {"rtol": 0.01}}, **kw).ok
    # per-dtype tolerances beat the all-dtype value, which beats default_tolerances (markers)
    with pytest.raises(ParityError):
        assert_parity(off_by_half_percent, x, rtol=0.01, tolerances={"float32": {"rtol": 1e-6}}, **kw)
    with pytest.raises(ParityError):
        assert_parity(off_by_half_percent, x, rtol=1e-6, default_tolerances={"float32": {"rtol": 0.01}}, **kw)
    assert assert_parity(off_by_half_percent, x, default_tolerances={"float32": {"rtol": 0.01}}, **kw).ok


def test_reduction_length_widens_float32_normwise(x):
    small = assert_parity(identity, x, dtypes=("float32",), reduction_length=1)["float32"]
    large = assert_parity(identity, x, dtypes=("float32",), reduction_length=10_000)["float32"]
    assert large.normwise_tol > small.normwise_tol
    inferred = assert_parity(identity, x, dtypes=("float32",))["float32"]
    assert small.normwise_tol < inferred.normwise_tol < large.normwise_tol  # K = 2000


# ---- the call and its options: both forms -----------------------------------------------------


def test_an_options_object_judges_as_the_same_keywords_do(x):
    from pytest_rocm import ParityOptions

    lenient = ParityOptions(dtypes=("float32",), reference_fn=identity, rtol=0.01)
    assert assert_parity(off_by_half_percent, x, options=lenient).ok
    assert assert_parity(off_by_half_percent, x, dtypes=("float32",), reference_fn=identity, rtol=0.01).ok
    strict = ParityOptions(dtypes=("float32",), reference_fn=identity)
    with pytest.raises(ParityError):
        assert_parity(off_by_half_percent, x, options=strict)
    # a keyword of the call overrides the same field of the options; the object is left as it was
    assert assert_parity(off_by_half_percent, x, options=strict, rtol=0.01).ok
    with pytest.raises(ParityError):
        assert_parity(off_by_half_percent, x, options=lenient, rtol=1e-6)
    assert lenient.rtol == 0.01
    result = assert_parity(identity, x, options=ParityOptions(dtypes="bfloat16"), name="ident")
    assert (result.name, [c.dtype for c in result.comparisons]) == ("ident", ["bfloat16"])


def test_an_unknown_keyword_is_a_type_error_naming_it(x):
    with pytest.raises(TypeError, match="unexpected keyword argument 'rtl'"):
        assert_parity(identity, x, rtl=0.1)  # type: ignore[call-arg]


def test_the_parity_fixture_takes_both_forms(pytester):
    pytester.makepyfile(
        """
        import pytest
        from pytest_rocm import ParityError, ParityOptions

        def off(t):
            return t * 1.005

        def ident(t):
            return t * 1

        @pytest.mark.rocm_tolerance("float32", rtol=0.01)
        def test_marker_and_options(parity):
            import torch
            x = torch.randn(100, generator=torch.Generator().manual_seed(1))
            parity(off, x, options=ParityOptions(dtypes=("float32",), reference_fn=ident))
            parity(off, x, dtypes=("float32",), reference_fn=ident)
            with pytest.raises(ParityError):  # the call's rtol beats the marker, in either form
                parity(off, x, options=ParityOptions(dtypes=("float32",), reference_fn=ident, rtol=1e-6))
            with pytest.raises(ParityError):
                parity(off, x, dtypes=("float32",), reference_fn=ident, rtol=1e-6)
        """
    )
    pytester.runpytest("--rocm-device=cpu", "-p", "no:randomly").assert_outcomes(passed=1)


# ---- bad input -------------------------------------------------------------------------------


def test_unknown_dtype_is_a_clear_error(x):
    with pytest.raises(ValueError, match=r"unknown dtype 'float17' \(known: float64, float32"):
        assert_parity(identity, x, dtypes=("float17",))


@pytest.mark.parametrize(
    "bad",
    [
        dict(rtol=-1),
        dict(atol="big"),
        dict(normwise=math.nan),
        dict(tolerances={"float32": {"rtl": 1}}),
        dict(mode="relative"),
    ],
)
def test_bad_options_are_clear_errors(x, bad):
    with pytest.raises(ValueError, match=r"rtol=-1|atol='big'|normwise=nan|'rtl'|mode='relative'"):
        assert_parity(identity, x, **bad)


def test_fn_returning_a_non_tensor_is_a_structure_error(x):
    with pytest.raises(ParityError, match=r"fn returned float 1\.5.*compares tensors") as info:
        assert_parity(lambda t: (t, 1.5), x)
    assert info.value.kind == "structure"


def test_mismatched_shapes_are_a_structure_error(x):
    def shorter_in_low_precision(t):
        return t if t.dtype == torch.float64 else t[:-1]

    with pytest.raises(ParityError, match=r"got \(1999,\).*reference \(2000,\)") as info:
        assert_parity(shorter_in_low_precision, x)
    assert info.value.kind == "structure"


def test_mismatched_keys_are_a_structure_error(x):
    def keys(t):
        return {"a": t} if t.dtype == torch.float64 else {"b": t}

    with pytest.raises(ParityError, match=r"missing keys\['a'\]") as info:
        assert_parity(keys, x, dtypes=("float32",), name="keys")
    assert info.value.kind == "structure"


# ---- dtypes the op does not implement --------------------------------------------------------


def test_unsupported_dtype_is_its_own_exception():
    t = torch.rand(50, generator=torch.Generator().manual_seed(7)) * 5
    with pytest.raises(DtypeUnsupported) as info:
        assert_parity(torch.special.bessel_j0, t)  # no Half/BFloat16 kernel on the CPU
    err = info.value
    assert set(err.dtypes) == {"float16", "bfloat16"} and err.backend == "cpu"
    assert "not implemented for 'Half'" in err.dtypes["float16"]
    assert err.result is not None and err.result["float32"].ok


def test_a_failure_beats_an_unsupported_dtype():
    t = torch.rand(50, generator=torch.Generator().manual_seed(7)) * 5
    with pytest.raises(ParityError) as info:
        assert_parity(lambda u: torch.special.bessel_j0(u) * 1.01, t, reference_fn=torch.special.bessel_j0)
    assert set(info.value.result.unsupported) == {"float16", "bfloat16"}
    assert "unsupported" in str(info.value)


def test_other_runtime_errors_propagate(x):
    def broken(t):
        raise RuntimeError("shape '[3]' is invalid")

    with pytest.raises(RuntimeError, match="is invalid"):
        assert_parity(broken, x)


# ---- the result ------------------------------------------------------------------------------


def test_records_follow_the_report_schema(x):
    result = assert_parity(identity, x, name="id")
    assert isinstance(result, ParityResult)
    records = result.records()
    assert len(records) == 3
    for rec in records:
        assert list(rec)[:12] == [
            "dtype",
            "max_abs",
            "max_rel",
            "normwise",
            "rtol",
            "atol",
            "ok",
            "name",
            "kind",
            "n_bad",
            "mode",
            "normwise_tol",
        ]
    json.dumps(records)  # serialisable as is


def test_failure_table_has_a_row_per_dtype_with_the_worst_element(x):
    with pytest.raises(ParityError) as info:
        assert_parity(off_by_half_percent, x, reference_fn=identity, name="scaled")
    text = str(info.value)
    lines = text.splitlines()
    assert lines[0].startswith("parity mismatch: scaled on cpu")
    assert [line.split()[0] for line in lines[2:5]] == ["float32", "float16", "bfloat16"]
    worst = info.value.result["float32"].worst
    assert f"[{worst[0][0]}]" in lines[2]
    # the worst element's two values are shown with the digits that tell them apart
    got, expected = re.search(r"\] (\S+) vs (\S+)", lines[2]).groups()
    assert got != expected and float(got) == pytest.approx(worst[1], rel=1e-2)


@pytest.mark.parametrize(
    "message",
    [
        "\"linalg_eigh_cpu\" not implemented for 'Half'",  # texts torch 2.x raises on the CPU
        "Unsupported dtype Half",
        "linalg.inv: Low precision dtypes not supported. Got Half",
    ],
)
def test_unsupported_dtype_messages_are_recognised(x, message):
    def no_half(t):
        if t.dtype == torch.float16:
            raise NotImplementedError(message)
        return t * 1

    with pytest.raises(DtypeUnsupported) as info:
        assert_parity(no_half, x, name="op")
    assert list(info.value.dtypes) == ["float16"] and info.value.op == "op"


def test_dtype_mixups_in_fn_are_not_taken_for_unsupported(x):
    def mixes(t):
        return torch.matmul(t.reshape(1, -1), torch.ones(t.numel(), 1))  # float32 weight

    with pytest.raises(RuntimeError, match=r"dtype|scalar type") as info:
        assert_parity(mixes, x, dtypes=("float16",))
    assert not isinstance(info.value, DtypeUnsupported)


def test_non_finite_reference_values_must_be_matched_exactly():
    t = torch.tensor([0.0, 1.0, -2.0, 4.0])
    result = assert_parity(lambda u: (1 / u, u.log()), t, name="f")  # inf and nan in the reference
    assert result.ok

    def finite_instead_of_nan(u):
        out = u.log()
        return out if u.dtype == torch.float64 else torch.nan_to_num(out)

    with pytest.raises(ParityError) as info:
        assert_parity(finite_instead_of_nan, t, dtypes=("float32",))
    c = info.value.result["float32"]
    assert c.kind == "mismatch" and c.n_bad == 2  # log(0) = -inf and log(-2) = nan both replaced
    assert c.worst[0] == (0,) and c.worst[2] == -math.inf


# --- periodic= and gradients, periodic= keys ---------------------------------------------------------
#: almost one period of 1.0: wrapped, a gradient off by this reads as off by 2**-22
_NEAR_PERIOD = 1.0 - 2.0**-22


class _FracWithGradOff(torch.autograd.Function):
    """3x mod 1, exact forward; below float64 its backward is off by almost one period."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.off = x.dtype != torch.float64
        return torch.remainder(3 * x, 1.0)

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> torch.Tensor:
        return 3 * g + (_NEAR_PERIOD if ctx.off else 0.0)


def frac(x: torch.Tensor) -> torch.Tensor:
    return _FracWithGradOff.apply(x)


def test_a_single_period_does_not_wrap_the_gradients() -> None:
    """Gradients are not periodic: ``periodic=1.0`` wrapped ``frac.grad[0]`` too and passed a
    gradient wrong by almost a whole period. A key naming the gradient's path still wraps it."""
    x = torch.linspace(0.05, 0.3, 16)
    with pytest.raises(ParityError, match=r"frac\.grad\[0\]"):
        assert_parity(frac, x, dtypes=("float32",), grad=True, periodic=1.0)
    with pytest.raises(ParityError, match=r"frac\.grad\[0\]"):
        assert_parity(frac, x, dtypes=("float32",), grad=True, periodic={"*": 1.0})
    result = assert_parity(frac, x, dtypes=("float32",), grad=True, periodic={"frac": 1.0, "frac.grad[0]": 1.0})
    assert result.ok


def test_a_periodic_key_that_names_no_output_is_an_error() -> None:
    """``periodic={"fraq": 1.0}`` for an output named ``frac`` wrapped nothing, silently."""
    x = torch.linspace(0.05, 0.3, 16)
    with pytest.raises(ValueError, match=r"periodic names 'fraq'.*not an output of frac; its outputs: frac$"):
        assert_parity(frac, x, dtypes=("float16", "float32"), periodic={"fraq": 1.0})
    with pytest.raises(ValueError, match=r"'fraq'.*its outputs: frac, frac\.grad\[0\]$"):
        assert_parity(frac, x, dtypes=("float32",), grad=True, periodic={"frac": 1.0, "fraq": 1.0})
