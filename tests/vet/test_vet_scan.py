"""vet's static scan and verdict on small packages of each class, as folders, sdists and wheels."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fake_packages import (
    cuda_only,
    ecosystem,
    hip_ported,
    make_elf,
    make_sdist,
    make_wheel,
    pure_torch,
    wheel_metadata,
    write_tree,
)

from pytest_rocm.vet import vet
from pytest_rocm.vet.elf import read_elf
from pytest_rocm.vet.rules import RULES, RULES_BY_ID, SAFETY_RULES, kind_of

BUILDERS = {1: pure_torch, 2: ecosystem, 3: hip_ported, 4: cuda_only}


def rules_found(result, counted_only: bool = True) -> set[str]:
    return {f.rule for f in result.findings if f.counts or not counted_only}


@pytest.mark.parametrize("klass", [1, 2, 3, 4])
@pytest.mark.parametrize("form", ["folder", "sdist", "wheel"])
def test_each_class_in_each_form_and_nothing_runs(tmp_path: Path, klass: int, form: str) -> None:
    marker = tmp_path / "EXECUTED"
    files = BUILDERS[klass](marker)
    if form == "folder":
        spec = write_tree(tmp_path / "pkg", files)
    elif form == "sdist":
        spec = make_sdist(tmp_path / "pkg-0.1.tar.gz", files, "pkg-0.1")
    else:
        spec = make_wheel(tmp_path / "pkg-0.1-py3-none-any.whl", files)
    _target, result, verdict = vet(str(spec))
    assert verdict.klass == klass, (verdict.reason, sorted(rules_found(result)))
    assert verdict.evidence or klass == 1
    assert not marker.exists(), "vet executed the package's setup.py or __init__.py"


def test_the_marker_is_a_real_proof(tmp_path: Path) -> None:
    """Running what vet must not run does write the marker (so its absence above means something)."""
    marker = tmp_path / "EXECUTED"
    root = write_tree(tmp_path / "pkg", pure_torch(marker))
    subprocess.run([sys.executable, "-c", (root / "puretorch/__init__.py").read_text().splitlines()[0]], check=True)
    assert marker.exists()


def test_cuda_only_findings_name_rule_place_and_text(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "pkg", cuda_only(tmp_path / "m"))
    _, result, verdict = vet(str(root))
    by_rule: dict = {}
    for f in result.findings:
        by_rule.setdefault(f.rule, f)
    malloc = by_rule["cuda-runtime-api"]
    assert (malloc.path, malloc.line, malloc.severity) == ("csrc/k.cu", 8, "error")
    assert "cudaMalloc(&d" in malloc.text
    for rule in (
        "inline-ptx",
        "cuda-header",
        "build-cuda-extension",
        "build-nvcc",
        "build-cuda-arch",
        "cuda-source-file",
        "cuda-kernel",
    ):
        assert rule in by_rule, rule
    assert by_rule["inline-ptx"].line == 4
    assert verdict.klass == 4
    assert "CUDA-only" in verdict.reason and verdict.next_steps
    assert any("hard to port" in c and "inline-ptx" in c for c in verdict.caveats)


def test_comments_docstrings_and_is_available_do_not_make_cuda_only(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "pkg", pure_torch(tmp_path / "m"))
    _, result, verdict = vet(str(root))
    assert verdict.klass == 1
    cuda_counted = [f for f in result.findings if f.counts and f.spec.side == "cuda"]
    assert cuda_counted == []
    assert not any("is_available" in f.text for f in result.findings)


def test_cuda_code_in_comments_is_info_but_real_calls_count(tmp_path: Path) -> None:
    src = (
        "#include <hip/hip_runtime.h>\n"  # irrelevant here: no ROCm verdict is asserted
        "// cudaMalloc(&p, 4) used to be here\n"
        "/* cudaStream_t s;\n   cudaFree(p); */\n"
        "void f() { float* p; cudaMalloc(&p, 4); }  // real\n"
    )
    root = write_tree(tmp_path / "pkg", {"a.cpp": src})
    _, result, _ = vet(str(root))
    api = sorted((f.line, f.context, f.severity) for f in result.findings if f.rule == "cuda-runtime-api")
    assert api == [(2, "comment", "info"), (3, "comment", "info"), (4, "comment", "info"), (5, "", "error")]


def test_torch_version_cuda_needs_a_hip_branch_in_the_same_file(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "pkg",
        {
            "p/only_cuda.py": "import torch\nif torch.version.cuda:\n    pass\n",
            "p/both.py": "import torch\nif torch.version.hip:\n    pass\nelif torch.version.cuda:\n    pass\n",
        },
    )
    _, result, verdict = vet(str(root))
    checks = [f.path for f in result.findings if f.rule == "python-cuda-version-check"]
    assert checks == ["p/only_cuda.py"]
    assert verdict.klass == 1  # a Python caveat, not native code
    assert any("python-cuda-version-check" in c for c in verdict.contrary_notes)


def test_nvidia_smi_and_pynvml_are_python_caveats(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "pkg",
        {
            "p/gpu.py": "import subprocess\nimport pynvml\nsubprocess.run(['nvidia-smi', '-L'])\n",
        },
    )
    _, result, verdict = vet(str(root))
    assert {"python-nvml", "python-nvidia-smi"} <= rules_found(result)
    assert verdict.klass == 1 and any("python-nvml" in n for n in verdict.contrary_notes)


def test_wheel_with_cuda_requirements_and_local_version(tmp_path: Path) -> None:
    files = wheel_metadata(
        "fastk",
        "1.0+cu121",
        ["torch==2.3.0+cu121", "nvidia-cublas-cu12==12.1.3.1", "cupy-cuda12x>=13", "accelerate; extra == 'hf'"],
    )
    files["fastk/__init__.py"] = "import torch\n"
    whl = make_wheel(tmp_path / "fastk-1.0+cu121-cp311-cp311-linux_x86_64.whl", files)
    _, result, verdict = vet(str(whl))
    found = rules_found(result)
    assert {"requires-nvidia-package", "requires-cuda-only-package", "cuda-local-version", "cuda-wheel-name"} <= found
    assert verdict.klass == 4
    optional = [f for f in result.findings if f.rule == "requires-ecosystem"]
    assert optional and all(f.context == "optional" and not f.counts for f in optional)


def test_optional_cuda_extra_does_not_decide(tmp_path: Path) -> None:
    files = wheel_metadata("purex", "1.0", ["torch", "nvidia-ml-py; extra == 'monitor'"])
    files["purex/__init__.py"] = "import torch\n"
    _, result, verdict = vet(str(make_wheel(tmp_path / "purex-1.0-py3-none-any.whl", files)))
    assert verdict.klass == 1
    assert [f.context for f in result.findings if f.rule == "requires-cuda-only-package"] == ["optional"]


@pytest.mark.parametrize(
    ("needed", "sections", "klass", "rule"),
    [
        (["libcudart.so.12", "libcublas.so.12", "libc.so.6"], [".nv_fatbin"], 4, "links-cuda-library"),
        (["libamdhip64.so.6", "libhipblas.so.2"], [".hip_fatbin"], 3, "links-rocm-library"),
        (["libc.so.6"], [".text"], 1, None),
    ],
)
def test_wheel_binaries_judged_by_what_they_link(tmp_path: Path, needed, sections, klass, rule) -> None:
    files = wheel_metadata("binpkg", "2.0", ["torch"])
    files["binpkg/__init__.py"] = "from . import _C\n"
    files["binpkg/_C.cpython-311-x86_64-linux-gnu.so"] = make_elf(needed, sections)
    _, result, verdict = vet(str(make_wheel(tmp_path / "binpkg-2.0-cp311-cp311-linux_x86_64.whl", files)))
    assert verdict.klass == klass, verdict.reason
    if rule:
        f = next(f for f in result.findings if f.rule == rule)
        assert f.path == "binpkg/_C.cpython-311-x86_64-linux-gnu.so" and needed[0] in f.text


def test_a_binary_rule_says_which_side_its_binaries_were_built_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The side of a NEEDED/section rule is the rule's own ``side``: a new binary rule needs no
    second table in the scanner to put its binaries on that side."""
    from dataclasses import replace

    from pytest_rocm.vet.rules import NEEDED, SECTION
    from pytest_rocm.vet.scan import scan
    from pytest_rocm.vet.sources import open_target

    assert {r.side for r in RULES if r.subject in (NEEDED, SECTION)} <= {"cuda", "rocm"}
    base = RULES_BY_ID["links-rocm-library"]
    extra = replace(base, id="links-test-rocm-library", pattern=r"^libtestrocm\.so")
    from pytest_rocm.vet import registry

    monkeypatch.setattr(registry, "RULES_BY_ID", registry.registry((*registry.ALL_RULES, extra)))
    files = wheel_metadata("binpkg", "2.0", [])
    files["binpkg/_C.so"] = make_elf(["libtestrocm.so.1"])
    files["binpkg/_cu.so"] = make_elf(["libcudart.so.12"])
    result = scan(open_target(str(make_wheel(tmp_path / "binpkg-2.0-py3-none-any.whl", files))), (*RULES, extra))
    assert result.rocm_binaries == {"binpkg/_C.so"} and result.cuda_binaries == {"binpkg/_cu.so"}


def test_elf_reader_against_readelf_on_a_real_library() -> None:
    from importlib import metadata

    readelf = shutil.which("readelf")
    try:
        dist = metadata.distribution("bitsandbytes")
    except metadata.PackageNotFoundError:
        pytest.skip("not installed: bitsandbytes")
    libs = [f for f in dist.files or [] if str(f).endswith(".so")]
    if readelf is None or not libs:
        pytest.skip("needs readelf and bitsandbytes' shared libraries")
    for lib in libs[:4]:
        path = Path(str(dist.locate_file(lib)))
        expected = [
            line.split("[", 1)[1].rstrip("]")
            for line in subprocess.run([readelf, "-d", str(path)], capture_output=True, text=True).stdout.splitlines()
            if "(NEEDED)" in line
        ]
        with open(path, "rb") as fh:
            assert read_elf(fh).needed == expected


def test_elf_reader_survives_garbage() -> None:
    import io

    assert read_elf(io.BytesIO(b"not an elf at all")) is None
    broken = bytearray(make_elf(["libcudart.so.12"]))
    broken[0x28:0x30] = (10**12).to_bytes(8, "little")  # section headers far past the end
    from pytest_rocm.vet.elf import ElfError

    with pytest.raises(ElfError):
        read_elf(io.BytesIO(bytes(broken)))


def test_rule_table_is_well_formed() -> None:
    ids = [r.id for r in RULES + SAFETY_RULES]
    assert len(ids) == len(set(ids))
    for rule in RULES:
        assert rule.severity in ("error", "warning", "info")
        assert rule.side in ("cuda", "rocm", "ecosystem", "torch", "dependency", "build")
        assert rule.message and len(rule.message) < 160
        assert rule.regex.pattern or rule.subject == "derived"  # compiles; derived rules never match
    assert "torch.cuda" not in " ".join(r.pattern for r in RULES)  # HIP serves torch.cuda on ROCm
    assert RULES_BY_ID["cuda-runtime-api"].regex.search("cudaMalloc(&p, n)")
    assert not RULES_BY_ID["cuda-runtime-api"].regex.search("hipMalloc(&p, n)")


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("a/k.cu", "cuda-source"),
        ("a/k.cuh", "cuda-source"),
        ("a/x.hpp", "native-source"),
        ("setup.py", "build"),
        ("CMakeLists.txt", "build"),
        ("a/b.py", "python"),
        ("x.dist-info/METADATA", "metadata"),
        ("pkg/PKG-INFO", "metadata"),
        ("x.dist-info/WHEEL", "wheel-info"),
        ("lib/libfoo.so.1.2", "binary"),
        ("inner.whl", "archive"),
        ("README.md", None),
        ("a/b.pyc", None),
    ],
)
def test_kind_of(path: str, kind: str | None) -> None:
    assert kind_of(path) == kind


TRITON_KERNEL = "import triton\nimport triton.language as tl\n@triton.jit\ndef k(x_ptr):\n    pass\n"


def test_triton_kernels_are_a_rocm_path_for_python_gpu_code(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "pkg", {"tk/__init__.py": "import torch\n", "tk/kernels.py": TRITON_KERNEL})
    _, _, verdict = vet(str(root))
    assert verdict.klass == 3 and "triton-kernel" in verdict.reason


def test_triton_kernels_do_not_port_a_cuda_binary(tmp_path: Path) -> None:
    files = wheel_metadata("mixed", "1.0", ["torch"])
    files["mixed/kernels.py"] = TRITON_KERNEL
    files["mixed/_C.so"] = make_elf(["libcudart.so.12"], [".nv_fatbin"])
    _, _, verdict = vet(str(make_wheel(tmp_path / "mixed-1.0-cp311-cp311-linux_x86_64.whl", files)))
    assert verdict.klass == 4
    assert any("Triton kernels" in c for c in verdict.contrary_notes)


def test_hip_only_native_code_is_class_3(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "pkg", {"src/k.cpp": "#include <hip/hip_runtime.h>\nvoid f() {}\n"})
    _, _, verdict = vet(str(root))
    assert verdict.klass == 3


def test_cuda_sources_without_python_or_build_are_class_4(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "pkg", {"src/k.cu": "__global__ void f(float* x) { x[0] = 1; }\n"})
    _, _, verdict = vet(str(root))
    assert verdict.klass == 4


def test_jit_loaded_cuda_kernel_in_a_python_package_is_a_caveat(tmp_path: Path) -> None:
    """peft's shape: pure Python on transformers plus an optional .cu that nothing builds."""
    files = ecosystem(tmp_path / "m")
    files["ecopkg/fbd/k.cu"] = "#include <cuda_runtime.h>\n__global__ void f(float* x) { x[0] = 1; }\n"
    files["ecopkg/fbd/load.py"] = "from torch.utils.cpp_extension import load\n"
    _, _, verdict = vet(str(write_tree(tmp_path / "pkg", files)))
    assert verdict.klass == 2
    assert any("no build step compiles" in c for c in verdict.contrary_notes)


@pytest.mark.parametrize(
    ("rule", "line", "hit"),
    [
        ("rocm-requirement-in-build", 'dependencies = [\n  "pytorch-triton-rocm>=3.1",\n]', True),
        ("rocm-requirement-in-build", "rocm_major, rocm_minor = rocm_version", False),
        ("rocm-requirement-in-build", "'_rocm_C'", False),
        ("rocm-requirement-in-build", '"rocm": ["x"]', False),
        ("rocm-version-or-requirement", "rocm_major, rocm_minor = rocm_version", False),
        ("requires-cuda-only-package", '    "pycuda": [', False),  # a key, not a requirement
        ("requires-cuda-only-package", "    'pycuda>=2024',", True),
        ("rocm-version-or-requirement", "Requires-Dist: pytorch-triton-rocm; platform_system == 'Linux'", True),
        ("rocm-version-or-requirement", "Version: 2.6.0+rocm6.2.4", True),
        ("rocm-version-or-requirement", 'rocm = "pytest_rocm.plugin"', False),  # a TOML key, not a requirement
        ("rocm-version-or-requirement", "    rocm_version = parse(out)", False),
        ("requires-nvidia-package", "nvidia-cublas-cu12==12.4.5.8", True),
        ("requires-nvidia-package", "Requires-Dist: nvidia-nccl-cu12 ; sys_platform == 'linux'", True),
        ("requires-nvidia-package", '"nvidia-smi" is used below', False),
        ("requires-torch", "torch>=2.1", True),
        ("requires-torch", "torchvision>=0.16", False),
        ("requires-ecosystem", "Requires-Dist: transformers[torch]>=4.40", True),
        ("requires-ecosystem", "transformers_stream_generator", False),
        ("cuda-local-version", "torch==2.3.0+cu121", True),
        ("cuda-jit-load", "_C = load(name='k', sources=['k.cu'])", True),
        ("cuda-jit-load", "_C = cpp_extension.load(name='k', sources=['k.cu'])", True),
        ("cuda-jit-load", "def load(name, sources):", False),  # torch's own definition
        ("cuda-jit-load", "state = torch.load(path)", False),
        ("cuda-local-version", "Version: 0.1.0+cpu", False),
    ],
)
def test_requirement_rules(rule: str, line: str, hit: bool) -> None:
    assert bool(RULES_BY_ID[rule].regex.search(line)) is hit


def test_what_the_note_against_the_verdict_says_is_not_repeated_as_a_caveat(tmp_path: Path) -> None:
    from pytest_rocm.vet.render import document, text

    files = ecosystem(tmp_path / "m")
    files["ecopkg/fbd/k.cu"] = "#include <cuda_runtime.h>\n__global__ void f(float* x) { x[0] = 1; }\n"
    files["ecopkg/fbd/load.py"] = "from torch.utils.cpp_extension import load\n"
    files["ecopkg/ver.py"] = "import torch\nif torch.version.cuda:\n    pass\n"
    target, result, verdict = vet(str(write_tree(tmp_path / "pkg", files)))
    shown = text(document(target, result, verdict, None))
    said = [line for line in shown.splitlines() if line.startswith("    - ")]  # notes, caveats, steps
    assert sum("(cuda-header, cuda-kernel, cuda-source-file)" in line for line in said) == 1, shown
    assert sum("python-cuda-version-check" in line for line in said) == 1, shown
