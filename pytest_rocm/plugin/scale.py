"""The scale profile: ``--rocm-scale=ci|full`` (``PYTEST_ROCM_SCALE``, ini ``rocm_scale``).

``ci`` runs every shape/layout *condition* of the suites at the smallest size that triggers it
(fast on a 2-core CPU); ``full`` runs the shapes real models use (Llama-3-8B, Qwen2.5-7B, SDXL).
Without the option the device under test decides: the CPU (``--rocm-device=cpu``, or no GPU here)
is ``ci``, a GPU (or a plan for one, or a recorded environment with one) is ``full``.

The option itself is declared and validated with the others (``options.OPTIONS``: one line naming
the source on a bad value, exit 4); this module turns it into the session's scale and gives suites
three ways to use it:

* the session fixture ``rocm_scale`` -> ``"ci"`` or ``"full"`` (inside a test);
* the marker ``rocm_scaled(argnames, ci=[...], full=[...], ids=None)``: parametrizes the test at
  collection with the values of the session's profile (parametrization happens before fixtures,
  so a fixture cannot do it). Values may be ``pytest.param(..., id=...)``. Applied before the
  test's ``parametrize`` markers, so its ids come first: ``test_x[hd128-float16]``;
* :func:`cases` builds that marker from a table ``{id: (ci_value, full_value)}`` (None: the row is
  not in that profile), so a suite keeps its shapes as data;
* :func:`get_scale` (``get_scale(metafunc.config)`` in a conftest's ``pytest_generate_tests``)
  and the pure :func:`pick` (``pick(scale, ci=..., full=...)``) for anything else.

Resolving the default needs the device under test, hence the environment (detection imports
torch): it happens only when something asks for the scale (a ``rocm_scaled`` test is collected,
the fixture is used, a report is written), never at plugin import or configure time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import pytest

from pytest_rocm.plugin.options import SCALES
from pytest_rocm.plugin.session import DeviceChoice, get_device_choice, get_state

__all__ = ["MARKER", "SCALES", "cases", "get_scale", "pick", "rocm_scale", "scale_and_source"]

T = TypeVar("T")

#: the parametrizing marker
MARKER = "rocm_scaled"

#: (scale, why): "--rocm-scale", "PYTEST_ROCM_SCALE", "rocm_scale in pytest.ini" or a default's reason
_RESOLVED = pytest.StashKey[tuple[str, str]]()


def pick(scale: str, *, ci: T, full: T) -> T:
    """The value of profile ``scale``: ``pick("ci", ci=16, full=2048) == 16``. Pure."""
    if scale == "ci":
        return ci
    if scale == "full":
        return full
    raise ValueError(f"scale {scale!r} is not one of {', '.join(SCALES)}")


def cases(argnames: str, table: Mapping[str, tuple[Any, Any]]) -> pytest.MarkDecorator:
    """``rocm_scaled`` from a table of rows ``{id: (ci_value, full_value)}``: each row keeps its id in
    both profiles (so a feature compares across ci and full reports); a None value leaves the row out
    of that profile (a full-only shape from a real model config, say)."""
    ci = [pytest.param(v[0], id=i) for i, v in table.items() if v[0] is not None]
    full = [pytest.param(v[1], id=i) for i, v in table.items() if v[1] is not None]
    return pytest.mark.rocm_scaled(argnames, ci=ci, full=full)  # MARKER


def default_scale(choice: DeviceChoice | None, forced_cpu: bool) -> tuple[str, str]:
    """(scale, why) when no option names one: ``ci`` on the CPU, ``full`` on a GPU."""
    if forced_cpu or choice is None:
        return "ci", "default: the device under test is the CPU"
    if choice.device is None:
        return "ci", "default: no GPU to test on"
    where = f"plan for {choice.plan}" if choice.plan else f"device {choice.device.index} ({choice.device.gfx})"
    return "full", f"default: the device under test is a GPU, {where}"


def scale_and_source(config: pytest.Config) -> tuple[str, str]:
    """The session's (scale, where it came from), resolved once."""
    if _RESOLVED in config.stash:
        return config.stash[_RESOLVED]
    settings = get_state(config).settings
    if settings.scale is not None:
        resolved = (settings.scale, settings.scale_source)
    elif settings.forced_cpu:  # known without detecting anything
        resolved = default_scale(None, True)
    else:
        resolved = default_scale(get_device_choice(config), False)
    config.stash[_RESOLVED] = resolved
    return resolved


def get_scale(config: pytest.Config) -> str:
    """``"ci"`` or ``"full"`` for this session (usable in ``pytest_generate_tests``)."""
    return scale_and_source(config)[0]


# -- hooks ------------------------------------------------------------------------------------------
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(argnames, ci=[...], full=[...], ids=None): parametrize with the values of the "
        "session's scale profile (--rocm-scale=ci|full)",
    )


def _values(mark: pytest.Mark, scale: str) -> tuple[Any, Sequence[Any], Any]:
    if not mark.args or len(mark.args) > 1:
        raise TypeError(f"{MARKER} takes one positional argument (argnames), got {len(mark.args)}")
    unknown = set(mark.kwargs) - {"ci", "full", "ids"}
    missing = {"ci", "full"} - set(mark.kwargs)
    if unknown or missing:
        problem = f"unknown {', '.join(sorted(unknown))}" if unknown else f"missing {', '.join(sorted(missing))}"
        raise TypeError(f"{MARKER}({mark.args[0]!r}, ci=..., full=..., ids=None): {problem}")
    return mark.args[0], list(mark.kwargs[scale]), mark.kwargs.get("ids")


@pytest.hookimpl(tryfirst=True)  # before pytest's own parametrize markers: the case id comes first
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marks = list(metafunc.definition.iter_markers(MARKER))
    if not marks:
        return
    scale = get_scale(metafunc.config)
    for mark in marks:
        argnames, values, ids = _values(mark, scale)
        metafunc.parametrize(argnames, values, ids=ids)


@pytest.fixture(scope="session")
def rocm_scale(pytestconfig: pytest.Config) -> str:
    """The session's scale profile: ``"ci"`` or ``"full"`` (``--rocm-scale``, else by device)."""
    return get_scale(pytestconfig)


def pytest_report_collectionfinish(config: pytest.Config) -> list[str]:
    """``rocm: scale=ci (default: the device under test is the CPU)`` once a test used the scale."""
    resolved = config.stash.get(_RESOLVED, None)
    if resolved is None:
        return []
    return [f"rocm: scale={resolved[0]} ({resolved[1]})"]
