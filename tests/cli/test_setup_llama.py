"""llama-cpp-python's build line per machine (pytest_rocm.setup.llama): the llama.cpp row's
not-installed reason and the nox session ``llama`` build with it."""

from __future__ import annotations

import pytest

from pytest_rocm.setup.llama import cmake_args, install_line


@pytest.mark.parametrize(
    ("backend", "gfx", "expected"),
    [
        (
            "rocm",
            ["gfx1100", "gfx1100"],
            'CMAKE_ARGS="-DGGML_HIP=on -DGPU_TARGETS=gfx1100" pip install llama-cpp-python',
        ),
        ("rocm", ["gfx942", "gfx90a"], 'CMAKE_ARGS="-DGGML_HIP=on -DGPU_TARGETS=gfx90a;gfx942" pip install'),
        ("cuda", [], 'CMAKE_ARGS="-DGGML_CUDA=on" pip install llama-cpp-python'),
        ("cpu", [], "pip install llama-cpp-python --no-binary llama-cpp-python"),
    ],
)
def test_install_line_names_the_machines_backend_flag(backend: str, gfx: list[str], expected: str) -> None:
    line = install_line(backend, gfx)
    assert line.startswith(expected)
    assert line.endswith("--no-binary llama-cpp-python")


def test_an_unknown_backend_is_one_clear_error() -> None:
    with pytest.raises(ValueError, match="one of rocm, cuda, cpu, not 'metal'"):
        cmake_args("metal")
