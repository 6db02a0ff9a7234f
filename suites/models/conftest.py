"""Model suite setup: hub libraries offline, everything seeded and deterministic.

Kept free of torch imports at import time: without torch the suite's modules skip as
``not installed: torch`` instead of failing to collect.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from pytest_rocm import INFO_PROPERTY

# Nothing is ever downloaded: models are built from configs. Set before transformers/peft/hub are
# imported (they read these once), and forced rather than defaulted.
for _var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
    os.environ[_var] = "1"
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
# cuBLAS refuses deterministic matmuls without a fixed workspace; must be set before CUDA starts.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "slow: long on the CPU (torch.compile builds kernels); deselect with -m 'not slow'"
    )


@pytest.fixture(autouse=True)
def _library_versions(request: pytest.FixtureRequest, record_property) -> None:
    """The versions of the libraries a row ``rocm_requires`` go into its report entry: a row that
    passes with transformers 4.x and fails with 5.x must say so."""
    from packaging.requirements import InvalidRequirement, Requirement

    from pytest_rocm import distribution_version

    versions = {}
    for mark in request.node.iter_markers("rocm_requires"):
        for spec in mark.args:
            try:
                name = Requirement(str(spec)).name
            except InvalidRequirement:  # the plugin reports a bad marker itself
                continue
            versions[name] = distribution_version(name)
    if versions:
        record_property(INFO_PROPERTY, {"libraries": versions})


@pytest.fixture(autouse=True)
def _seeded_and_deterministic() -> Iterator[None]:
    """Every test starts from the same seeds with deterministic algorithms, and leaves the
    global setting as it found it (other suites may share the session)."""
    try:
        import torch
    except ImportError:
        yield
        return
    from .tiny import seed_everything

    enabled = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    # warn_only: an op without a deterministic kernel warns instead of failing the workload
    torch.use_deterministic_algorithms(True, warn_only=True)
    seed_everything()
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(enabled, warn_only=warn_only)
