"""Known-issues suite setup: the ``timeout`` marker when pytest-timeout is absent (rows carry one)."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    if not config.pluginmanager.hasplugin("timeout"):
        config.addinivalue_line("markers", "timeout(seconds): per-row time limit (enforced by pytest-timeout)")
