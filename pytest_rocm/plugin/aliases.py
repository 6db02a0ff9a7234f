"""The short marker aliases (``gpu`` for ``rocm_gpu``...): on only where the project does not own
the name.

A plugin must not change the meaning of a marker a project already has: LangChain's
``requires("sklearn")`` names an import, e2e suites write ``gpu(0)``, the pytest-tolerance plugin
owns ``tolerance(min_exponent=...)``. What the project registers itself (its ini ``markers``, a
conftest's ``addinivalue_line``, another plugin's registration) is its own; the plugin's lines end in
``(pytest-rocm)`` and are told apart. The aliases are registered after every other plugin and
initial conftest has configured, and the set is looked at again after collection, when the
conftests of sub-folders have registered theirs. ``rocm_short_markers = off`` turns them all off.
"""

from __future__ import annotations

import pytest

from pytest_rocm.plugin import marks
from pytest_rocm.plugin.markcache import refresh
from pytest_rocm.plugin.session import get_state


@pytest.hookimpl(trylast=True)  # after the project's own plugins and conftests have registered theirs
def pytest_configure(config: pytest.Config) -> None:
    if getattr(config.option, "help", False):
        return
    names = refresh(config, get_state(config).settings.short_markers)
    marks.register_aliases(config, [name for name in names if name in marks.ALIASES])
