"""The six false verdicts of issue 18, each as a small synthetic package made here (bytes), with
the class a correct vet gives, and a control next to it that must keep its class.

All six gave the dangerous answer before the fix (a CUDA-only package called class 3 or 1), or
decided on evidence that was not evidence (the package's own name).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_packages import make_elf, make_sdist, make_wheel, wheel_metadata, write_tree

from pytest_rocm.vet import vet

CUDA_KERNEL = (
    "#include <cuda_runtime.h>\n"
    "__global__ void raster(float* x) { x[threadIdx.x] *= 2.0f; }\n"
    "void launch(float* h, int n) { float* d; cudaMalloc(&d, n * sizeof(float)); }\n"
)
HIP_HEADER = (
    "#pragma once\n"
    "#if defined(__HIPCC__)\n"
    "#include <hip/hip_version.h>\n"
    "#include <hip/hip_runtime.h>\n"
    "#else\n"
    "#include <cuda_runtime.h>\n"
    "#endif\n"
)
CUDA_EXTENSION_SETUP = (
    "from setuptools import setup\n"
    "from torch.utils.cpp_extension import BuildExtension, CUDAExtension\n"
    "setup(name='{name}', ext_modules=[CUDAExtension('{name}._C', ['csrc/k.cu'])],\n"
    "      cmdclass={{'build_ext': BuildExtension}})\n"
)


def rules(result, *, counted: bool = True) -> set[str]:
    return {f.rule for f in result.findings if f.counts or not counted}


# 1 -- text outranks binaries ----------------------------------------------------------------
def _binary_wheel(tmp_path: Path, hip_binary: bool) -> Path:
    files: dict[str, str | bytes] = dict(wheel_metadata("splatcu", "1.0", ["torch"]))
    files["splatcu/__init__.py"] = "import torch\nfrom . import _C\n"
    for i in range(3):
        files[f"splatcu/_C{i}.cpython-311-x86_64-linux-gnu.so"] = make_elf(
            ["libcudart.so.12", "libcublas.so.12", "libc.so.6"], [".text", ".nv_fatbin"]
        )
    if hip_binary:
        files["splatcu/_C_hip.cpython-311-x86_64-linux-gnu.so"] = make_elf(["libamdhip64.so.6"], [".hip_fatbin"])
    files["splatcu/include/splatcu/runtime.h"] = HIP_HEADER
    return make_wheel(tmp_path / "splatcu-1.0-cp311-cp311-linux_x86_64.whl", files)


def test_cuda_binaries_with_hip_headers_are_class_4(tmp_path: Path) -> None:
    _, result, verdict = vet(str(_binary_wheel(tmp_path, hip_binary=False)))
    assert "hip-header" in rules(result, counted=False)  # the headers are seen...
    assert verdict.klass == 4, verdict.reason  # ...but the binaries are what was built
    assert "links-cuda-library" in verdict.reason
    assert any("hip-header" in c for c in verdict.contrary_notes), verdict.contrary_notes


def test_control_a_hip_binary_beside_them_is_class_3(tmp_path: Path) -> None:
    _, _, verdict = vet(str(_binary_wheel(tmp_path, hip_binary=True)))
    assert verdict.klass == 3, verdict.reason
    assert any("3 of 4 binaries" in c for c in verdict.contrary_notes), verdict.contrary_notes


# 2 -- a vendored third-party header decides the verdict -------------------------------------
def _vendored(tmp_path: Path, built: bool) -> Path:
    files: dict[str, str | bytes] = {
        "setup.py": CUDA_EXTENSION_SETUP.format(name="glmsplat"),
        "glmsplat/__init__.py": "import torch\n",
        "csrc/k.cu": CUDA_KERNEL,
        "third_party/glm/glm/simd/platform.h": (
            "#if defined(__CUDACC__)\n#define GLM_COMPILER_CUDA\n#elif defined(__HIP__)\n#define GLM_COMPILER_HIP\n#endif\n"
        ),
    }
    if built:  # llama-cpp-python's shape: the vendored tree is the package's GPU code, built by it
        files["CMakeLists.txt"] = "project(glmsplat)\nadd_subdirectory(third_party/glm)\n"
        files["third_party/glm/CMakeLists.txt"] = "enable_language(HIP)\nadd_library(glmk k.hip)\n"
        files["third_party/glm/k.hip"] = "#include <hip/hip_runtime.h>\n__global__ void f(float* x) {}\n"
    return make_sdist(tmp_path / "glmsplat-0.1.tar.gz", files, "glmsplat-0.1")


def test_vendored_hip_text_does_not_make_a_cuda_package_class_3(tmp_path: Path) -> None:
    _, result, verdict = vet(str(_vendored(tmp_path, built=False)))
    vendored = [f for f in result.findings if f.rule == "hip-platform-macro"]
    assert vendored and all(f.context == "vendored" and not f.counts for f in vendored)
    assert verdict.klass == 4, verdict.reason


def test_control_a_vendored_tree_the_package_builds_counts(tmp_path: Path) -> None:
    _, result, verdict = vet(str(_vendored(tmp_path, built=True)))
    assert verdict.klass == 3, verdict.reason
    assert any(f.rule == "hip-source-file" and f.counts for f in result.findings)


# 3 -- JIT-compiled CUDA on the core path ------------------------------------------------------
JIT_AT_IMPORT = (
    "import os\nfrom torch.utils.cpp_extension import load\n"
    "_src = os.path.dirname(__file__)\n"
    "_C = load(name='_raster', sources=[os.path.join(_src, 'csrc', 'raster.cu')])\n"
)
JIT_VIA_HELPER = (
    "from torch.utils.cpp_extension import load\n"
    "def _build():\n"
    "    return load(name='_raster',\n"
    "                sources=['csrc/raster.cu'])\n"
    "_C = _build()\n"
)
JIT_OPT_IN = (  # peft's BOFT shape: loaded lazily when the feature is used, with a fallback
    "from torch.utils.cpp_extension import load\n"
    "_fbd = None\n"
    "def get_fbd_cuda():\n"
    "    global _fbd\n"
    "    try:\n"
    "        _fbd = load(name='fbd_cuda', sources=['fbd/fbd_cuda.cu'])\n"
    "    except Exception:\n"
    "        _fbd = None\n"
    "    return _fbd\n"
)


@pytest.mark.parametrize(("loader", "klass"), [(JIT_AT_IMPORT, 4), (JIT_VIA_HELPER, 4), (JIT_OPT_IN, 1)])
def test_jit_cuda_on_the_import_path_is_class_4_behind_an_opt_in_a_caveat(
    tmp_path: Path, loader: str, klass: int
) -> None:
    root = write_tree(
        tmp_path / "rast",
        {
            "pyproject.toml": '[project]\nname = "rast"\nversion = "0.1"\ndependencies = ["torch"]\n',
            "rast/__init__.py": "import torch\nfrom ._backend import _C\n" if klass == 4 else "import torch\n",
            "rast/_backend.py": loader,
            "rast/csrc/raster.cu": CUDA_KERNEL,
        },
    )
    _, result, verdict = vet(str(root))
    assert verdict.klass == klass, verdict.reason
    if klass == 4:
        assert "cuda-jit-import-path" in verdict.reason
    else:
        assert "cuda-jit-import-path" not in rules(result)
        assert any("no build step compiles" in c for c in verdict.contrary_notes)


# 4 -- ctypes bindings to vendor libraries ----------------------------------------------------
NVML_BINDING = (
    "from ctypes import CDLL, byref, c_uint\n"
    "import sys\n"
    "_lib = None\n"
    "def nvmlInit():\n"
    "    global _lib\n"
    "    name = 'nvml.dll' if sys.platform == 'win32' else 'libnvidia-ml.so.1'\n"
    "    _lib = CDLL(name)\n"
    "    return _lib.nvmlInit_v2()\n"
)


@pytest.mark.parametrize(
    "loader",
    [
        NVML_BINDING,
        "import ctypes\n_cuda = ctypes.cdll.LoadLibrary('libcuda.so')\n",
        "import ctypes, ctypes.util\n_rt = ctypes.CDLL(ctypes.util.find_library('cudart'))\n",
        "import cffi\nffi = cffi.FFI()\nlib = ffi.dlopen('nvcuda.dll')\n",
    ],
)
def test_a_ctypes_binding_to_an_nvidia_library_is_class_4(tmp_path: Path, loader: str) -> None:
    files = dict(wheel_metadata("nvbind", "11.5", []))
    files["nvbind/__init__.py"] = loader
    _, result, verdict = vet(str(make_wheel(tmp_path / "nvbind-11.5-py3-none-any.whl", files)))
    assert "loads-nvidia-library" in rules(result)
    assert verdict.klass == 4, verdict.reason


@pytest.mark.parametrize("lib", ["libamdhip64.so.6", "librocm_smi64.so.7", "libamd_smi.so"])
def test_a_ctypes_binding_to_an_amd_library_is_a_rocm_path(tmp_path: Path, lib: str) -> None:
    files = dict(wheel_metadata("amdbind", "1.0", []))
    files["amdbind/__init__.py"] = f"import ctypes\n_lib = ctypes.CDLL({lib!r})\n"
    files["amdbind/nv.py"] = "import ctypes\n_nv = ctypes.CDLL('libnvidia-ml.so.1')\n"
    _, result, verdict = vet(str(make_wheel(tmp_path / "amdbind-1.0-py3-none-any.whl", files)))
    assert "loads-rocm-library" in rules(result)
    assert verdict.klass == 3, verdict.reason


def test_a_library_name_in_a_file_that_loads_nothing_is_not_a_binding(tmp_path: Path) -> None:
    hint = "import torch\nHINT = 'set NVIDIA_DLL_PATH, or install libnvidia-ml.so.1'\n"  # DLL: a word, not a loader
    root = write_tree(tmp_path / "p", {"p/__init__.py": hint})
    _, result, verdict = vet(str(root))
    assert "loads-nvidia-library" not in rules(result) and verdict.klass == 1


# 5 -- a loose rocm_* identifier is not a ROCm build path --------------------------------------
@pytest.mark.parametrize(
    "line",
    [
        "rocm_major, rocm_minor = rocm_version\n",
        "rocm, cuda = detect()\n",
        "ext_name = '_rocm_C'\n",
        "flags = [rocm_arch_list,\n    '-O3']\n",
        "names = ['rocm_arch_list',\n    'x']\n",
    ],
)
def test_a_loose_rocm_identifier_in_setup_py_is_not_a_rocm_path(tmp_path: Path, line: str) -> None:
    files = {"setup.py": line + CUDA_EXTENSION_SETUP.format(name="loose"), "csrc/k.cu": CUDA_KERNEL}
    _, result, verdict = vet(str(make_sdist(tmp_path / "loose-0.1.tar.gz", files, "loose-0.1")))
    assert not {"rocm-version-or-requirement", "build-rocm"} & rules(result)
    assert verdict.klass == 4, verdict.reason


@pytest.mark.parametrize(
    "line",
    [
        "ROCM_HOME = os.environ.get('ROCM_HOME')\n",
        "from torch.utils.cpp_extension import IS_HIP_EXTENSION\nif IS_HIP_EXTENSION:\n    args = ['--offload-arch=gfx942']\n",
        "from torch.utils.hipify import hipify_python\n",
    ],
)
def test_control_real_rocm_build_evidence_is_class_3(tmp_path: Path, line: str) -> None:
    files = {"setup.py": "import os\n" + line + CUDA_EXTENSION_SETUP.format(name="real"), "csrc/k.cu": CUDA_KERNEL}
    _, _, verdict = vet(str(make_sdist(tmp_path / "real-0.1.tar.gz", files, "real-0.1")))
    assert verdict.klass == 3, verdict.reason


# 6 -- a package matches its own name ----------------------------------------------------------
def test_a_package_never_depends_on_itself(tmp_path: Path) -> None:
    files = {
        "setup.py": (
            "from setuptools import setup, Extension\n"
            "setup(name='pycuda',\n"
            "      package_data={\n"
            '          "pycuda": [\n'
            '              "cuda/*.hpp",\n'
            "          ]},\n"
            "      ext_modules=[Extension('pycuda._driver', ['src/wrapper/wrap_cudadrv.cpp'])])\n"
        ),
        "pycuda/__init__.py": "",
        "pycuda/autoinit.py": "import pycuda.driver as cuda\nfrom pycuda import driver\n",
        "src/wrapper/wrap_cudadrv.cpp": "#include <cuda.h>\nvoid init() { cuInit(0); CUdevice d; }\n",
    }
    _, result, verdict = vet(str(make_sdist(tmp_path / "pycuda-2024.1.tar.gz", files, "pycuda-2024.1")))
    assert not {"requires-cuda-only-package", "python-cuda-only-import"} & rules(result, counted=False)
    assert verdict.klass == 4, verdict.reason  # decided by its own CUDA driver code, built by setup.py
    assert {f.rule for f in verdict.evidence} & {"cuda-driver-api", "cuda-header"}


def test_control_another_package_depending_on_pycuda_is_evidence(tmp_path: Path) -> None:
    files = {
        "setup.py": "from setuptools import setup\nsetup(name='user', install_requires=[\n    'pycuda>=2024',\n])\n"
    }
    _, result, verdict = vet(str(make_sdist(tmp_path / "user-0.1.tar.gz", files, "user-0.1")))
    assert "requires-cuda-only-package" in rules(result) and verdict.klass == 4


# the deciding and the contrary evidence, in JSON and in text ----------------------------------
def test_json_and_text_name_the_deciding_and_the_contrary_evidence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_rocm.cli import main

    whl = str(_binary_wheel(tmp_path, hip_binary=False))
    assert main(["vet", whl, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["class"] == 4 and doc["confidence"] == "high" and doc["confidence_why"]
    assert {f["rule"] for f in doc["evidence"]} >= {"links-cuda-library", "nvidia-fatbin-section"}
    assert {f["rule"] for f in doc["contrary"]} == {"hip-header", "hip-platform-macro"}
    assert "none of its 4 binaries links HIP" not in doc["contrary_notes"][0]  # 3 binaries, not 4
    assert "none of its 3 binaries links HIP" in doc["contrary_notes"][0]
    assert main(["vet", whl]) == 0
    out = capsys.readouterr().out
    assert "confidence: high" in out and "against it:" in out and "none of its 3 binaries" in out


def test_a_verdict_with_built_evidence_on_both_sides_is_not_high_confidence(tmp_path: Path) -> None:
    _, _, verdict = vet(str(_binary_wheel(tmp_path, hip_binary=True)))
    assert verdict.klass == 3 and verdict.confidence == "medium"
    assert {f.rule for f in verdict.contrary} >= {"links-cuda-library"}


# 7 -- a CUDA-only import in a module the build ships, outside the package folder --------------
def _with_a_top_level_module(tmp_path: Path, module: str, where: str = "fastkern.py") -> Path:
    files: dict[str, str | bytes] = {
        "PKG-INFO": "Metadata-Version: 2.1\nName: kernpkg\nVersion: 1.0\n",
        "pyproject.toml": (
            '[project]\nname = "kernpkg"\nversion = "1.0"\n'
            '[tool.setuptools]\npy-modules = ["fastkern"]\npackages = ["kernpkg"]\n'
        ),
        "kernpkg/__init__.py": "def f():\n    return 1\n",
        where: module,
        "README.md": "# kernpkg\n",
        "bin/kernrun": "#!/usr/bin/env python\nimport fastkern\n",
    }
    return make_sdist(tmp_path / "kernpkg-1.0.tar.gz", files, "kernpkg-1.0")


PYCUDA_MODULE = "import pycuda.autoinit\nimport pycuda.driver as drv\nfrom pycuda.compiler import SourceModule\n"


def test_a_cuda_only_import_in_a_shipped_top_level_module_is_class_4(tmp_path: Path) -> None:
    """Was class 1, "pure Python: no GPU code found": the import was read but weighed as a caveat,
    though the module cannot be imported without PyCUDA."""
    _, result, verdict = vet(str(_with_a_top_level_module(tmp_path, PYCUDA_MODULE)))
    assert verdict.klass == 4, verdict.reason
    assert [f.path for f in verdict.evidence if f.rule == "cuda-only-import-on-import-path"] == [
        "kernpkg-1.0/fastkern.py"
    ]
    # and what was not read is said: the verdict saw neither of these
    assert result.not_read == 2 and result.not_read_examples == ["kernpkg-1.0/README.md", "kernpkg-1.0/bin/kernrun"]


@pytest.mark.parametrize(
    ("module", "where"),
    [
        ("try:\n    import pycuda.driver as drv\nexcept ImportError:\n    drv = None\n", "fastkern.py"),
        ("def compile_kernel(src):\n    from pycuda.compiler import SourceModule\n    return SourceModule(src)\n", "fastkern.py"),
        ("if __name__ == '__main__':\n    import pycuda.autoinit\n", "fastkern.py"),
        (PYCUDA_MODULE, "tests/test_kernels.py"),
        (PYCUDA_MODULE, "examples/demo.py"),
    ],
    ids=["guarded", "in-a-function", "main-block", "tests", "examples"],
)  # fmt: skip
def test_control_an_opt_in_or_unshipped_cuda_import_stays_a_caveat(tmp_path: Path, module: str, where: str) -> None:
    _, result, verdict = vet(str(_with_a_top_level_module(tmp_path, module, where)))
    assert verdict.klass == 1, verdict.reason
    found = {f.rule for f in result.findings if f.counts or f.place != "runtime"}  # tests/examples: named, not counted
    assert "python-cuda-only-import" in found and "cuda-only-import-on-import-path" not in found
