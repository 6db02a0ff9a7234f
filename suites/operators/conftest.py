"""Operator-suite configuration: the ``compile`` marker (torch.compile is slow on a CPU)."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "compile: uses torch.compile (inductor; ~20-40 s cold on a 2-core CPU); deselect with -m 'not compile'",
    )
