"""Hypothesis strategies for tensors and shapes, and the ``rocm-gpu`` settings profile.

    from hypothesis import given
    from pytest_rocm.parity.strategies import rocm_gpu_settings, tensors

    @rocm_gpu_settings(max_examples=20)
    @given(x=tensors(dtype="float32", exact_in=("float16", "bfloat16")))
    def test_relu(parity, x):
        parity(torch.relu, x)

Values stay representable in the target dtype (a range that would overflow it is refused), and
``exact_in`` puts them on the grid of the low-precision dtypes a parity test casts to, so the
float64 reference sees exactly the inputs the device sees and only the op's own error is measured.
Importing this module registers the profile (and imports torch and hypothesis; the plugin never
imports it).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pytest_rocm.parity.tolerances import DTYPE_NAMES, canonical_dtype

PROFILE = "rocm-gpu"

_FLOAT: dict[str, torch.dtype] = {name: getattr(torch, name) for name in DTYPE_NAMES}
_INT = {
    "bool": torch.bool,
    "uint8": torch.uint8,
    "int8": torch.int8,
    "int16": torch.int16,
    "int32": torch.int32,
    "int64": torch.int64,
}

#: magnitude of generated values when no range is given: large enough to exercise exponents,
#: small enough that products and short sums stay finite in float16
DEFAULT_MAGNITUDE = 100.0


def profile_settings(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The rocm-gpu profile: no deadline (first kernel launches, MIOpen builds and JIT compiles take
    seconds), fewer examples (each one is device work), derandomized when ``CI`` is set so a CI
    failure reproduces and a run does not flake on a new example."""
    env = os.environ if environ is None else environ
    in_ci = env.get("CI", "").strip().lower() not in ("", "0", "false", "no")
    return {
        "deadline": None,
        "max_examples": 50,
        "derandomize": in_ci,
        "print_blob": True,
        # parity and rocm_device are function-scoped but hold nothing an example could leave behind
        "suppress_health_check": [
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.function_scoped_fixture,
        ],
    }


settings.register_profile(PROFILE, **profile_settings())


def rocm_gpu_settings(**overrides: Any) -> settings:
    """``@rocm_gpu_settings(max_examples=10)``: the profile with overrides, as a decorator."""
    return settings(settings.get_profile(PROFILE), **overrides)


def shapes(
    min_dims: int = 1, max_dims: int = 3, min_side: int = 1, max_side: int = 16, max_numel: int = 4096
) -> st.SearchStrategy[tuple[int, ...]]:
    """Tensor shapes, at most ``max_numel`` elements (keeps examples cheap)."""
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side).filter(
        lambda s: math.prod(s) <= max_numel
    )


@st.composite
def matmul_shapes(draw: st.DrawFn, max_side: int = 32, max_k: int = 512) -> tuple[tuple[int, int], tuple[int, int]]:
    """((M, K), (K, N)) for a matmul."""
    m, n = draw(st.integers(1, max_side)), draw(st.integers(1, max_side))
    k = draw(st.integers(1, max_k))
    return (m, k), (k, n)


def _dtype(name: Any) -> tuple[str, torch.dtype]:
    text = str(name).removeprefix("torch.")
    if text in _INT:
        return text, _INT[text]
    canonical = canonical_dtype(name)
    return canonical, _FLOAT[canonical]


def _float_range(
    dtype: torch.dtype, min_value: float | None, max_value: float | None, exact_in: Sequence[torch.dtype]
) -> tuple[float, float]:
    limit = min(torch.finfo(d).max for d in (dtype, *exact_in))
    lo = -DEFAULT_MAGNITUDE if min_value is None else float(min_value)
    hi = DEFAULT_MAGNITUDE if max_value is None else float(max_value)
    for key, value in (("min_value", lo), ("max_value", hi)):
        if not math.isfinite(value) or abs(value) > limit:
            names = ", ".join(str(d).removeprefix("torch.") for d in (dtype, *exact_in))
            raise ValueError(f"{key}={value!r} is not representable in {names} (max {limit:g})")
    if lo > hi:
        raise ValueError(f"min_value={lo!r} > max_value={hi!r}")
    return lo, hi


def _special_values(dtype: torch.dtype) -> list[float]:
    info = torch.finfo(dtype)
    return [
        0.0,
        -0.0,
        math.nan,
        math.inf,
        -math.inf,
        info.max,
        -info.max,
        info.tiny,
        info.smallest_normal / 4,
    ]  # the last one is subnormal in the dtype


def _on_grid(values: torch.Tensor, dtypes: Sequence[torch.dtype]) -> torch.Tensor:
    """Round to values that every dtype in ``dtypes`` represents exactly (twice: one pass per dtype
    can move a value off another's grid, the second pass settles it)."""
    for _ in range(2):
        for d in dtypes:
            values = values.to(d).to(torch.float64)
    return values


def _grid_bounds(lo: float, hi: float, dtypes: Sequence[torch.dtype]) -> tuple[float, float]:
    """The smallest and largest values in [lo, hi] that every dtype represents exactly: rounding
    a drawn value onto the grids can step past a bound (0.1 in bfloat16 is 0.10009765625), and
    clamping to these keeps it inside without leaving the grids."""
    bounds = _on_grid(torch.tensor([lo, hi], dtype=torch.float64), dtypes)
    coarsest = max(dtypes, key=lambda d: torch.finfo(d).eps)
    for i, (limit, inward) in enumerate(((lo, math.inf), (hi, -math.inf))):
        for _ in range(8):  # one step along the coarsest grid is enough in practice
            if (float(bounds[i]) >= limit) if i == 0 else (float(bounds[i]) <= limit):
                break
            step = torch.nextafter(bounds[i : i + 1].to(coarsest), torch.tensor([inward], dtype=coarsest))
            bounds[i] = _on_grid(step.to(torch.float64), dtypes)[0]
    low, high = float(bounds[0]), float(bounds[1])
    if low > high:
        names = ", ".join(str(d).removeprefix("torch.") for d in dtypes)
        raise ValueError(f"no value in [{lo!r}, {hi!r}] is representable in {names}")
    return low, high


def tensors(
    dtype: Any = "float32",
    shape: Any = None,
    *,
    min_value: float | None = None,
    max_value: float | None = None,
    special_values: bool = False,
    exact_in: Sequence[Any] = (),
    device: Any = "cpu",
) -> st.SearchStrategy[torch.Tensor]:
    """Tensors of ``dtype`` with a shape drawn from ``shape`` (a strategy or a fixed tuple;
    default :func:`shapes`), values in [min_value, max_value] (default ±100).

    ``special_values=True`` mixes in 0, -0, nan, ±inf, ±max, the smallest normal and a subnormal of
    the dtype. ``exact_in=("float16", "bfloat16")`` rounds values onto those dtypes' grids. Integer
    dtypes (int8..int64, uint8, bool) draw integers in range.
    """
    name, torch_dtype = _dtype(dtype)
    shape_strategy = (
        shapes() if shape is None else (shape if isinstance(shape, st.SearchStrategy) else st.just(tuple(shape)))
    )
    if name in _INT:
        return _int_tensors(torch_dtype, shape_strategy, min_value, max_value, device)
    grids = [_dtype(d)[1] for d in exact_in]
    lo, hi = _float_range(torch_dtype, min_value, max_value, grids)
    # values are rounded onto the dtypes' grids, then kept inside [lo, hi] on those grids
    low, high = _grid_bounds(lo, hi, [*grids, torch_dtype])
    elements: st.SearchStrategy[float] = st.floats(lo, hi, allow_nan=False, allow_infinity=False)
    if special_values:
        elements = st.one_of(elements, st.sampled_from(_special_values(torch_dtype)))

    @st.composite
    def build(draw: st.DrawFn) -> torch.Tensor:
        arr = draw(hnp.arrays(np.float64, draw(shape_strategy), elements=elements))
        values = torch.from_numpy(np.ascontiguousarray(arr))
        finite = torch.isfinite(values)  # special values (nan, inf, max) are kept as drawn
        on_grid = _on_grid(values, [*grids, torch_dtype]).clamp(low, high)
        values = torch.where(finite & (values >= lo) & (values <= hi), on_grid, values)
        return values.to(device=device, dtype=torch_dtype)

    return build()


def _int_tensors(
    dtype: torch.dtype,
    shape_strategy: st.SearchStrategy[tuple[int, ...]],
    min_value: float | None,
    max_value: float | None,
    device: Any,
) -> st.SearchStrategy[torch.Tensor]:
    info = (0, 1) if dtype == torch.bool else (torch.iinfo(dtype).min, torch.iinfo(dtype).max)
    lo = info[0] if min_value is None else int(min_value)
    hi = info[1] if max_value is None else int(max_value)
    if lo < info[0] or hi > info[1] or lo > hi:
        raise ValueError(f"range [{lo}, {hi}] does not fit {str(dtype).removeprefix('torch.')} {list(info)}")

    @st.composite
    def build(draw: st.DrawFn) -> torch.Tensor:
        arr = draw(hnp.arrays(np.int64, draw(shape_strategy), elements=st.integers(lo, hi)))
        return torch.from_numpy(np.ascontiguousarray(arr)).to(device=device, dtype=dtype)

    return build()
