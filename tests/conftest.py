"""Shared test setup. pytester is enabled through addopts in pyproject.toml."""

from __future__ import annotations

from pathlib import Path

import pytest

#: ../shared/fixtures/realworld copied data lives in tests/data (keep each file's # SOURCE line).
DATA = Path(__file__).parent / "data"


@pytest.fixture
def data_dir() -> Path:
    return DATA
