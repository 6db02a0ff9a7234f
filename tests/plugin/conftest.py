"""Shared set-up of the plugin's pytester runs (``pytestmark = pytest.mark.usefixtures(...)``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_rocm.plugin.options import OPTIONS


@pytest.fixture
def only_this_plugin(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """In-process inner runs load just pytest-rocm (faster, and independent of what else is
    installed), with none of its variables inherited, on an empty machine: no sysfs of the host
    reaches the header's diagnosis or a skip reason (subprocess runs inherit the same)."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setenv("PYTEST_PLUGINS", "pytest_rocm.plugin")
    for spec in OPTIONS:
        monkeypatch.delenv(spec.env, raising=False)
    empty: Path = tmp_path_factory.mktemp("empty-machine")
    monkeypatch.setenv("PYTEST_ROCM_SYSROOT", str(empty))
    monkeypatch.delenv("HSA_OVERRIDE_GFX_VERSION", raising=False)
