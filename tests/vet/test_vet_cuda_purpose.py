"""A package whose purpose is the CUDA path is not demoted with its optional paths, and a package
with no code is judged by what it requires.

- the CUDA target of another library shipped as its own distribution (``jax-cuda12-plugin``:
  its host probes for it, so it loads its CUDA binaries in a ``try``) was class 1;
- a kernel package whose import loads only its version, with a module that JIT-builds ``.cu``
  sources with ``torch.utils.cpp_extension.load`` as it is imported, was class 1 "pure Python";
- ``cuda-python`` (no code: ``Requires-Dist: cuda-bindings``) was class 1 with confidence high.
A package that works without its optional CUDA path (torchao 0.7's shape) stays what it was.
"""

from __future__ import annotations

from pathlib import Path

from fake_packages import make_elf, make_wheel, wheel_metadata

from pytest_rocm.vet import vet

FALLBACK_INIT = "from . import _version\ntry:\n    from . import _ext\nexcept ImportError:\n    _ext = None\n"
CUDA_SO = make_elf(["libcudart.so.12", "libcuda.so.1"], [".nv_fatbin"])


def _plugin(tmp_path: Path, dist: str, substance: bool) -> Path:
    pkg = dist.replace("-", "_")
    files: dict[str, str | bytes] = dict(wheel_metadata(pkg, "0.6.0", []))
    files[f"{pkg}/__init__.py"] = FALLBACK_INIT + ("from . import ops\n" if substance else "")
    files[f"{pkg}/_version.py"] = "__version__ = '0.6.0'\n"
    files[f"{pkg}/_ext.cpython-311-x86_64-linux-gnu.so"] = CUDA_SO
    if substance:
        files[f"{pkg}/ops.py"] = "import torch\ndef add(a, b):\n    return torch.add(a, b)\n"
    return make_wheel(tmp_path / f"{pkg}-0.6.0-cp311-cp311-linux_x86_64.whl", files)


def test_the_cuda_target_of_another_library_is_class_4(tmp_path: Path) -> None:
    _, result, verdict = vet(str(_plugin(tmp_path, "jaxlike-cuda12-plugin", substance=True)))
    assert verdict.klass == 4, verdict.reason
    assert result.purpose and "cuda12" in result.purpose
    assert any("counted" in c and "CUDA build" in c for c in verdict.caveats)


def test_a_package_of_nothing_but_its_fallback_cuda_extension_is_class_4(tmp_path: Path) -> None:
    _, _, verdict = vet(str(_plugin(tmp_path, "kernelonly", substance=False)))
    assert verdict.klass == 4, verdict.reason


def test_a_package_that_works_without_its_cuda_fallback_stays_class_1(tmp_path: Path) -> None:
    """torchao 0.7's shape: its own torch code, a CUDA extension loaded in a try."""
    _, result, verdict = vet(str(_plugin(tmp_path, "aolike", substance=True)))
    assert verdict.klass == 1 and not result.purpose
    assert any("optional path" in c for c in verdict.caveats)


def test_a_module_jit_building_cu_sources_as_it_is_imported_is_the_package(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = dict(wheel_metadata("jitkern", "1.0", []))
    files["jitkern/__init__.py"] = "from ._version import __version__\n"
    files["jitkern/_version.py"] = "__version__ = '1.0'\n"
    files["jitkern/ops.py"] = (
        "import os\nimport torch\nfrom torch.utils.cpp_extension import load\n"
        "_C = load(name='jitkern_C', sources=[os.path.join(os.path.dirname(__file__), 'csrc', 'k.cu')])\n"
    )
    files["jitkern/csrc/k.cu"] = "#include <cuda_runtime.h>\n__global__ void k(float* x) { x[0] = 1; }\n"
    _, _, verdict = vet(str(make_wheel(tmp_path / "jitkern-1.0-py3-none-any.whl", files)))
    assert verdict.klass == 4, verdict.reason
    assert "pure Python" not in verdict.reason


def test_a_metapackage_of_cuda_only_bindings_is_class_4(tmp_path: Path) -> None:
    """cuda-python 12.9: no code, ``Requires-Dist: cuda-bindings~=12.9.0``."""
    files = wheel_metadata("cuda_python", "12.9.0", ["cuda-bindings~=12.9.0", "cuda-pathfinder~=1.1"])
    _, _, verdict = vet(str(make_wheel(tmp_path / "cuda_python-12.9.0-py3-none-any.whl", dict(files))))
    assert verdict.klass == 4, verdict.reason
    assert "requires-cuda-only-package" in verdict.reason


def test_a_metapackage_of_pure_packages_is_not_high_confidence(tmp_path: Path) -> None:
    files = wheel_metadata("metaonly", "1.0", ["requests", "numpy"])
    _, _, verdict = vet(str(make_wheel(tmp_path / "metaonly-1.0-py3-none-any.whl", dict(files))))
    assert verdict.klass == 1 and verdict.confidence == "medium"
    assert "requirements decide" in verdict.confidence_why


def test_a_metapackage_sharing_the_namespace_of_what_it_requires_still_requires_it() -> None:
    """Installed cuda-python's top-level name is ``cuda``: ``import cuda.bindings`` in its code is
    its own module, but a requirement on the distribution cuda-bindings is another package."""
    import re

    from pytest_rocm.vet.scan import _own_name

    own = {"cuda", "cuda_python"}
    assert _own_name(re.match(r"(?P<mod>cuda\.bindings)", "cuda.bindings"), own)
    assert not _own_name(re.match(r"(?P<dist>cuda-bindings)", "cuda-bindings"), own)
