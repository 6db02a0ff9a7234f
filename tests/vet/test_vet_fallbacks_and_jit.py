"""AMD-usable packages are not rejected for a fallback they never need, nor for the CUDA side of
a JIT whose HIP side vet did not see.

- a ComfyUI core requirement loads its CUDA extension with ``importlib.util.spec_from_file_location``
  inside a ``try`` and carries on: a fallback (vet knew only ``load_library``/``CDLL``/``dlopen``);
- a probe of ``libcublasLt.so`` in a file that names "cuBLAS", "cuBLASLt" and "cuDNN" was a binding:
  library and product names were counted as the library's functions;
- a package vLLM pins for ROCm JIT-compiles its kernels with ``torch.utils.cpp_extension.load``,
  ``--offload-arch`` and ``hipcc`` on ROCm: only the CUDA side was seen, class 4.
"""

from __future__ import annotations

from pathlib import Path

from fake_packages import make_elf, make_wheel, wheel_metadata

from pytest_rocm.vet import vet
from pytest_rocm.vet.weigh import library_load

SPEC_LOADER = (
    "import importlib.util\nimport os\n"
    "try:\n"
    "    _spec = importlib.util.spec_from_file_location(\n"
    "        'kitchen._C', os.path.join(os.path.dirname(__file__), '_C.abi3.so'))\n"
    "    _C = importlib.util.module_from_spec(_spec)\n"
    "    _spec.loader.exec_module(_C)\n"
    "    HAS_CUDA = True\n"
    "except (ImportError, OSError):\n"
    "    _C, HAS_CUDA = None, False\n"
)
CUBLASLT_PROBE = (
    "import ctypes\n"
    "# the cuBLAS / cuBLASLt and cuDNN versions go to the log when they load\n"
    "try:\n"
    "    ctypes.CDLL('libcublasLt.so.12')\n"
    "    HAVE_LT = True\n"
    "except OSError:\n"
    "    HAVE_LT = False\n"
)


def _kitchen(tmp_path: Path, loader: str) -> Path:
    files: dict[str, str | bytes] = dict(wheel_metadata("kitchen", "0.2.0", ["torch"]))
    files["kitchen/__init__.py"] = "import torch\nfrom . import ops, backend_cuda\n"
    files["kitchen/ops.py"] = "import torch\ndef scale(x, s):\n    return x * s\n"
    files["kitchen/backend_cuda.py"] = loader
    files["kitchen/_C.abi3.so"] = make_elf(["libcudart.so.12", "libcublasLt.so.12"], [".nv_fatbin"])
    return make_wheel(tmp_path / "kitchen-0.2.0-cp311-abi3-linux_x86_64.whl", files)


def test_an_extension_loaded_by_spec_from_file_location_in_a_try_is_a_fallback(tmp_path: Path) -> None:
    _, result, verdict = vet(str(_kitchen(tmp_path, SPEC_LOADER)))
    assert verdict.klass == 1, verdict.reason
    assert result.optional_cuda_binaries == {"kitchen/_C.abi3.so"} and not result.cuda_binaries
    assert any("optional path" in c and "_C.abi3.so" in c for c in verdict.caveats)


def test_the_same_load_outside_a_try_is_the_packages_core(tmp_path: Path) -> None:
    unguarded = "\n".join(line.removeprefix("    ") for line in SPEC_LOADER.splitlines() if "try" not in line)
    unguarded = unguarded.split("except", 1)[0]
    _, _, verdict = vet(str(_kitchen(tmp_path, unguarded)))
    assert verdict.klass == 4


def test_library_and_product_names_are_not_the_librarys_functions() -> None:
    pos = CUBLASLT_PROBE.index("ctypes.CDLL")
    line = "    ctypes.CDLL('libcublasLt.so.12')"
    assert library_load(CUBLASLT_PROBE, pos, "'libcublasLt.so.12'", line)[0] == "probes-nvidia-library"
    binding = CUBLASLT_PROBE + "def f(h):\n    cublasLtCreate(h)\n    cublasLtMatmul(h)\n    cudaGetDevice(h)\n"
    assert library_load(binding, pos, "'libcublasLt.so.12'", line)[0] == "loads-nvidia-library"


def test_a_cublaslt_probe_is_a_caveat_not_a_binding(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = dict(wheel_metadata("probe", "1.0", ["torch"]))
    files["probe/__init__.py"] = "import torch\nfrom . import libs\n"
    files["probe/libs.py"] = CUBLASLT_PROBE
    _, _, verdict = vet(str(make_wheel(tmp_path / "probe-1.0-py3-none-any.whl", files)))
    assert verdict.klass == 1, verdict.reason


JIT_BOTH_SIDES = (
    "import os\nimport torch\nfrom torch.utils.cpp_extension import load\n"
    "_HERE = os.path.dirname(__file__)\n"
    "if torch.version.hip:\n"
    "    _flags = ['--offload-arch=' + os.environ.get('PYTORCH_ROCM_ARCH', 'gfx942'), '-O3']\n"
    "    os.environ.setdefault('CXX', 'hipcc')\n"
    "else:\n"
    "    _flags = ['-gencode', 'arch=compute_90,code=sm_90']\n"
    "_C = load(name='kern', sources=[os.path.join(_HERE, 'csrc', 'kern.cu')], extra_cuda_cflags=_flags)\n"
)


def test_the_hip_side_of_a_jit_is_a_rocm_path(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = dict(wheel_metadata("jitboth", "1.2.1", ["torch"]))
    files["jitboth/__init__.py"] = "from . import kern\n"
    files["jitboth/kern.py"] = JIT_BOTH_SIDES
    files["jitboth/csrc/kern.cu"] = "#include <cuda_runtime.h>\n__global__ void k(float* x) { x[0] = 1; }\n"
    files["jitboth/csrc/kern.cuh"] = "#include <cuda_fp16.h>\n"
    target, result, verdict = vet(str(make_wheel(tmp_path / "jitboth-1.2.1-py3-none-any.whl", files)))
    assert verdict.klass == 3, verdict.reason
    assert "jit-rocm" in verdict.reason and "cuda-jit-import-path" in verdict.reason
    from pytest_rocm.vet.gpu_fit import basis
    from pytest_rocm.vet.render import document

    assert basis(document(target, result, verdict, None)).startswith("JIT at run time (hipcc")

    files["jitboth/kern.py"] = (
        JIT_BOTH_SIDES.replace("hipcc", "c++").replace("--offload-arch=", "").replace("PYTORCH_ROCM_ARCH", "ARCH")
    )  # the CUDA side alone: class 4
    _, _, verdict = vet(str(make_wheel(tmp_path / "jitboth-1.2.1-py3-none-any.whl", files)))
    assert verdict.klass == 4


def test_rocm_words_without_a_run_time_compiler_are_no_jit(tmp_path: Path) -> None:
    """A tool that reads ROCM_HOME and names hipcc (an environment report, a rule table) compiles nothing."""
    files: dict[str, str | bytes] = dict(wheel_metadata("envtool", "1.0", []))
    files["envtool/__init__.py"] = (
        "import os\nimport subprocess  # the jit and triton.jit words, cpp_extension and load_inline too\n"
        "ROCM_HOME = os.environ.get('ROCM_HOME')\nCOMPILERS = ('hipcc', 'nvcc')\nFLAG = '--offload-arch'\n"
    )
    _, result, verdict = vet(str(make_wheel(tmp_path / "envtool-1.0-py3-none-any.whl", files)))
    assert "jit-rocm" not in {f.rule for f in result.findings} and verdict.klass == 1
