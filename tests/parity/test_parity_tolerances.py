"""The tolerance table (torch-free): names, defaults, growth with K, overrides, marker parsing."""

from __future__ import annotations

import math
import sys

import pytest

from pytest_rocm.parity import tolerances as tols


@pytest.mark.parametrize(
    ("name", "canonical"),
    [
        ("float16", "float16"),
        ("fp16", "float16"),
        ("half", "float16"),
        ("BF16", "bfloat16"),
        ("float", "float32"),
        ("double", "float64"),
        ("torch.bfloat16", "bfloat16"),
    ],
)
def test_dtype_names_and_aliases(name, canonical):
    assert tols.canonical_dtype(name) == canonical


def test_unknown_dtype_names_the_value_and_the_choices():
    with pytest.raises(ValueError, match=r"unknown dtype 'int8' \(known: float64, float32, float16, bfloat16\)"):
        tols.canonical_dtype("int8")


def test_elementwise_defaults_are_assert_close_defaults():
    torch = pytest.importorskip("torch")
    from torch.testing._comparison import default_tolerances

    for name, dtype in [
        ("float16", torch.float16),
        ("bfloat16", torch.bfloat16),
        ("float32", torch.float32),
        ("float64", torch.float64),
    ]:
        assert tols.ELEMENTWISE_DEFAULTS[name] == default_tolerances(dtype)
        assert tols.EPS[name] == torch.finfo(dtype).eps


def test_normwise_grows_with_k_through_the_accumulator_only():
    k1, k4096 = tols.default_normwise("float32", 1), tols.default_normwise("float32", 4096)
    assert k4096 - k1 == pytest.approx(63 * tols.EPS["float32"])
    # fp16 accumulates in fp32: K barely matters next to fp16's own eps
    assert tols.default_normwise("float16", 4096) < 1.01 * tols.default_normwise("float16", 1)
    assert tols.default_normwise("bfloat16") == pytest.approx(4 * 2**-7 + 2**-23)


def test_resolve_applies_layers_in_order():
    tol = tols.resolve("float16", 1, [{"rtol": 0.1, "atol": 0.2}, {"rtol": 0.3}, {}])
    assert (tol.rtol, tol.atol) == (0.3, 0.2)
    assert tol.normwise == tols.default_normwise("float16")


@pytest.mark.parametrize(
    ("key", "value", "shown"),
    [
        ("rtol", -1, "rtol=-1 must be a finite number >= 0"),
        ("atol", math.inf, "atol=inf must be a finite number >= 0"),
        ("normwise", True, "normwise=True is not a number"),
        ("rtol", "1e-3", "rtol='1e-3' is not a number"),
        ("rotl", 1.0, "unknown tolerance 'rotl'"),
    ],
)
def test_bad_values(key, value, shown):
    with pytest.raises(ValueError, match=shown.replace("(", r"\(").replace(")", r"\)")):
        tols.check_value(key, value)


def test_per_dtype_overrides_name_the_dtype():
    assert tols.check_per_dtype({"fp16": {"rtol": 1e-2, "atol": None}}) == {"float16": {"rtol": 1e-2}}
    with pytest.raises(ValueError, match=r"tolerances\['bf16'\]: atol=-1"):
        tols.check_per_dtype({"bf16": {"atol": -1}})


def test_parse_marker():
    assert tols.parse_marker(("bf16",), {"rtol": 0.02}) == ("bfloat16", {"rtol": 0.02})
    assert tols.parse_marker((), {"dtype": "float16", "normwise": 0.01}) == ("float16", {"normwise": 0.01})
    with pytest.raises(ValueError, match="takes one dtype"):
        tols.parse_marker(("float16", "bfloat16"), {"rtol": 1})
    with pytest.raises(ValueError, match="sets none of"):
        tols.parse_marker(("float16",), {})


def test_table_and_plugin_do_not_import_torch():
    import subprocess

    code = (
        "import sys, pytest_rocm.parity.tolerances, pytest_rocm.plugin.fixtures, pytest_rocm.parity.result; "
        "sys.exit(1 if 'torch' in sys.modules else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
