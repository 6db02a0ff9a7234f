"""vet of GGML-based builds (llama-cpp-python and what vendors llama.cpp): which backends the
build can target, from real build files cut out of PyPI sdists (tests/data/vet/ggml, with their
source), and which it ships, from the library names of a real CPU-only wheel."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fake_packages import make_elf, make_sdist, make_wheel, wheel_metadata

from pytest_rocm.cli import main
from pytest_rocm.vet import vet
from pytest_rocm.vet.ggml import GgmlEvidence, phrase, to_json
from pytest_rocm.vet.gpu_fit import basis
from pytest_rocm.vet.render import document

DATA = Path(__file__).parent.parent / "data" / "vet" / "ggml"


def fixture(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / f"{name}.json").read_text())
    assert data["source"].startswith(("PyPI sdist", "llama_cpp_python-0.3.36")), f"{name}: no source"
    return data


def sdist_from(tmp_path: Path, name: str, change: dict[str, str] | None = None) -> Path:
    """An sdist with the real build files and source paths of ``name`` (contents cut: see extract.py)."""
    data = fixture(name)
    prefix = name
    files: dict[str, str | bytes] = {p.removeprefix(f"{prefix}/"): t for p, t in data["files"].items()}
    files |= {p.removeprefix(f"{prefix}/"): "" for p in data["paths"]}
    files["PKG-INFO"] = f"Metadata-Version: 2.1\nName: llama_cpp_python\nVersion: {name.split('-')[1]}\n"
    files |= change or {}
    return make_sdist(tmp_path / f"{name}.tar.gz", files, prefix)


def vet_doc(path: Path) -> dict[str, Any]:
    target, result, verdict = vet(str(path))
    return document(target, result, verdict, None)


def test_sdist_0_3_16_builds_for_every_backend_cpu_by_default(tmp_path: Path) -> None:
    doc = vet_doc(sdist_from(tmp_path, "llama_cpp_python-0.3.16"))
    found = doc["build_backends"]
    assert found["basis"] == "build files"
    assert found["backends"] == ["HIP", "CUDA", "Vulkan", "Metal", "SYCL", "CPU"]
    assert found["default"] == ["CPU"] and found["platform_default"] == ["Metal"]  # ${GGML_METAL_DEFAULT}
    assert found["options"]["HIP"] == "GGML_HIP"
    cmake = fixture("llama_cpp_python-0.3.16")["files"]["llama_cpp_python-0.3.16/vendor/llama.cpp/ggml/CMakeLists.txt"]
    line = next(i for i, text in enumerate(cmake.splitlines(), 1) if text.startswith("option(GGML_HIP "))
    assert cmake.splitlines()[line - 1].endswith("# line 173")  # its line in the real file
    assert found["evidence"]["HIP"] == f"llama_cpp_python-0.3.16/vendor/llama.cpp/ggml/CMakeLists.txt:{line}"
    assert basis(doc) == (
        "builds for HIP, CUDA, Vulkan, Metal, SYCL, CPU (GGML CMake options; by default CPU; Metal where the "
        "platform turns it on)"
    )
    assert any('CMAKE_ARGS="-DGGML_HIP=ON' in step for step in doc["next_steps"])


def test_sdist_0_2_20_old_option_names(tmp_path: Path) -> None:
    """Before the ggml/ split: LLAMA_HIPBLAS, LLAMA_CUBLAS, no Vulkan yet, no GGML_CPU option (CPU always built)."""
    doc = vet_doc(sdist_from(tmp_path, "llama_cpp_python-0.2.20"))
    found = doc["build_backends"]
    assert found["backends"] == ["HIP", "CUDA", "Metal", "CPU"] and found["default"] == ["CPU"]
    assert found["options"] == {"HIP": "LLAMA_HIPBLAS", "CUDA": "LLAMA_CUBLAS", "Metal": "LLAMA_METAL"}
    assert any('CMAKE_ARGS="-DLLAMA_HIPBLAS=ON' in step for step in doc["next_steps"])


def test_scikit_build_cmake_args_turn_hip_on(tmp_path: Path) -> None:
    """A package whose pyproject passes -DGGML_HIP=ON to every build (the real 0.3.16 pyproject, one line added)."""
    name = "llama_cpp_python-0.3.16"
    pyproject = fixture(name)["files"][f"{name}/pyproject.toml"]
    assert "[tool.scikit-build]\n" in pyproject
    changed = pyproject.replace("[tool.scikit-build]\n", '[tool.scikit-build]\ncmake.args = ["-DGGML_HIP=ON"]\n')
    doc = vet_doc(sdist_from(tmp_path, name, {"pyproject.toml": changed}))
    assert doc["build_backends"]["default"] == ["HIP", "CPU"]
    assert doc["build_backends"]["evidence"]["HIP"].endswith("pyproject.toml")
    assert not any("CMAKE_ARGS" in step for step in doc["next_steps"])  # it is on already


def cpu_wheel(tmp_path: Path) -> Path:
    libraries = fixture("llama_cpp_python-0.3.36-cpu-wheel")["libraries"]
    files: dict[str, str | bytes] = {path: make_elf(needed) for path, needed in libraries.items()}
    files["llama_cpp/__init__.py"] = "from .llama_cpp import *\n"
    files |= wheel_metadata("llama_cpp_python", "0.3.36", ["numpy>=1.20.0"])
    return make_wheel(tmp_path / "llama_cpp_python-0.3.36-cp311-cp311-linux_x86_64.whl", files)


def test_cpu_only_wheel_says_cpu_from_what_it_ships(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = vet_doc(cpu_wheel(tmp_path))
    found = doc["build_backends"]
    assert found["basis"] == "shipped" and found["backends"] == ["CPU"]
    assert found["evidence"]["CPU"].startswith("llama_cpp/lib/libggml-cpu.so")
    assert basis(doc).startswith("ships GGML backends CPU only (llama_cpp/lib/libggml-cpu.so")
    assert any("on an AMD GPU it runs on the CPU" in c for c in doc["caveats"])
    assert main(["vet", str(cpu_wheel(tmp_path))]) in (0, 1)
    assert "GGML backends: ships GGML backends CPU only" in capsys.readouterr().out


def test_a_hip_library_in_the_wheel_is_hip(tmp_path: Path) -> None:
    """The same wheel with a libggml-hip.so beside the CPU one (a HIP build ships both)."""
    libraries = fixture("llama_cpp_python-0.3.36-cpu-wheel")["libraries"]
    files: dict[str, str | bytes] = {path: make_elf(needed) for path, needed in libraries.items()}
    files["llama_cpp/lib/libggml-hip.so"] = make_elf(["libggml-base.so.0", "libamdhip64.so.6", "libhipblas.so.2"])
    files |= wheel_metadata("llama_cpp_python", "0.3.36", [])
    doc = vet_doc(make_wheel(tmp_path / "llama_cpp_python-0.3.36-cp311-cp311-linux_x86_64.whl", files))
    assert doc["build_backends"]["backends"] == ["HIP", "CPU"]
    assert not any("runs on the CPU" in c for c in doc["caveats"])


def test_no_ggml_no_field(tmp_path: Path) -> None:
    """A package with CMake options of its own and a file named like a backend is no GGML build."""
    files: dict[str, str | bytes] = {
        "CMakeLists.txt": 'option(WITH_CUDA "use CUDA" OFF)\n',
        "src/ggml-cuda.cpp": "",  # a source file alone, without a ggml core, proves nothing
        "PKG-INFO": "Metadata-Version: 2.1\nName: other\nVersion: 1.0\n",
        "other/__init__.py": "x = 1\n",
    }
    doc = vet_doc(make_sdist(tmp_path / "other-1.0.tar.gz", files, "other-1.0"))
    assert doc["build_backends"] == {}
    assert not basis(doc).startswith(("builds for", "ships GGML"))


def test_windows_and_macos_library_names() -> None:
    evidence = GgmlEvidence()
    for path in ("llama_cpp/lib/ggml-vulkan.dll", "llama_cpp/lib/libggml-metal.dylib", "llama_cpp/lib/ggml-cpu.dll"):
        evidence.observe_path(path)
    assert to_json(evidence)["backends"] == ["Vulkan", "Metal", "CPU"]
    assert phrase(to_json(evidence)).startswith("ships GGML backends Vulkan, Metal, CPU (")


@pytest.mark.parametrize(
    ("needed", "backends"),
    [
        (["libhipblas.so.2", "librocblas.so.4", "libamdhip64.so.6", "libstdc++.so.6", "libc.so.6"], ["HIP", "CPU"]),
        (["libcudart.so.12", "libcublas.so.12", "libcuda.so.1", "libc.so.6"], ["CUDA", "CPU"]),
        (["libstdc++.so.6", "libm.so.6", "libc.so.6"], ["CPU"]),
    ],
)
def test_one_library_builds_say_it_by_what_they_link(tmp_path: Path, needed: list[str], backends: list[str]) -> None:
    """Before the backends split (2024) a wheel shipped one libllama.so: its NEEDED names the GPU runtime."""
    files: dict[str, str | bytes] = {"llama_cpp/libllama.so": make_elf(needed), "llama_cpp/__init__.py": "x = 1\n"}
    files |= wheel_metadata("llama_cpp_python", "0.2.20", [])
    doc = vet_doc(make_wheel(tmp_path / "llama_cpp_python-0.2.20-cp311-cp311-linux_x86_64.whl", files))
    found = doc["build_backends"]
    assert found["basis"] == "shipped" and found["one_library"] and found["backends"] == backends
    assert ("it links no HIP runtime" in basis(doc)) == ("HIP" not in backends)
    assert any("runs on the CPU" in c for c in doc["caveats"]) == ("HIP" not in backends)
