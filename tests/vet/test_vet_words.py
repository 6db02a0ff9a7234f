"""Words that say what was found.

- ``torch 2.13.0+cpu`` in a stack was class 3 "built from source, for the gfx you build it for":
  the one fact that matters, a CPU build (nothing in the stack will use the GPU), was lost;
- CPU extensions are not "pure Python";
- ``--gpu gfx1100`` on a machine with no GPU is not "this machine's GPUs";
- one finding is never both deciding evidence and evidence against;
- zstd-compressed bundles that could not be read are said in the text, with the fix.
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path
from typing import Any

import pytest
from fake_packages import make_elf, make_wheel, wheel_metadata
from packaging.specifiers import SpecifierSet

from pytest_rocm.vet import vet
from pytest_rocm.vet.render import document, stack_table, text
from pytest_rocm.vet.stack import Pin, vet_stack, wheel_index


def _doc(spec: str) -> dict[str, Any]:
    return document(*vet(spec), None)


def _torch_wheel(folder: Path, local: str) -> Path:
    files: dict[str, str | bytes] = dict(wheel_metadata("torch", f"2.13.0+{local}", []))
    files["torch/__init__.py"] = "from . import _C\n"
    files["torch/_C.cpython-311-x86_64-linux-gnu.so"] = make_elf(["libtorch_cpu.so", "libc.so.6"])
    files["torch/include/c10/macros/Macros.h"] = "#if defined(USE_ROCM)\n#include <hip/hip_runtime.h>\n#endif\n"
    files["torch/utils/cpp_extension.py"] = "import subprocess\nROCM_HOME = None\nIS_HIP_EXTENSION = False\n"
    return make_wheel(folder / f"torch-2.13.0+{local}-cp311-cp311-linux_x86_64.whl", files)


def test_a_cpu_torch_in_a_stack_says_nothing_will_use_the_gpu(tmp_path: Path) -> None:
    _torch_wheel(tmp_path, "cpu")
    doc = vet_stack(
        [Pin("torch", "2.13.0", "requirements.txt:1", SpecifierSet("==2.13.0"))], wheel_index(tmp_path), _doc, []
    )
    (row,) = doc["packages"]
    assert row["target"].endswith("torch-2.13.0+cpu-cp311-cp311-linux_x86_64.whl")
    assert row["reason"].startswith("a CPU build of PyTorch (+cpu): nothing in this stack will use the GPU")
    assert row["basis"] == row["reason"].split(";")[0]
    assert "built from source" not in stack_table(doc)
    assert "torch 2.13.0+cpu is a CPU build of PyTorch: nothing in this stack will use the GPU" in stack_table(doc)


def test_a_rocm_torch_says_no_such_thing(tmp_path: Path) -> None:
    _torch_wheel(tmp_path, "rocm7.1")
    doc = vet_stack(
        [Pin("torch", "2.13.0", "requirements.txt:1", SpecifierSet("==2.13.0"))], wheel_index(tmp_path), _doc, []
    )
    assert doc["packages"][0]["target"].endswith("torch-2.13.0+rocm7.1-cp311-cp311-linux_x86_64.whl")
    assert "CPU build" not in stack_table(doc) and doc["cpu_only_torch"] is None


def test_cpu_extensions_are_not_pure_python(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = dict(wheel_metadata("cext", "1.0", ["torch"]))
    files["cext/__init__.py"] = "import torch\nfrom . import _fast\n"
    files["cext/_fast.cpython-311-x86_64-linux-gnu.so"] = make_elf(["libc.so.6"])
    _, _, verdict = vet(str(make_wheel(tmp_path / "cext-1.0-cp311-cp311-linux_x86_64.whl", files)))
    assert verdict.klass == 1
    assert "pure" not in verdict.reason and "pure" not in verdict.title
    assert "CPU-only native code" in verdict.reason


def test_gpus_named_by_option_are_not_this_machines(tmp_path: Path) -> None:
    doc = vet_stack([], wheel_index(None), _doc, ["gfx1100"], gpus_from="--gpu")
    first = stack_table(doc).splitlines()[0]
    assert "this machine's GPUs" not in first and "compared with gfx1100 (--gpu, not this machine)" in first
    assert "| --gpu |" in stack_table(doc, markdown=True)
    here = vet_stack([], wheel_index(None), _doc, [])
    assert "this machine's GPUs: none found" in stack_table(here)


def _mixed(tmp_path: Path) -> Path:
    files: dict[str, str | bytes] = dict(wheel_metadata("mixed", "1.0", []))
    files["mixed/__init__.py"] = "import torch\n"
    files["mixed/_hip.so"] = make_elf(["libamdhip64.so.6"], [".hip_fatbin"])
    files["mixed/_cuda.so"] = make_elf(["libcudart.so.12"], [".nv_fatbin"])
    return make_wheel(tmp_path / "mixed-1.0-cp311-cp311-linux_x86_64.whl", files)


def _peftlike(tmp_path: Path) -> Path:
    files: dict[str, str | bytes] = dict(wheel_metadata("optk", "1.0", ["torch"]))
    files["optk/__init__.py"] = "import torch\n"
    files["optk/boft/fbd_cuda.cu"] = "#include <cuda_runtime.h>\n__global__ void k(float* x) { x[0] = 1; }\n"
    return make_wheel(tmp_path / "optk-1.0-py3-none-any.whl", files)


@pytest.mark.parametrize("make", [_mixed, _peftlike], ids=["class-3-with-cuda-beside", "class-1-with-cuda-sources"])
def test_one_finding_is_never_both_for_and_against(tmp_path: Path, make: Any) -> None:
    _, _, verdict = vet(str(make(tmp_path)))
    assert verdict.contrary, "the case has evidence against"
    assert not set(verdict.evidence) & set(verdict.contrary)


def _zstd_bundle() -> bytes:
    return b"CCOB" + struct.pack("<HHIIQ", 2, 1, 24 + 16, 999, 0) + b"\x28\xb5\x2f\xfd" + b"\0" * 12


def test_unreadable_zstd_bundles_are_said_in_the_text_with_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "zstandard", None)  # as where zstandard is not installed
    files: dict[str, str | bytes] = dict(wheel_metadata("zhip", "1.0", []))
    files["zhip/_C.so"] = make_elf(["libamdhip64.so.6"], [".hip_fatbin"], {".hip_fatbin": _zstd_bundle()})
    out = text(_doc(str(make_wheel(tmp_path / "zhip-1.0-cp311-cp311-linux_x86_64.whl", files))))
    line = next(line for line in out.splitlines() if "zhip/_C.so" in line and "unknown" in line)
    assert "zstd-compressed bundle(s) not read" in line and "pip install zstandard" in line
