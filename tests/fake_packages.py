"""Builders shared by the vet tests: small packages of each class, wheels, sdists, ELF files.
(No tests here; the name keeps it inside the vet area's files.)

Every package's setup.py and __init__.py write a marker file when executed: a vet must leave
no marker behind, which proves it neither built nor imported anything.
"""

from __future__ import annotations

import io
import struct
import tarfile
import zipfile
from pathlib import Path


def make_elf(
    needed: list[str],
    sections: list[str] = (),  # type: ignore[assignment]
    contents: dict[str, bytes] | None = None,
) -> bytes:
    """A minimal 64-bit little-endian shared object with DT_NEEDED entries and named sections
    (empty, or with the bytes ``contents`` gives for a name: a .hip_fatbin's bundles)."""
    dynstr = b"\0" + b"".join(n.encode() + b"\0" for n in needed)
    offsets, pos = [], 1
    for n in needed:
        offsets.append(pos)
        pos += len(n) + 1
    dynamic = b"".join(struct.pack("<qQ", 1, off) for off in offsets) + struct.pack("<qQ", 0, 0)
    names = ["", ".dynstr", ".dynamic", ".shstrtab", *sections]
    shstrtab = b""
    name_off = []
    for n in names:
        name_off.append(len(shstrtab))
        shstrtab += n.encode() + b"\0"
    body = bytearray(b"\0" * 64)
    dynstr_off = len(body)
    body += dynstr
    dynamic_off = len(body)
    body += dynamic
    shstr_off = len(body)
    body += shstrtab
    placed = {}
    for name, data in (contents or {}).items():
        placed[name] = (len(body), len(data))
        body += data
    while len(body) % 8:
        body += b"\0"
    shoff = len(body)
    headers = [
        struct.pack("<IIQQQQIIQQ", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
        struct.pack("<IIQQQQIIQQ", name_off[1], 3, 0, 0, dynstr_off, len(dynstr), 0, 0, 1, 0),
        struct.pack("<IIQQQQIIQQ", name_off[2], 6, 0, 0, dynamic_off, len(dynamic), 1, 0, 8, 16),
        struct.pack("<IIQQQQIIQQ", name_off[3], 3, 0, 0, shstr_off, len(shstrtab), 0, 0, 1, 0),
    ]
    headers += [
        struct.pack("<IIQQQQIIQQ", name_off[4 + i], 1, 0, 0, *placed.get(name, (0, 0)), 0, 0, 1, 0)
        for i, name in enumerate(sections)
    ]
    ident = b"\x7fELF" + bytes([2, 1, 1]) + b"\0" * 9
    header = ident + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, shoff, 0, 64, 0, 0, 64, len(headers), 3)
    body[:64] = header
    return bytes(body) + b"".join(headers)


def write_tree(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return root


def make_wheel(path: Path, files: dict[str, str | bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for rel, content in files.items():
            zf.writestr(rel, content)
    return path


def make_sdist(path: Path, files: dict[str, str | bytes], prefix: str) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        for rel, content in files.items():
            data = content.encode() if isinstance(content, str) else content
            info = tarfile.TarInfo(f"{prefix}/{rel}")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


def _writes(marker: Path) -> str:
    return f"open({str(marker)!r}, 'w').write('executed')\n"


def cuda_only(marker: Path) -> dict[str, str | bytes]:
    """Class 4: a torch CUDAExtension with a .cu kernel, cudaMalloc and inline PTX, no HIP path."""
    return {
        "pyproject.toml": '[project]\nname = "cudaonly"\nversion = "0.1"\n',
        "setup.py": _writes(marker)
        + (
            "from setuptools import setup\n"
            "from torch.utils.cpp_extension import BuildExtension, CUDAExtension\n"
            "setup(name='cudaonly', ext_modules=[CUDAExtension('cudaonly._C', ['csrc/k.cu'],\n"
            "      extra_compile_args={'nvcc': ['-gencode', 'arch=compute_80,code=sm_80']})],\n"
            "      cmdclass={'build_ext': BuildExtension})\n"
        ),
        "csrc/k.cu": (
            "#include <cuda_runtime.h>\n#include <cublas_v2.h>\n"
            "__global__ void scale(float* x) {\n"
            '  unsigned r; asm volatile("mov.u32 %0, %%laneid;" : "=r"(r));\n'
            "  x[threadIdx.x] *= 2.0f;\n}\n"
            "void run(float* h, int n) {\n  float* d; cudaMalloc(&d, n * sizeof(float));\n"
            "  cudaStream_t s; cudaStreamCreate(&s);\n}\n"
        ),
        "cudaonly/__init__.py": _writes(marker) + "import torch\n",
    }


def hip_ported(marker: Path) -> dict[str, str | bytes]:
    """Class 3: the same kind of extension with a HIP branch and a ROCm build path."""
    return {
        "setup.py": _writes(marker)
        + (
            "import os, torch\n"
            "from torch.utils.cpp_extension import CUDAExtension, ROCM_HOME\n"
            "IS_ROCM = torch.version.hip is not None and ROCM_HOME is not None\n"
            "sources = ['csrc/k_hip.cpp'] if IS_ROCM else ['csrc/k.cu']\n"
        ),
        "csrc/k.cu": "#include <cuda_runtime.h>\n__global__ void f(float* x) { x[0] = 1; }\n"
        "void g(float** p) { cudaMalloc(p, 4); }\n",
        "csrc/k_hip.cpp": (
            "// !!! This is a file automatically generated by hipify!!!\n"
            "#include <hip/hip_runtime.h>\n#ifdef __HIP_PLATFORM_AMD__\n#endif\n"
            "__global__ void f(float* x) { x[0] = 1; }\n"
        ),
        "hipported/__init__.py": _writes(marker) + "import torch\n",
    }


def pure_torch(marker: Path) -> dict[str, str | bytes]:
    """Class 1: torch only; CUDA in comments and docstrings, torch.cuda.is_available() calls."""
    return {
        "pyproject.toml": '[project]\nname = "puretorch"\nversion = "1.0"\ndependencies = ["torch>=2"]\n',
        "puretorch/__init__.py": _writes(marker)
        + (
            '"""Fast ops. On NVIDIA we used cudaMalloc and cuLaunchKernel; nvidia-smi shows usage.\n'
            "import pynvml\n"
            '"""\n'
            "import torch\n"
            "# TODO: a cublasLt path like cudaStreamCreate would be faster; see nvcc docs\n"
            "def device():\n"
            "    return torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
            "def run(x):\n"
            "    return (x.cuda() if torch.cuda.is_available() else x) * 2\n"
        ),
    }


def ecosystem(marker: Path) -> dict[str, str | bytes]:
    """Class 2: pure Python on transformers and peft."""
    return {
        "pyproject.toml": (
            '[project]\nname = "ecopkg"\nversion = "0.3"\n'
            'dependencies = [\n  "torch",\n  "transformers>=4.40",\n  "peft",\n]\n'
        ),
        "ecopkg/__init__.py": _writes(marker)
        + ("import torch\nfrom transformers import AutoModelForCausalLM\nfrom peft import LoraConfig\n"),
    }


def wheel_metadata(name: str, version: str, requires: list[str], extra: str = "") -> dict[str, str]:
    dist_info = f"{name}-{version}.dist-info"
    meta = (
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        + "".join(f"Requires-Dist: {r}\n" for r in requires)
        + "\n"
        + extra
    )
    return {
        f"{dist_info}/METADATA": meta,
        f"{dist_info}/WHEEL": "Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp311-cp311-linux_x86_64\n",
        f"{dist_info}/RECORD": "",
    }
