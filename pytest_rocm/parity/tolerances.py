"""Per-dtype parity tolerances: the default table, how it widens with reduction length, overrides.

Torch-free on purpose: the ``tolerance`` marker is validated at collection time, and the plugin must
not import torch there. docs/parity.md explains the numbers; the short version:

* ``rtol``/``atol`` are ``torch.testing.assert_close``'s per-dtype defaults, applied per element:
  ``|got - ref| <= atol + rtol * |ref|``.
* ``normwise`` is a slack proportional to the size of the whole tensor, added to every element's
  bound: ``+ normwise * rms(ref)``. An error that is small next to the tensor's typical magnitude is
  accepted anywhere; that is what cancellation in a reduction produces (an element of a matmul that
  is near 0 carries the rounding error of its large terms). Because ``rms(ref) = ||ref|| / sqrt(n)``,
  an output that passes has a normwise relative error ``||got - ref|| / ||ref||`` of at most about
  ``normwise`` beyond the elementwise part, yet, unlike a pure normwise test, a single wrong element
  or tile still fails.
* The default ``normwise`` is ``4 * eps(dtype) + sqrt(K) * eps(accumulator)``: rounding inputs and
  output to the dtype costs a few eps of the dtype; summing K terms in the accumulator type costs
  about ``sqrt(K)`` eps of the accumulator (random-walk rounding). PyTorch accumulates float16 and
  bfloat16 in float32 ("opmath"), so their bound barely grows with K, while float32 accumulates in
  float32 and does grow. K is ``reduction_length=`` when given, otherwise inferred by assert_parity.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# -- the dtype vocabulary: the one table of dtype names, torch-free (the report's table, the suites,
# the plugin's fixtures and assert_parity all take theirs from here) ------------------------------
#: dtypes assert_parity knows, canonical names (str(torch.float16) without "torch.")
DTYPE_NAMES: tuple[str, ...] = ("float64", "float32", "float16", "bfloat16")
#: short names: what the table prints (``bf16 3.1e-03``); accepted as aliases too
DTYPE_SHORT: dict[str, str] = {"float64": "fp64", "float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}
#: what a check runs in unless told otherwise: assert_parity's default, one suite row each
DEFAULT_DTYPES: tuple[str, ...] = ("float32", "float16", "bfloat16")
#: the low-precision dtypes: what autocast and attention kernels run in, what the HTML table charts
LOW_PRECISION_DTYPES: tuple[str, ...] = ("float16", "bfloat16")

_ALIASES = {
    "double": "float64",
    "float": "float32",
    "half": "float16",
    **{short: name for name, short in DTYPE_SHORT.items()},
}

#: machine epsilon (distance from 1.0 to the next representable number)
EPS: dict[str, float] = {
    "float64": 2.0**-52,
    "float32": 2.0**-23,
    "float16": 2.0**-10,
    "bfloat16": 2.0**-7,
}

#: the type PyTorch accumulates sums and dot products of that dtype in (at::opmath_type)
ACCUMULATOR: dict[str, str] = {
    "float64": "float64",
    "float32": "float32",
    "float16": "float32",
    "bfloat16": "float32",
}

#: (rtol, atol): torch.testing.assert_close defaults for these dtypes
ELEMENTWISE_DEFAULTS: dict[str, tuple[float, float]] = {
    "float64": (1e-7, 1e-7),
    "float32": (1.3e-6, 1e-5),
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
}

#: eps(dtype) multiples for rounding inputs and outputs (measured: a K=4096 matmul in float16 or
#: bfloat16 has a normwise error of ~0.4 eps and a worst element of ~1.5 eps * rms; 4 leaves room)
ROUNDING_EPS = 4.0

TOLERANCE_KEYS: tuple[str, ...] = ("rtol", "atol", "normwise")

#: ``mode="model"``: how much worse than the yardstick (the reference computation with every op's
#: result rounded to the dtype, probe.RoundTo) a run may be, as (normwise factor, max-element factor).
#: Measured on the CPU (benchmarks/bench_parity_depth.py, docs/parity.md): the CPU's own fp16/bf16
#: kernels are 0.94-1.08x the yardstick's normwise error and 0.77-1.37x its worst element, for BERT,
#: GPT-2 and Llama of 1 to 32 layers; float32 is 1.3-3.4x (its kernels accumulate in float32, the
#: yardstick exactly: the sqrt(K) * eps(accumulator) term of the bound pays for that).
MODEL_FACTORS: tuple[float, float] = (2.0, 3.0)


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float
    normwise: float

    def as_dict(self) -> dict[str, float]:
        return {"rtol": self.rtol, "atol": self.atol, "normwise": self.normwise}


def short_dtype(name: str) -> str:
    """``float16`` -> ``fp16``; a name the table does not know stays as it is."""
    return DTYPE_SHORT.get(name, name)


def canonical_dtype(name: Any) -> str:
    """``"float16"``, ``"fp16"``, ``"half"``, ``torch.float16`` -> ``"float16"``; ValueError otherwise."""
    text = known_dtype(name)
    if text is None:
        raise ValueError(f"unknown dtype {name!r} (known: {', '.join(DTYPE_NAMES)})")
    return text


def known_dtype(name: Any) -> str | None:
    """:func:`canonical_dtype`, None for a name that is no dtype: for callers that ask of every
    word (a row name's parameters), where a raised and caught error per word is the cost."""
    text = str(name).strip().lower().removeprefix("torch.")
    text = _ALIASES.get(text, text)
    return text if text in DTYPE_NAMES else None


def default_normwise(dtype: str, reduction_length: int = 1) -> float:
    dtype = canonical_dtype(dtype)
    k = max(1, int(reduction_length))
    return ROUNDING_EPS * EPS[dtype] + math.sqrt(k) * EPS[ACCUMULATOR[dtype]]


def accumulation_slack(dtype: str, reduction_length: int = 1) -> float:
    """``sqrt(K) * eps(accumulator)``: the rounding of summing K terms, relative to the sum's size."""
    dtype = canonical_dtype(dtype)
    return math.sqrt(max(1, int(reduction_length))) * EPS[ACCUMULATOR[dtype]]


def default_tolerance(dtype: str, reduction_length: int = 1) -> Tolerance:
    dtype = canonical_dtype(dtype)
    rtol, atol = ELEMENTWISE_DEFAULTS[dtype]
    return Tolerance(rtol, atol, default_normwise(dtype, reduction_length))


def check_value(key: str, value: Any) -> float:
    """A tolerance value: a finite number >= 0 (bool is not a number here)."""
    if key not in TOLERANCE_KEYS:
        raise ValueError(f"unknown tolerance {key!r} (known: {', '.join(TOLERANCE_KEYS)})")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{key}={value!r} is not a number")
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{key}={value!r} must be a finite number >= 0")
    return float(value)


def check_overrides(spec: Mapping[str, Any], where: str = "") -> dict[str, float]:
    """Validate one override mapping (``{"rtol": .., "atol": .., "normwise": ..}``, None = unset)."""
    if not isinstance(spec, Mapping):
        raise ValueError(f"{where}tolerance override must be a mapping, got {spec!r}")
    out: dict[str, float] = {}
    for key, value in spec.items():
        if value is None:
            continue
        try:
            out[key] = check_value(key, value)
        except ValueError as exc:
            raise ValueError(f"{where}{exc}") from None
    return out


def check_per_dtype(tolerances: Mapping[Any, Mapping[str, Any]] | None) -> dict[str, dict[str, float]]:
    """``{dtype: {"rtol": ..}}`` with canonical dtype names, validated."""
    if tolerances is None:
        return {}
    if not isinstance(tolerances, Mapping):
        raise ValueError(f"tolerances must be {{dtype: {{'rtol': ..}}}}, got {tolerances!r}")
    out: dict[str, dict[str, float]] = {}
    for dtype, spec in tolerances.items():
        name = canonical_dtype(dtype)
        out.setdefault(name, {}).update(check_overrides(spec, f"tolerances[{dtype!r}]: "))
    return out


def check_periodic(periodic: float | Mapping[str, float] | None) -> dict[str, float]:
    """``{output name: period}``; a single number applies to every output (key ``*``; not the
    gradients, see :func:`periods_by_path`)."""
    if periodic is None:
        return {}
    items = dict(periodic) if isinstance(periodic, Mapping) else {"*": periodic}
    for key, value in items.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
            raise ValueError(f"periodic[{key!r}]={value!r} must be a finite period > 0")
    return {str(key): float(value) for key, value in items.items()}


def periods_by_path(periods: Mapping[str, float], paths: Sequence[str], op: str) -> dict[str, float]:
    """:func:`check_periodic`'s periods resolved to {leaf path: period} once the reference named its
    leaves. ``*`` (a single period) covers the outputs, never the gradients (``op.grad...``): a
    gradient does not wrap around, and wrapping it would hide an error of almost a whole period; a
    key naming a gradient's path still wraps that one. A key that names no leaf is a ValueError (a
    misspelt name would otherwise wrap nothing, silently)."""
    unknown = [key for key in periods if key != "*" and key not in paths]
    if unknown:
        raise ValueError(
            f"periodic names {', '.join(map(repr, unknown))}, which {'is' if len(unknown) == 1 else 'are'} "
            f"not an output of {op}; its outputs: {', '.join(paths) or '(none)'}"
        )
    out = {path: periods["*"] for path in paths if "*" in periods and not path.startswith(f"{op}.grad")}
    out.update({key: period for key, period in periods.items() if key != "*"})
    return out


def resolve(dtype: str, reduction_length: int, layers: Iterable[Mapping[str, float]]) -> Tolerance:
    """Defaults, then each layer (lowest precedence first) overriding the keys it sets."""
    values = default_tolerance(dtype, reduction_length).as_dict()
    for layer in layers:
        values.update({k: v for k, v in layer.items() if v is not None})
    return Tolerance(**values)


def parse_marker(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> tuple[str, dict[str, float]]:
    """``tolerance(dtype, rtol=.., atol=.., normwise=..)`` -> (dtype, overrides); ValueError if bad."""
    kwargs = dict(kwargs)
    if "dtype" in kwargs:
        args = (kwargs.pop("dtype"), *args)
    if len(args) != 1:
        raise ValueError(f"tolerance marker takes one dtype, got {len(args)} positional values {args!r}")
    dtype = canonical_dtype(args[0])
    overrides = check_overrides(kwargs)
    if not overrides:
        raise ValueError(f"tolerance({args[0]!r}) sets none of {', '.join(TOLERANCE_KEYS)}")
    return dtype, overrides
