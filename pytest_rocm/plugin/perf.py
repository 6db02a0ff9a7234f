"""The ``perf`` fixture: time a callable on the test and record it in the report (docs/perf.md).

``perf(fn, *args, work={"flops": 2*m*n*k}, dtype="bfloat16")`` runs
``pytest_rocm.perf.measure.measure`` with the session's scale budget (``ci``: a few cheap
repetitions, so the CPU run stays fast; ``full``: enough for a stable median), adds the BLAS facts
of the device (``perf.backend.blas_facts``) to the row's own ``backend`` facts, and appends the
record to the test's user properties (``PERF_PROPERTY``), where the report reads it as
``results[*].perf``, under xdist too. One measurement per test: a row is one figure (parametrize
for more: ``[tunableop-on]``/``[tunableop-off]`` side by side); a second call is an error. torch is
imported only when the fixture is called.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from pytest_rocm.report.properties import PERF_PROPERTY

#: measure()'s settings per scale profile. ``ci``: a few hundred ms per row, and enough samples of
#: at least 2 ms each that a 2x change lies outside the recorded spread on a shared 2-core machine
#: (3-7 samples of 0.15 s let 11 of 36 true 2x slowdowns pass as noise; benchmarks/bench_slowdown_power.py)
BUDGETS: dict[str, dict[str, Any]] = {
    "ci": {"warmup": 2, "min_reps": 9, "reps": 25, "budget_s": 0.3, "min_sample_s": 0.002},
    "full": {"warmup": 5, "min_reps": 10, "reps": 100, "budget_s": 2.0, "min_sample_s": 0.002},
}


class Perf:
    """``perf(fn, *args, work=..., name=..., dtype=..., backend=..., **kwargs)`` -> the perf record."""

    def __init__(self, item: pytest.Item, scale: str) -> None:
        self.item = item
        self.scale = scale
        #: the record of this test's measurement, once made
        self.record: dict[str, Any] | None = None

    def __call__(
        self,
        fn: Callable[..., Any],
        *args: Any,
        work: Mapping[str, float] | None = None,
        name: str | None = None,
        dtype: str | None = None,
        backend: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        if self.record is not None:
            raise RuntimeError(
                f"{self.item.nodeid}: perf measured twice: one measurement per test (a row is one figure);"
                " parametrize the test for more"
            )
        from pytest_rocm.perf.backend import blas_facts
        from pytest_rocm.perf.measure import device_of, measure

        settings = {**BUDGETS[self.scale], **{k: kwargs.pop(k) for k in list(kwargs) if k in BUDGETS["ci"]}}
        device = kwargs.pop("device", None) or device_of(args, kwargs)
        facts = {**blas_facts(device), **dict(backend or {})}
        measured = measure(
            fn, *args, work=work, name=name, dtype=dtype, backend=facts, device=device, **settings, **kwargs
        )
        # plain JSON types only: xdist (execnet) cannot send str subclasses such as torch's TorchVersion
        record: dict[str, Any] = json.loads(json.dumps(measured))
        self.record = record
        self.item.user_properties.append((PERF_PROPERTY, record))
        return record


@pytest.fixture
def perf(request: pytest.FixtureRequest, rocm_scale: str) -> Perf:
    """Time a callable and record it as the row's ``perf`` (module docstring)."""
    return Perf(request.node, rocm_scale)
