"""Parity fixtures (``parity``, ``parity_dtype``) and the ``tolerance`` marker.

Importing this module never imports torch: assert_parity is imported inside the fixture. The
``tolerance`` marker is registered and validated at collection with the plugin's other markers
(``markers.SPECS``), from the torch-free tolerance table.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_rocm.parity.tolerances import parse_marker
from pytest_rocm.report.outcomes import PARITY_PROPERTY

#: the low-precision dtypes parity_dtype runs a test for
LOW_PRECISION_DTYPES: tuple[str, ...] = ("float16", "bfloat16")


def marker_tolerances(item: pytest.Item) -> dict[str, dict[str, float]]:
    """{dtype: overrides} from the item's tolerance markers; the closest marker wins per key."""
    merged: dict[str, dict[str, float]] = {}
    # iter_markers yields the closest first (function, then class, then module): apply in reverse
    for mark in reversed(list(item.iter_markers("tolerance"))):
        dtype, overrides = parse_marker(mark.args, mark.kwargs)
        merged.setdefault(dtype, {}).update(overrides)
    return merged


class Parity:
    """``parity(fn, *args, **kw)``: assert_parity on the test's device with its tolerance markers."""

    def __init__(
        self, request: pytest.FixtureRequest, device: Any, marker: dict[str, dict[str, float]], dtype: str | None
    ) -> None:
        self.request = request
        self.device = device
        self.marker_tolerances = marker
        #: the test's parity_dtype, used as ``dtypes`` when a call names none
        self.dtype = dtype

    def __call__(self, fn: Any, *args: Any, **kw: Any) -> Any:
        from pytest_rocm.parity.check import (
            DtypeUnsupported,
            ParityError,
            assert_parity,
        )

        kw.setdefault("device", self.device)
        if self.dtype is not None:
            kw.setdefault("dtypes", (self.dtype,))
        if self.marker_tolerances:
            base = {d: dict(v) for d, v in self.marker_tolerances.items()}
            for dtype, extra in (kw.get("default_tolerances") or {}).items():
                base.setdefault(dtype, {}).update(extra)
            kw["default_tolerances"] = base
        try:
            result = assert_parity(fn, *args, **kw)
        except ParityError as exc:
            self._record(exc.result)
            raise
        except DtypeUnsupported as exc:
            self._record(exc.result)
            pytest.skip(
                f"{exc.op}: dtype {', '.join(exc.dtypes)} not supported on {exc.backend}: "
                + "; ".join(exc.dtypes.values())
            )
        self._record(result)
        return result

    def _record(self, result: Any) -> None:
        records = result.records() if result is not None else []
        self.request.node.user_properties.append((PARITY_PROPERTY, records))


@pytest.fixture
def parity(request: pytest.FixtureRequest, rocm_device: Any) -> Parity:
    """assert_parity bound to the device under test (``rocm_device``: skips when there is none) and
    the test's ``tolerance`` markers; with ``parity_dtype`` in the test, calls default to that dtype."""
    dtype = request.getfixturevalue("parity_dtype") if "parity_dtype" in request.fixturenames else None
    return Parity(request, rocm_device, marker_tolerances(request.node), dtype)


@pytest.fixture(params=LOW_PRECISION_DTYPES, ids=LOW_PRECISION_DTYPES)
def parity_dtype(request: pytest.FixtureRequest) -> str:
    """The low-precision dtype name ("float16" or "bfloat16") this instance of the test checks."""
    return request.param
