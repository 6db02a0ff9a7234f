"""A real stack's artifacts: sdists in the --wheels folder, binaries too big for the old limits,
one library per ROCm version, and rows that say what they rest on. Each artifact is made here,
small, in the shape of the real one (mamba-ssm's sdist, onnxruntime-rocm's skipped library,
bitsandbytes' rocm64/rocm70 libraries, pytorch-triton-rocm, hip-python)."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from fake_packages import make_elf, make_sdist, make_wheel, wheel_metadata
from test_vet_stack import offload_bundle

from pytest_rocm.cli import main
from pytest_rocm.vet import Limits, vet
from pytest_rocm.vet.render import document, stack_table
from pytest_rocm.vet.stack import Pin, read_pins, vet_stack, wheel_index

MAMBA_SETUP = (
    "from setuptools import setup\n"
    "from torch.utils.cpp_extension import BuildExtension, CUDAExtension\n"
    "setup(name='mambalike', ext_modules=[CUDAExtension('selective_scan_cuda', ['csrc/scan.cu'])],\n"
    "      cmdclass={'build_ext': BuildExtension})\n"
)
CUDA_KERNEL = "#include <cuda_runtime.h>\n__global__ void scan(float* x) { x[threadIdx.x] = 0; }\n"
PKG_INFO = "Metadata-Version: 2.1\nName: mambalike\nVersion: 1.2.0.post1\n"


def _mamba_sdist(folder: Path) -> Path:
    files = {"setup.py": MAMBA_SETUP, "csrc/scan.cu": CUDA_KERNEL, "PKG-INFO": PKG_INFO, "mambalike/__init__.py": ""}
    return make_sdist(folder / "mambalike-1.2.0.post1.tar.gz", files, "mambalike-1.2.0.post1")


def _vet_doc(spec: str, limits: Limits | None = None) -> dict[str, Any]:
    target, result, verdict = vet(spec, limits)
    return document(target, result, verdict, None)


def test_an_sdist_in_the_wheel_folder_is_vetted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """mamba-ssm publishes no wheel: --wheels took *.whl only, so the row said 'not installed'."""
    folder = tmp_path / "wheels"
    folder.mkdir()
    _mamba_sdist(folder)
    req = tmp_path / "requirements.txt"
    req.write_text("mamba-ssm==1.2.0.post1\nmambalike==1.2.0.post1\n")
    assert main(["vet", "-r", str(req), "--wheels", str(folder), "--json"]) == 1
    rows = {r["package"]: r for r in json.loads(capsys.readouterr().out)["packages"]}
    assert rows["mambalike"]["class"] == 4 and rows["mambalike"]["target"].endswith(".tar.gz")
    assert "build-cuda-extension" in rows["mambalike"]["reason"]
    assert rows["mambalike"]["note"].startswith("sdist")
    assert rows["mamba-ssm"]["class"] is None  # another name: not the file's


@pytest.mark.parametrize(
    ("wheel_tag", "picked"),
    [("py3-none-any", ".whl"), ("cp311-cp311-macosx_11_0_arm64", ".tar.gz")],
    ids=["a-wheel-that-fits-wins", "an-sdist-before-a-wheel-for-another-platform"],
)
def test_which_artifact_a_pin_is_vetted_from(tmp_path: Path, wheel_tag: str, picked: str) -> None:
    folder = tmp_path / "wheels"
    folder.mkdir()
    _mamba_sdist(folder)
    make_wheel(folder / f"mambalike-1.2.0.post1-{wheel_tag}.whl", wheel_metadata("mambalike", "1.2.0.post1", []))
    (pin,) = read_pins(_write(tmp_path / "requirements.txt", "mambalike>=1\n"))
    doc = vet_stack([pin], wheel_index(folder), _vet_doc, [])
    assert doc["packages"][0]["target"].endswith(picked)


def test_only_a_wheel_for_another_platform_is_still_vetted_and_said(tmp_path: Path) -> None:
    folder = tmp_path / "wheels"
    folder.mkdir()
    make_wheel(folder / "macpkg-1.0-cp311-cp311-macosx_11_0_arm64.whl", wheel_metadata("macpkg", "1.0", []))
    doc = vet_stack([Pin("macpkg", "1.0", "requirements.txt:1")], wheel_index(folder), _vet_doc, [])
    assert doc["packages"][0]["class"] == 1 and "another platform" in doc["packages"][0]["note"]


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _hip_so(ids: list[str], pad: int = 0) -> bytes:
    return make_elf(["libamdhip64.so.6"], [".hip_fatbin"], {".hip_fatbin": b"\0" * pad + offload_bundle(ids)})


def test_a_binary_over_the_limit_makes_targets_unknown_not_built_from_source(tmp_path: Path) -> None:
    """onnxruntime-rocm's 1 GiB library was skipped and the row said 'no AMD binary: built from source'."""
    files = dict(wheel_metadata("ortrocm", "1.0+rocm6.2", []))
    files["ortrocm/capi/libonnxruntime_providers_rocm.so"] = _hip_so(["hipv4-amdgcn-amd-amdhsa--gfx942"], 4096)
    wheel = make_wheel(tmp_path / "ortrocm-1.0+rocm6.2-cp311-cp311-linux_x86_64.whl", files)
    doc = _vet_doc(str(wheel), Limits(binary_bytes=1024))
    assert doc["class"] == 3
    (row,) = vet_stack([Pin("ortrocm", None, "x")], wheel_index(tmp_path), lambda _: doc, ["gfx942"])["packages"]
    assert row["basis"].startswith(
        "targets unknown: binary not readable (ortrocm/capi/libonnxruntime_providers_rocm.so"
    )
    assert row["gpus"] == row["basis"]
    # the default limit reads it: targets come from the binary
    assert _vet_doc(str(wheel))["gfx_targets"] == {"ortrocm/capi/libonnxruntime_providers_rocm.so": ["gfx942"]}


@pytest.mark.parametrize("archive", ["wheel", "sdist"])
def test_a_large_binary_is_never_held_in_memory(tmp_path: Path, archive: str) -> None:
    """Members under 256 MiB were read whole into memory (a real wheel peaked at 660 MB); a tar
    member always was. Now a binary is spooled to a temporary file in one pass: Python's peak
    allocation stays far below the member's size (40 MB here: about 80 MB before)."""
    size = 40 * 2**20
    fatbin = offload_bundle(["hipv4-amdgcn-amd-amdhsa--gfx1100"])
    binary = make_elf(["libamdhip64.so.6"], [".text", ".hip_fatbin"], {".text": b"\0" * size, ".hip_fatbin": fatbin})
    files = {**wheel_metadata("bigpkg", "1.0", []), "bigpkg/_C.so": binary}
    if archive == "wheel":
        path = make_wheel(tmp_path / "bigpkg-1.0-py3-none-any.whl", files)
    else:
        path = make_sdist(tmp_path / "bigpkg-1.0.tar.gz", files, "bigpkg-1.0")
    del binary, files
    tracemalloc.start()
    try:
        _, result, _ = vet(str(path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert list(result.gfx_targets.values()) == [["gfx1100"]]
    assert peak < size / 2, f"peak {peak / 2**20:.1f} MiB for a {size / 2**20:.0f} MiB binary"


def _variant_wheel(tmp_path: Path) -> Path:
    files = dict(wheel_metadata("bnblike", "0.50.0", []))
    files["bnblike/libbnblike_rocm64.so"] = _hip_so(["hipv4-amdgcn-amd-amdhsa--gfx942"])
    files["bnblike/libbnblike_rocm70.so"] = _hip_so(
        ["hipv4-amdgcn-amd-amdhsa--gfx942", "hipv4-amdgcn-amd-amdhsa--gfx950"]
    )
    return make_wheel(tmp_path / "bnblike-0.50.0-py3-none-any.whl", files)


def test_gpu_fit_is_said_per_variant_and_for_the_variant_this_torch_loads(tmp_path: Path) -> None:
    """bitsandbytes: 'covers gfx950' came from the union, though only the ROCm 7 library has it."""
    folder = tmp_path / "wheels"
    folder.mkdir()
    _variant_wheel(folder)
    pins = [Pin("bnblike", "0.50.0", "requirements.txt:1")]
    doc = vet_stack(pins, wheel_index(folder), _vet_doc, ["gfx950"], "6.4")
    row = doc["packages"][0]
    assert row["gfx_variants"] == {"rocm64": ["gfx942"], "rocm70": ["gfx942", "gfx950"]}
    assert row["torch_loads"] == "rocm64" and doc["torch_rocm"] == "6.4"
    assert row["basis"] == "2 gfx targets read from 2 binaries"
    assert row["gpus"] == (
        "gfx950 only in rocm70 (not rocm64); this torch (ROCm 6.4) loads rocm64: does not cover gfx950"
    )
    assert "every variant (2): gfx942; rocm70: + gfx950" in stack_table(doc)
    on_rocm7 = vet_stack(pins, wheel_index(folder), _vet_doc, ["gfx950"], "7.0")["packages"][0]
    assert on_rocm7["gpus"].endswith("this torch (ROCm 7.0) loads rocm70: covers gfx950")


def test_variant_names_and_this_torchs_rocm(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_rocm.vet import gpu_fit
    from pytest_rocm.vet.gpu_fit import loaded_variant, torch_rocm, variant_of

    assert variant_of("bnb/libbitsandbytes_rocm64.so") == "rocm64"
    assert variant_of("bnb/libbitsandbytes_cuda121.so") == "cuda121" and variant_of("pkg/_C.so") is None
    assert loaded_variant(["rocm64", "rocm70"], "7.0") == "rocm70" and loaded_variant(["rocm64"], "7.0") is None
    monkeypatch.setattr(gpu_fit.metadata, "version", lambda name: "2.5.0+rocm6.2")
    assert torch_rocm() == "6.2"
    monkeypatch.setattr(gpu_fit.metadata, "version", lambda name: "2.13.0+cpu")
    assert torch_rocm() is None


TRITON_KERNEL = "import triton\nimport triton.language as tl\n@triton.jit\ndef add(x_ptr):\n    pass\n"


@pytest.mark.parametrize(
    ("files", "basis"),
    [
        (
            {"tritonlike/ops.py": TRITON_KERNEL, "tritonlike/__init__.py": "from . import ops\n"},
            "JIT at run time (Triton)",
        ),
        (
            {"hiplike/_hip.cpython-311-x86_64-linux-gnu.so": make_elf(["libamdhip64.so.6"], [".text"])},
            "bindings, no device code",
        ),
        (
            {"hipsrc-1.0/setup.py": "from torch.utils.cpp_extension import CUDAExtension\nIS_HIP_EXTENSION = True\n"},
            "no AMD binary: built from source, for the gfx you build it for",
        ),
        (  # hip-python 10: a compatibility package requiring rocm-bindings-hip
            {
                "hipmeta-1.0.dist-info/METADATA": "Metadata-Version: 2.4\nName: hipmeta\nVersion: 1.0\n"
                "Requires-Dist: rocm-bindings-hip~=10.0\n",
                "hip/__init__.py": "from rocm.bindings import hip\n",
            },
            "requires ROCm builds of other packages: vet those (their device code is theirs)",
        ),
        (  # a prebuilt wheel with HIP text and no binary was "built from source" too
            {"prebuilt/k.h": "#include <hip/hip_runtime.h>\n", "prebuilt/__init__.py": ""},
            "no AMD binary in this build: its ROCm path is text (sources, headers, a build script)",
        ),
    ],
    ids=["triton", "bindings", "source", "meta-package", "prebuilt-wheel"],
)
def test_each_row_says_what_it_is_based_on(tmp_path: Path, files: dict[str, str | bytes], basis: str) -> None:
    name = next(iter(files)).split("/")[0].split("-")[0]
    if name == "hipsrc":  # an sdist: what the user builds
        sdist = make_sdist(
            tmp_path / "hipsrc-1.0.tar.gz", {k.split("/", 1)[1]: v for k, v in files.items()}, "hipsrc-1.0"
        )
        doc = _vet_doc(str(sdist))
    else:
        wheel = make_wheel(tmp_path / f"{name}-1.0-py3-none-any.whl", {**wheel_metadata(name, "1.0", []), **files})
        doc = _vet_doc(str(wheel))
    assert doc["class"] == 3, doc["reason"]
    (row,) = vet_stack([Pin(name, None, "x")], wheel_index(tmp_path), lambda _: doc, ["gfx1100"])["packages"]
    assert row["basis"] == basis and row["gpus"] == basis
