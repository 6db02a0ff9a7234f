"""Optional or opt-in CUDA code does not decide the class; where a finding lives is said.

Each pattern is a small made-up wheel shaped like the real package that was misjudged: an opt-in
loader's helper returning NVIDIA library names (onnxruntime's ``preload_dlls``), a CUDA extension
loaded inside ``try: ... except: skip`` (torchao 0.7.0), an optional ``cuda/`` sub-package the
package's import never loads (numba), and GPU evidence in a package's tests and examples
(accelerate's ``test_utils/scripts``). Each was class 4 (or decided by test code) before. Next to
each, a control keeps its class: the same code on the import path.
"""

from __future__ import annotations

from pathlib import Path

from fake_packages import make_elf, make_wheel, wheel_metadata

from pytest_rocm.vet import vet

CUDA_ELF = make_elf(["libcudart.so.12", "libc.so.6"], [".text", ".nv_fatbin"])

OPT_IN_PRELOAD = (
    "import ctypes, os\n"
    "def _nvidia_dll_paths():\n"
    "    return [('nvidia', 'cublas', 'lib', 'libcublas.so.12'), ('nvidia', 'cudnn', 'lib', 'libcudnn.so.9')]\n"
    "def preload_dlls(directory=None):\n"
    "    for parts in _nvidia_dll_paths():\n"
    "        ctypes.CDLL(os.path.join(directory or '', *parts), mode=ctypes.RTLD_GLOBAL)\n"
    "__version__ = '1.0'\n"
)


def _wheel(tmp_path: Path, name: str, files: dict[str, str | bytes]) -> str:
    return str(
        make_wheel(tmp_path / f"{name}-1.0-cp311-cp311-linux_x86_64.whl", {**wheel_metadata(name, "1.0", []), **files})
    )


def test_library_names_a_helper_returns_for_an_opt_in_loader_are_a_caveat(tmp_path: Path) -> None:
    """onnxruntime (CPU build) was class 4: its __init__'s helper names libcublas for preload_dlls()."""
    _, result, verdict = vet(_wheel(tmp_path, "ortlike", {"ortlike/__init__.py": OPT_IN_PRELOAD}))
    assert verdict.klass == 1, verdict.reason
    loads = [f for f in result.findings if f.rule == "loads-nvidia-library"]
    assert loads and {f.context for f in loads} == {"opt-in"} and not any(f.counts for f in loads)
    assert any("ortlike/__init__.py: loaded only by code the import path does not run" in c for c in verdict.caveats)


def test_control_the_same_names_loaded_on_import_stay_class_4(tmp_path: Path) -> None:
    module = OPT_IN_PRELOAD + "preload_dlls()\n"
    _, _, verdict = vet(_wheel(tmp_path, "ortlike", {"ortlike/__init__.py": module}))
    assert verdict.klass == 4, verdict.reason


TRY_EXTENSION = (
    "import logging\n"
    "import torch\n"
    "try:\n"
    "    from pathlib import Path\n"
    "    so_files = list(Path(__file__).parent.glob('_C*.so'))\n"
    "    torch.ops.load_library(so_files[0])\n"
    "except:\n"
    "    logging.debug('Skipping import of cpp extensions')\n"
    "from . import quant\n"
)


def test_a_cuda_extension_loaded_in_a_try_that_carries_on_is_a_caveat(tmp_path: Path) -> None:
    """torchao 0.7.0 was class 4: its _C.so (CUDA) is loaded inside try/except: skip."""
    files = {
        "aolike/__init__.py": TRY_EXTENSION,
        "aolike/quant.py": "import torch\n",
        "aolike/_C.cpython-311-x86_64-linux-gnu.so": CUDA_ELF,
    }
    _, result, verdict = vet(_wheel(tmp_path, "aolike", files))
    assert verdict.klass == 1, verdict.reason
    binary = [f for f in result.findings if f.path.endswith(".so")]
    assert binary and {f.context for f in binary} == {"fallback"}
    assert not result.cuda_binaries  # not what the import loads: no "1 of 1 binaries are built for CUDA"
    assert any("_C.cpython-311-x86_64-linux-gnu.so: loaded only inside a try" in c for c in verdict.caveats)


def test_control_the_same_extension_imported_unguarded_stays_class_4(tmp_path: Path) -> None:
    files = {
        "aolike/__init__.py": "import torch\nfrom . import _C\n",
        "aolike/_C.cpython-311-x86_64-linux-gnu.so": CUDA_ELF,
    }
    _, _, verdict = vet(_wheel(tmp_path, "aolike", files))
    assert verdict.klass == 4, verdict.reason


def test_control_an_extension_loaded_by_a_computed_name_stays_class_4(tmp_path: Path) -> None:
    """No reference names the binary (bitsandbytes builds its name in an f-string): binaries are
    the evidence of what was built."""
    loader = "import ctypes\ntry:\n    lib = ctypes.CDLL(f'lib{NAME}.so')\nexcept OSError:\n    lib = None\n"
    files = {"bnblike/__init__.py": "NAME = 'bnblike_cuda'\n" + loader, "bnblike/libbnblike_cuda.so": CUDA_ELF}
    _, _, verdict = vet(_wheel(tmp_path, "bnblike", files))
    assert verdict.klass == 4, verdict.reason


NUMBA_INIT = "import sys\nfrom numblike.core import config\nfrom . import np\n"
CUDA_SUBPACKAGE = {
    "numblike/cuda/__init__.py": "from numblike.cuda.cudadrv import driver\n",
    "numblike/cuda/cudadrv/__init__.py": "",
    "numblike/cuda/cudadrv/driver.py": "import ctypes\n_lib = ctypes.CDLL('libcuda.so')\ndef cuInit(): return _lib.cuInit(0)\n",
    "numblike/cuda/fp16.cu": '#include <cuda_fp16.h>\n__global__ void k(float* x) { asm("cvt.rn.f16.f32 %0, %1;"); }\n',
    "numblike/cuda/cudadrv/_extras.cpython-311-x86_64-linux-gnu.so": CUDA_ELF,
}


def test_an_optional_cuda_sub_package_the_import_never_loads_is_a_caveat(tmp_path: Path) -> None:
    """numba was class 4 because of numba/cuda/, which `import numba` never loads."""
    files = {
        "numblike/__init__.py": NUMBA_INIT,
        "numblike/core/__init__.py": "",
        "numblike/core/config.py": "import os\n",
        "numblike/np/__init__.py": "def cuda_array(x):\n    from numblike import cuda\n    return cuda\n",
        **CUDA_SUBPACKAGE,
    }
    _, result, verdict = vet(_wheel(tmp_path, "numblike", files))
    assert verdict.klass == 1, verdict.reason
    inside = [f for f in result.findings if f.path.startswith("numblike/cuda/")]
    assert {f.context for f in inside} == {"optional-module"}
    assert {"loads-nvidia-library", "links-cuda-library", "cuda-header"} <= {f.rule for f in inside}
    assert any(c.startswith("CUDA code on an optional path") and "numblike/cuda/" in c for c in verdict.caveats)


def test_control_the_sub_package_imported_by_the_package_stays_class_4(tmp_path: Path) -> None:
    files = {
        "numblike/__init__.py": NUMBA_INIT + "from . import cuda\n",
        "numblike/np/__init__.py": "",
        **CUDA_SUBPACKAGE,
    }
    _, _, verdict = vet(_wheel(tmp_path, "numblike", files))
    assert verdict.klass == 4, verdict.reason


def test_control_a_package_whose_init_imports_nothing_of_its_own_keeps_everything(tmp_path: Path) -> None:
    """An empty __init__ says nothing about what users import (pkg.cuda by name): all counts."""
    files = {"numblike/__init__.py": "", **CUDA_SUBPACKAGE}
    _, _, verdict = vet(_wheel(tmp_path, "numblike", files))
    assert verdict.klass == 4, verdict.reason


def test_a_backend_module_named_to_import_module_is_loaded(tmp_path: Path) -> None:
    files = {
        "numblike/__init__.py": "import importlib\nfrom . import np\ndef backend():\n"
        "    return importlib.import_module('numblike.cuda')\n",
        "numblike/np/__init__.py": "",
        **CUDA_SUBPACKAGE,
    }
    _, _, verdict = vet(_wheel(tmp_path, "numblike", files))
    assert verdict.klass == 4, verdict.reason


def test_evidence_in_tests_and_examples_does_not_decide_and_says_where(tmp_path: Path) -> None:
    """accelerate was class 2 on a `from transformers import` in accelerate/test_utils/; and a
    CUDA-only import in a package's test script is no runtime evidence."""
    files = {
        "acclike/__init__.py": "import torch\n",
        "acclike/test_utils/__init__.py": "from transformers import AutoModel\n",
        "acclike/test_utils/scripts/test_ops.py": "import pycuda.autoinit\n",
        "acclike/examples/demo.py": "import ctypes\nctypes.CDLL('libcudart.so.12')\n",
    }
    _, result, verdict = vet(_wheel(tmp_path, "acclike", files))
    assert verdict.klass == 1, verdict.reason
    places = {f.path: f.place for f in result.findings}
    assert places["acclike/test_utils/__init__.py"] == "tests"
    assert places["acclike/examples/demo.py"] == "examples"
    assert not [f for f in result.findings if f.counts and f.place != "runtime"]
    assert any("in its tests, not counted" in c for c in verdict.caveats)
    assert any("in its examples, not counted" in c for c in verdict.caveats)


def test_where_a_finding_lives() -> None:
    from pytest_rocm.vet.rule import place_of

    assert place_of("pkg/ops.py") == "runtime"
    assert place_of("pkg-1.0/setup.py") == "build" and place_of("pkg-1.0/CMakeLists.txt") == "build"
    assert place_of("pkg-1.0/tests/test_x.py") == "tests" and place_of("pkg/test_utils/scripts/x.py") == "tests"
    assert place_of("pkg/cuda/tests/data/jitlink.ptx") == "tests" and place_of("pkg/x_test.py") == "tests"
    assert place_of("pkg-1.0/examples/run.py") == "examples" and place_of("pkg-1.0/docs/conf.py") == "examples"
    assert place_of("pkg-1.0/benchmarks/b.py") == "examples"


def test_import_lines_read_as_they_run() -> None:
    from pytest_rocm.vet.imports_text import module_imports

    text = (
        '"""\nimport indocstring\n"""\n'
        "import os, pkg.core.config as c\n"
        "from . import (a,\n    b)\n"
        "if TYPE_CHECKING:\n    import never\n"
        "try:\n    from ._C import ops\nexcept ImportError:\n    pass\n"
        "try:\n    import hard\nexcept ImportError:\n    raise RuntimeError('x')\n"
        "def f():\n    import lazy\n"
        "class K:\n    import inclass\n"
        "if __name__ == '__main__':\n    import mainonly\n"
    )
    edges, lazy = module_imports(text, "pkg", True)
    assert edges == [
        ("os", False),
        ("pkg.core.config", False),
        ("pkg", False),
        ("pkg.a", False),
        ("pkg.b", False),
        ("pkg._C", True),
        ("pkg._C.ops", True),
        ("hard", False),
        ("inclass", False),
    ]
    assert not lazy and module_imports("def __getattr__(name):\n    pass\n", "pkg", True)[1]


def test_the_graph_of_an_sdist_strips_its_folder_and_src() -> None:
    from pytest_rocm.vet.modules import ImportGraph

    graph = ImportGraph(strip_first=True)
    assert graph.module_of("pkg-1.0/src/pkg/sub/__init__.py") == ("pkg.sub", True)
    assert graph.module_of("pkg-1.0/pkg/_C.cpython-311-x86_64-linux-gnu.so") == ("pkg._C", False)
    assert graph.module_of("pkg-1.0/setup.py") is None and graph.module_of("x.whl!pkg/a.py") is None


VERSION_PROBE = (
    "from functools import lru_cache\n"
    "def is_torch_available():\n    return True\n"
    "@lru_cache\n"
    "def get_cuda_runtime_version():\n"
    "    import ctypes\n"
    "    version = ctypes.c_int()\n"
    "    cudart = ctypes.CDLL('libcudart.so')\n"
    "    cudart.cudaRuntimeGetVersion(ctypes.byref(version))\n"
    "    return version.value // 1000, (version.value % 1000) // 10\n"
)
FIND_PROBE = (
    "import ctypes, ctypes.util\n"
    "def _get_cuda():\n"
    "    lib_name = ctypes.util.find_library('cudart')\n"
    "    if lib_name is None:\n        return None\n"
    "    try:\n        return ctypes.CDLL(lib_name)\n    except OSError:\n        return None\n"
    "BACKEND = _get_cuda()\n"
)


def test_one_version_query_in_an_opt_in_function_is_a_caveat(tmp_path: Path) -> None:
    """transformers 5.5.4 was class 4 on get_cuda_runtime_version(), which nothing on its import
    path calls: one question to libcudart in a function, in a file that is no binding."""
    _, result, verdict = vet(_wheel(tmp_path, "trflike", {"trflike/__init__.py": "import torch\n" + VERSION_PROBE}))
    assert verdict.klass == 1, verdict.reason
    assert {f.context for f in result.findings if f.rule == "loads-nvidia-library"} == {"opt-in"}


def test_a_library_looked_up_with_find_library_is_a_probe(tmp_path: Path) -> None:
    """kernels 0.13 was class 4 on find_library('cudart'), which returns None when it is absent;
    the load itself is in a try that carries on."""
    _, result, verdict = vet(_wheel(tmp_path, "kernlike", {"kernlike/__init__.py": FIND_PROBE}))
    assert verdict.klass == 1, verdict.reason
    assert "probes-nvidia-library" in {f.rule for f in result.findings if f.counts}


def test_control_a_binding_that_defines_the_librarys_api_stays_class_4(tmp_path: Path) -> None:
    binding = (
        "from ctypes import CDLL\n_lib = None\n"
        "def nvmlInit():\n    global _lib\n    _lib = CDLL('libnvidia-ml.so.1')\n    return _lib.nvmlInit_v2()\n"
    )
    _, _, verdict = vet(_wheel(tmp_path, "nvmllike", {"nvmllike/__init__.py": binding}))
    assert verdict.klass == 4, verdict.reason
