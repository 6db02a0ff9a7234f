"""How ``assert_parity`` judges, apart from what it calls: one small frozen object.

``assert_parity(fn, *args, kwargs=..., device=..., name=..., options=ParityOptions(...))`` takes
the call and these options; each option may also be given as a keyword of the call
(``assert_parity(fn, x, dtypes=("bfloat16",), rtol=1e-2)``, the first form), which overrides the
same field of ``options``. Torch-free: the plugin builds one without importing torch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict


@dataclass(frozen=True)
class ParityOptions:
    """The judging half of ``assert_parity`` (docs/parity.md): which dtypes, which mode, the
    tolerances and their layers, the reference. ``dtypes=None``: the default table's dtypes."""

    dtypes: Sequence[str] | str | None = None
    mode: str = "absolute"
    grad: bool = False
    rtol: float | None = None
    atol: float | None = None
    normwise: float | None = None
    tolerances: Mapping[str, Mapping[str, float]] | None = None
    reduction_length: int | None = None
    allow_vacuous: bool = False
    cpu_factor: float | None = None
    baseline: Callable[..., Any] | None = None
    reference_fn: Callable[..., Any] | None = None
    reference_dtype: str = "float64"
    default_tolerances: Mapping[str, Mapping[str, float]] | None = None
    seed: int = 0
    #: torch.nn.Module (typed loosely: this module never imports torch)
    module: Any = None
    periodic: float | Mapping[str, float] | None = None

    def updated(self, changes: Mapping[str, Any], caller: str = "assert_parity") -> ParityOptions:
        """These options with ``changes`` (keywords of a call) applied; TypeError naming an
        unknown keyword, as for any function."""
        unknown = sorted(set(changes) - FIELDS)
        if unknown:
            raise TypeError(f"{caller}() got an unexpected keyword argument {unknown[0]!r}")
        return dataclasses.replace(self, **changes) if changes else self


#: the option names (the keywords assert_parity accepts beside the call's)
FIELDS = frozenset(f.name for f in dataclasses.fields(ParityOptions))


class ParitySettings(TypedDict, total=False):
    """The options as keywords of the call (``**settings``), for the type checker."""

    dtypes: Sequence[str] | str | None
    mode: str
    grad: bool
    rtol: float | None
    atol: float | None
    normwise: float | None
    tolerances: Mapping[str, Mapping[str, float]] | None
    reduction_length: int | None
    allow_vacuous: bool
    cpu_factor: float | None
    baseline: Callable[..., Any] | None
    reference_fn: Callable[..., Any] | None
    reference_dtype: str
    default_tolerances: Mapping[str, Mapping[str, float]] | None
    seed: int
    module: Any
    periodic: float | Mapping[str, float] | None
