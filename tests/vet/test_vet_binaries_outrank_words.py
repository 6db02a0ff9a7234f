"""What a package builds or links decides; a name in its source is a hint. A CUDA-only wheel
(every binary links libcudart/libcuda, none built for ROCm) was class 3 because a string literal
``"librccl.so.1"`` in a Python file counted as a ROCm path, and its note told the user to "check
that the one you load is the ROCm one" when there was none. A file name (``*_rocm.so``) whose ELF
links nothing ROCm is not "high" confidence either."""

from __future__ import annotations

from pathlib import Path

from fake_packages import make_elf, make_wheel, wheel_metadata

from pytest_rocm.vet import vet

RCCL_PROBE = "import ctypes\n_RCCL = 'librccl.so.1'\ndef _load():\n    return ctypes.CDLL(_RCCL)\nlib = _load()\n"


def _cuda_wheel(tmp_path: Path, extra: dict[str, str | bytes]) -> Path:
    files: dict[str, str | bytes] = dict(wheel_metadata("cudacomm", "1.0", []))
    files["cudacomm/__init__.py"] = (
        "from . import _comm, _kern, _ops, _attn, _moe, _quant\nfrom . import nccl_or_rccl\n"
    )
    for i, name in enumerate(("_comm", "_kern", "_ops", "_attn", "_moe", "_quant")):
        needed = ["libcudart.so.12", "libcuda.so.1"] if i % 2 else ["libcudart.so.12"]
        files[f"cudacomm/{name}.cpython-311-x86_64-linux-gnu.so"] = make_elf(needed, [".nv_fatbin"])
    files.update(extra)
    return make_wheel(tmp_path / "cudacomm-1.0-cp311-cp311-linux_x86_64.whl", files)


def test_a_rocm_library_name_in_python_is_no_rocm_path_next_to_cuda_only_binaries(tmp_path: Path) -> None:
    _, result, verdict = vet(str(_cuda_wheel(tmp_path, {"cudacomm/nccl_or_rccl.py": RCCL_PROBE})))
    assert len(result.cuda_binaries) == 6 and not result.rocm_binaries
    assert "loads-rocm-library" in {f.rule for f in result.findings}  # seen, and said
    assert verdict.klass == 4, verdict.reason
    assert not any("check that the one you load is the ROCm one" in n for n in verdict.contrary_notes)
    assert any("loads-rocm-library" in n and "none of its" in n for n in verdict.contrary_notes)


def test_a_hip_macro_in_a_header_is_no_rocm_path_when_every_binary_is_cuda_only_even_optional(
    tmp_path: Path,
) -> None:
    """The binaries load through a fallback (an optional path): still what was built."""
    files: dict[str, str | bytes] = dict(wheel_metadata("optcuda", "1.0", []))
    files["optcuda/__init__.py"] = (
        "import os, torch\nfrom . import utils\ntry:\n    torch.ops.load_library(os.path.join(os.path.dirname(__file__), '_C.so'))\n"
        "except OSError:\n    pass\n"
    )
    files["optcuda/utils.py"] = "import torch\n"
    files["optcuda/_C.so"] = make_elf(["libcudart.so.12"], [".nv_fatbin"])
    files["optcuda/include/k.h"] = "#if defined(__HIP_PLATFORM_AMD__)\n#include <hip/hip_runtime.h>\n#endif\n"
    _, result, verdict = vet(str(make_wheel(tmp_path / "optcuda-1.0-cp311-cp311-linux_x86_64.whl", files)))
    assert result.optional_cuda_binaries == {"optcuda/_C.so"}
    assert verdict.klass != 3, verdict.reason


def test_a_rocm_file_name_whose_elf_links_nothing_rocm_is_medium_and_says_so(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = dict(wheel_metadata("namedrocm", "1.0", []))
    files["namedrocm/__init__.py"] = "import torch\n"
    files["namedrocm/libkern_rocm.so"] = make_elf(["libc.so.6", "libstdc++.so.6"])
    _, _, verdict = vet(str(make_wheel(tmp_path / "namedrocm-1.0-cp311-cp311-linux_x86_64.whl", files)))
    assert verdict.klass == 3
    assert verdict.confidence == "medium" and "file name" in verdict.confidence_why

    files["namedrocm/libkern_rocm.so"] = make_elf(["libamdhip64.so.6"])  # its ELF says ROCm: high
    _, _, verdict = vet(str(make_wheel(tmp_path / "namedrocm-1.0-cp311-cp311-linux_x86_64.whl", files)))
    assert verdict.klass == 3 and verdict.confidence == "high"


def test_a_rocm_file_name_on_a_binary_that_links_cuda_is_no_rocm_path(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = dict(wheel_metadata("misnamed", "1.0", []))
    files["misnamed/__init__.py"] = "import torch\n"
    files["misnamed/libkern_rocm.so"] = make_elf(["libcudart.so.12"], [".nv_fatbin"])
    _, _, verdict = vet(str(make_wheel(tmp_path / "misnamed-1.0-cp311-cp311-linux_x86_64.whl", files)))
    assert verdict.klass == 4, verdict.reason
    assert any(f.rule == "rocm-variant-binary" for f in verdict.contrary)
