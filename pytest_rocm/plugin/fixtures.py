"""The plugin's fixtures: ``rocm_env`` (the Environment), ``rocm_device`` (the torch.device under
test), and the parity fixtures ``parity`` / ``parity_dtype``.

torch is imported only inside ``rocm_device`` (and assert_parity inside ``parity``). The device
fixture skips, naming the cause, when there is nothing to run on: torch missing, a CPU or CUDA
build on an AMD machine, a plan (``--rocm-gfx`` with no device here), or a recorded environment
(``--rocm-env``) whose device is not really in this machine. ``parity`` applies the test's
``tolerance`` markers, read from the parsed-marker cache (they are validated at collection with the
plugin's other markers).
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_rocm.env import arch
from pytest_rocm.env.model import Environment
from pytest_rocm.plugin.markcache import tolerances_of
from pytest_rocm.plugin.session import get_device_choice, get_environment, get_state

#: the low-precision dtypes parity_dtype runs a test for
LOW_PRECISION_DTYPES: tuple[str, ...] = ("float16", "bfloat16")


@pytest.fixture(scope="session")
def rocm_env(pytestconfig: pytest.Config) -> Environment:
    """The session's environment (recorded with --rocm-env, supplied by a
    ``pytest_rocm_detect_environment`` hook, or detected once)."""
    return get_environment(pytestconfig)


def _import_torch(what: str) -> Any:
    try:
        import torch
    except ImportError as exc:
        pytest.skip(f"{what}: torch is not installed ({exc})")
    return torch


def live_device_problem(torch: Any, index: int, gfx: str) -> str | None:
    """Why recorded device ``index`` (``gfx``) is not usable by the live torch; None when it is."""
    if not torch.cuda.is_available():
        return f"torch {torch.__version__} here sees no GPU"
    count = torch.cuda.device_count()
    if index >= count:
        return f"torch here sees only {count} device(s)"
    live = getattr(torch.cuda.get_device_properties(index), "gcnArchName", None)
    if live and gfx.startswith("gfx") and arch.split_arch(live)[0] != gfx:
        return f"device {index} here is {arch.split_arch(live)[0]}"
    return None


@pytest.fixture(scope="session")
def rocm_device(pytestconfig: pytest.Config) -> Any:
    """The torch.device under test (``cuda:N`` for ROCm and CUDA, ``cpu`` with --rocm-device=cpu)."""
    choice = get_device_choice(pytestconfig)
    st = get_state(pytestconfig)
    if choice.forced_cpu:
        return _import_torch("the CPU device").device("cpu")
    device = choice.device
    if choice.plan:
        from pytest_rocm.plugin.plan import would_run

        pytest.skip(
            would_run(choice.plan, wheel_gap=choice.plan_wheel_gap)
        )  # decided as on that architecture, never run on this hardware
    if device is None:
        pytest.skip(f"no device to test on: {choice.no_device}")
    if st.recorded:
        torch = _import_torch(f"recorded environment {st.source}: device {device.index} ({device.gfx})")
        problem = live_device_problem(torch, device.index, device.gfx)
        if problem:
            pytest.skip(
                f"recorded environment {st.source}: device {device.index} ({device.gfx}) is not here: {problem}"
            )
        return torch.device(f"cuda:{device.index}")
    torch = _import_torch(f"device {device.index} ({device.gfx})")
    return torch.device(f"cuda:{device.index}")


# -- parity ----------------------------------------------------------------------------------------
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
        __tracebackhide__ = True  # a failing parity(...) reads as the test's line and the table
        from pytest_rocm.parity.check import DtypeUnsupported, assert_parity
        from pytest_rocm.parity.options import FIELDS, ParityOptions

        kw.setdefault("device", self.device)
        # the options of this call, either form (options=..., or keywords), as one object
        given = {k: kw.pop(k) for k in list(kw) if k in FIELDS}
        options = (kw.pop("options", None) or ParityOptions()).updated(given, "parity")
        if self.dtype is not None and options.dtypes is None:
            options = options.updated({"dtypes": (self.dtype,)})
        if self.marker_tolerances:
            base = {d: dict(v) for d, v in self.marker_tolerances.items()}
            for dtype, extra in (options.default_tolerances or {}).items():
                base.setdefault(dtype, {}).update(extra)
            options = options.updated({"default_tolerances": base})
        kw["options"] = options
        try:  # recorded on the test by the plugin's listener (ParityToProperties), as a direct assert_parity call is
            return assert_parity(fn, *args, **kw)
        except DtypeUnsupported as exc:
            pytest.skip(
                f"{exc.op}: dtype {', '.join(exc.dtypes)} not supported on {exc.backend}: "
                + "; ".join(exc.dtypes.values())
            )


@pytest.fixture
def parity(request: pytest.FixtureRequest, rocm_device: Any) -> Parity:
    """assert_parity bound to the device under test (``rocm_device``: skips when there is none) and
    the test's ``tolerance`` markers; with ``parity_dtype`` in the test, calls default to that dtype."""
    dtype = request.getfixturevalue("parity_dtype") if "parity_dtype" in request.fixturenames else None
    return Parity(request, rocm_device, tolerances_of(request.node), dtype)


@pytest.fixture(params=LOW_PRECISION_DTYPES, ids=LOW_PRECISION_DTYPES)
def parity_dtype(request: pytest.FixtureRequest) -> str:
    """The low-precision dtype name ("float16" or "bfloat16") this instance of the test checks."""
    return str(request.param)
