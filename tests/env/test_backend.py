"""The one answer to "which backend is this torch" and the one reader of distribution versions."""

from __future__ import annotations

from importlib import metadata
from types import SimpleNamespace

import pytest

from pytest_rocm import matrix
from pytest_rocm.env.model import BACKENDS, device_backend, torch_backend
from pytest_rocm.env.seam import Seam, distribution_version


def fake_torch(hip: str | None = None, cuda: str | None = None) -> SimpleNamespace:
    return SimpleNamespace(version=SimpleNamespace(hip=hip, cuda=cuda))


@pytest.mark.parametrize(
    ("torch", "backend"),
    [
        (fake_torch(hip="6.2.41133-dd7f95766"), "rocm"),
        (fake_torch(hip="6.2.41133-dd7f95766", cuda="12.4"), "rocm"),  # hip decides
        (fake_torch(cuda="12.4"), "cuda"),
        (fake_torch(), "cpu"),
        (fake_torch(hip=""), "cpu"),
        (SimpleNamespace(), "cpu"),  # no torch.version at all
    ],
)
def test_torch_backend_is_the_build(torch: SimpleNamespace, backend: str) -> None:
    assert torch_backend(torch) == backend
    assert backend in BACKENDS


def test_device_backend_names_the_accelerator_or_the_device_type() -> None:
    cuda_device, cpu_device = SimpleNamespace(type="cuda"), SimpleNamespace(type="cpu")
    assert device_backend(cuda_device, fake_torch(hip="6.2")) == "rocm"
    assert device_backend(cuda_device, fake_torch(cuda="12.4")) == "cuda"
    assert device_backend(cpu_device, fake_torch(hip="6.2")) == "cpu"
    assert device_backend(SimpleNamespace(type="mps"), fake_torch()) == "mps"


def test_the_matrix_validates_against_the_same_backends() -> None:
    assert matrix.BACKENDS is BACKENDS


def test_distribution_version_reads_metadata_never_imports() -> None:
    assert distribution_version("pytest") == metadata.version("pytest")
    assert distribution_version("surely-not-an-installed-distribution") is None
    assert Seam(distributions={"triton": "3.1.0"}).distribution_version("triton") == "3.1.0"
    assert Seam(distributions={}).distribution_version("pytest") is None  # the fake machine's answer
    assert Seam().distribution_version("pytest") == metadata.version("pytest")
