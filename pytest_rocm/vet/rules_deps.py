"""vet rules for what a package depends on: requirements and versions (CUDA-only ones, the
PyTorch ecosystem, other native GPU libraries), vendor libraries loaded at run time (ctypes,
cffi), and the CUDA assumptions of Python code.

The names of the vendor libraries a binding loads are data (``data/vendor_libraries.json``).
"""

from __future__ import annotations

import re

from pytest_rocm._resources import load_json
from pytest_rocm.vet.kinds import ARCHIVE, BUILD, METADATA, PYTHON, REQUIREMENTS
from pytest_rocm.vet.rule import DERIVED, PATH, TEXT, Rule, kinds

PY = kinds(PYTHON, BUILD)
DEPS = kinds(METADATA, REQUIREMENTS, BUILD)

ECOSYSTEM = (
    "transformers",
    "peft",
    "accelerate",
    "diffusers",
    "timm",
    "sentence-transformers",
    "trl",
    "optimum",
    "lightning",
    "pytorch-lightning",
    "torchvision",
    "torchaudio",
    "torchmetrics",
)
_ECO_IMPORT = "|".join(n.replace("-", "_") for n in ECOSYSTEM)
_ECO_DIST = "|".join(re.escape(n).replace("\\-", "[-_.]") for n in ECOSYSTEM)
#: native GPU libraries whose own ROCm story decides whether a dependent works
GPU_LIBRARIES = (
    "flash-attn",
    "xformers",
    "bitsandbytes",
    "vllm",
    "deepspeed",
    "apex",
    "mamba-ssm",
    "causal-conv1d",
    "auto-gptq",
    "awq",
    "liger-kernel",
    "unsloth",
    "triton",
    "tensorrt",
    "onnxruntime-gpu",
    "cupy",
)
_GPU_DIST = "|".join(re.escape(n).replace("\\-", "[-_.]") for n in GPU_LIBRARIES)
REQ = r"^(?:Requires-Dist:[ \t]*|[ \t]*[\"']?)"  # METADATA line, requirements line, TOML item
#: what may follow a requirement's name: a specifier, extras, a marker, the closing quote (not
#: one that closes a key: `"pycuda": [`, `"rocm" = ...`) or the end of the line
REQ_END = r"(?=[ \t]*(?:[<>!~]=?|===?|\[|;|,|@|[\"'](?![ \t]*[:=])|$))"


def _library_pattern(vendor: str) -> str:
    """A quoted library file name of this vendor (``'libnvidia-ml.so.1'``, ``"nvcuda.dll"``,
    ``'cudart64_12.dll'``), or a bare name handed to a loader (``find_library('cudart')``)."""
    names = "|".join(re.escape(n) for n in load_json("vendor_libraries.json")["libraries"][vendor])
    return (
        rf"[\"'][^\"'\n]*?(?<![\w-])(?:lib)?(?:{names})(?:64)?(?:_\d+)*\.(?:so|dll|dylib)\b[^\"'\n]*[\"']|"
        rf"\b(?:find_library|CDLL|WinDLL|LoadLibrary\w*|dlopen)\s*\(\s*[\"'](?:lib)?(?:{names})[\"']"
    )


#: a file that loads libraries at run time (a library name elsewhere is only a name)
_LOADS = r"\b(?:CDLL|WinDLL|OleDLL|PyDLL|LoadLibrary\w*|dlopen|find_library|cdll|windll)\b"
#: words a file that loads a library by name contains (a cheap pre-filter before the pattern)
_LOAD_LITERALS = ("DLL", "dll", "LoadLibrary", "dlopen", "find_library")

DEPS_RULES: tuple[Rule, ...] = (
    # ---- CUDA: dependencies and versions -------------------------------------------------
    Rule(
        id="requires-nvidia-package",
        subject=TEXT,
        pattern=REQ + r"nvidia-(?!smi\b)[a-z0-9-]+" + REQ_END,
        side="cuda",
        tier="core",
        severity="error",
        message="depends on NVIDIA's CUDA runtime packages (nvidia-*): a CUDA-only install",
        kinds=DEPS,
        literals=("nvidia-",),
    ),
    Rule(
        id="requires-cuda-only-package",
        subject=TEXT,
        # NVIDIA's CUDA Python packages (cuda-python is a metapackage of cuda-bindings), JAX's
        # CUDA plugins, numba's CUDA target: a requirement on one installs CUDA-only code
        pattern=REQ
        + r"(?P<dist>cupy-cuda\w+|pycuda|tensorrt(?:[-_](?:cu\d+|llm|lean|dispatch)\w*)?|pynvml|nvidia-ml-py3?|"
        r"cuda-python|cuda[-_](?:bindings|core|pathfinder|cccl|toolkit)|numba[-_]cuda|"
        r"jax[-_]cuda\d+[-_](?:plugin|pjrt)|torch[-_]tensorrt|onnxruntime-gpu)\b" + REQ_END,
        side="cuda",
        tier="core",
        severity="error",
        message="depends on a CUDA-only package (CuPy's CUDA wheels, PyCUDA, TensorRT, NVML, cuda-bindings, JAX's CUDA plugin...)",
        kinds=DEPS,
        literals=(
            "cupy-cuda",
            "pycuda",
            "tensorrt",
            "pynvml",
            "nvidia-ml-py",
            "cuda-",
            "cuda_",
            "numba",
            "jax",
            "onnxruntime-gpu",
        ),
    ),
    Rule(
        id="cuda-local-version",
        subject=TEXT,
        pattern=r"^(?:Version:[ \t]*[^\s+]+\+cu\d+|Requires-Dist:[^\n;]*\+cu\d+)\b|==[^\s,;\"']+\+cu\d+",
        side="cuda",
        tier="core",
        severity="error",
        message="a CUDA build (+cuXYZ local version)",
        kinds=DEPS,
        literals=("+cu",),
    ),
    Rule(
        id="cuda-wheel-name",
        subject=PATH,
        pattern=r"(?:\+cu\d+|[-_.]cu\d{2,3}\b)[^/]*\.whl$",
        side="cuda",
        tier="core",
        severity="error",
        message="a wheel built for CUDA (+cuXYZ in its file name)",
        kinds=kinds(ARCHIVE),
    ),
    # ---- CUDA: Python assumptions --------------------------------------------------------
    Rule(
        id="python-nvml",
        subject=TEXT,
        pattern=r"^[ \t]*(?:import|from)[ \t]+(?P<mod>pynvml|py3nvml|nvidia_smi)\b",
        side="cuda",
        tier="caveat",
        severity="warning",
        message="NVML (NVIDIA management library): absent on ROCm; amdsmi is the AMD counterpart",
        kinds=PY,
        literals=("nvml", "nvidia_smi"),
    ),
    Rule(
        id="python-nvidia-smi",
        subject=TEXT,
        pattern=r"[\"']nvidia-smi\b",
        side="cuda",
        tier="caveat",
        severity="warning",
        message="runs nvidia-smi: absent on AMD machines (amd-smi / rocm-smi are the equivalents)",
        kinds=PY,
        literals=("nvidia-smi",),
    ),
    Rule(
        id="wraps-nvidia-smi",
        subject=DERIVED,
        pattern="",
        side="cuda",
        tier="core",
        severity="error",
        message="wraps nvidia-smi (parses its machine-readable output): sees no GPU on an AMD machine, like an NVML binding",
    ),
    Rule(
        id="python-cuda-only-import",
        subject=TEXT,
        pattern=r"^[ \t]*(?:import|from)[ \t]+(?P<mod>pycuda|tensorrt|cuda\.bindings)\b|"
        r"^[ \t]*(?:from[ \t]+numba[ \t]+import[ \t]+cuda\b|import[ \t]+numba\.cuda\b|from[ \t]+cuda[ \t]+import\b)",
        side="cuda",
        tier="caveat",
        severity="error",
        message="imports a CUDA-only Python library (PyCUDA, TensorRT, numba.cuda, cuda-python)",
        kinds=PY,
        literals=("pycuda", "tensorrt", "cuda.bindings", "numba", "from cuda"),
    ),
    Rule(
        id="python-cuda-version-check",
        subject=TEXT,
        pattern=r"\btorch\.version\.cuda\b",
        side="cuda",
        tier="caveat",
        severity="warning",
        message="checks torch.version.cuda with no torch.version.hip branch in the file: it is None on ROCm",
        kinds=PY,
        unless_in_file=r"\btorch\.version\.hip\b",
        literals=("torch.version.cuda",),
    ),
    Rule(
        id="python-device-capability",
        subject=TEXT,
        pattern=r"\bget_device_capability\s*\(",
        side="cuda",
        tier="caveat",
        severity="warning",
        message="get_device_capability() returns the gfx major/minor on ROCm, not an SM version",
        kinds=PY,
        unless_in_file=r"\btorch\.version\.hip\b|\bis_hip\b|\bgcnArchName\b",
        literals=("get_device_capability",),
    ),
    Rule(
        id="python-cuda-jit",
        subject=TEXT,
        pattern=r"\bload_inline\s*\([^)]*cuda_sources|\bcupy\.RawKernel\b",
        side="cuda",
        tier="source",
        severity="warning",
        message="compiles CUDA source at run time (torch load_inline / CuPy RawKernel)",
        kinds=PY,
        literals=("load_inline", "RawKernel"),
    ),
    # ---- vendor libraries loaded at run time (ctypes, cffi) -----------------------------
    Rule(
        id="loads-nvidia-library",
        subject=TEXT,
        pattern=_library_pattern("nvidia"),
        side="cuda",
        tier="core",
        severity="error",
        message="loads an NVIDIA library at run time (ctypes/cffi): a binding that works only with NVIDIA's driver",
        kinds=kinds(PYTHON),
        only_if_in_file=_LOADS,
        literals=_LOAD_LITERALS,
    ),
    Rule(
        id="probes-nvidia-library",
        subject=DERIVED,
        pattern="",
        side="cuda",
        tier="caveat",
        severity="warning",
        message="tries to load an NVIDIA library and carries on without it (a probe with a fallback), "
        "calling few of its functions: not a binding",
    ),
    Rule(
        id="loads-rocm-library",
        subject=TEXT,
        pattern=_library_pattern("amd"),
        side="rocm",
        tier="core",
        severity="info",
        message="loads a ROCm library at run time (libamdhip64, librocm_smi64, libamd_smi...): an AMD path",
        kinds=kinds(PYTHON),
        only_if_in_file=_LOADS,
        literals=_LOAD_LITERALS,
    ),
    # ---- what it builds on ---------------------------------------------------------------
    Rule(
        id="uses-torch",
        subject=TEXT,
        pattern=r"^[ \t]*(?:import|from)[ \t]+torch\b",
        side="torch",
        tier="usage",
        severity="info",
        message="uses PyTorch",
        kinds=kinds(PYTHON),
        literals=("torch",),
        per_file=1,
    ),
    Rule(
        id="requires-torch",
        subject=TEXT,
        pattern=REQ + r"torch\b(?![-_.\w])" + REQ_END,
        side="torch",
        tier="usage",
        severity="info",
        message="requires PyTorch",
        kinds=DEPS,
        literals=("torch",),
    ),
    Rule(
        id="uses-ecosystem",
        subject=TEXT,
        pattern=rf"^[ \t]*(?:import|from)[ \t]+(?P<mod>{_ECO_IMPORT})\b",
        side="ecosystem",
        tier="usage",
        severity="info",
        message="builds on the PyTorch ecosystem (transformers, peft, accelerate, diffusers...)",
        kinds=kinds(PYTHON),
        per_file=3,
        literals=tuple(n.replace("-", "_") for n in ECOSYSTEM),
    ),
    Rule(
        id="requires-ecosystem",
        subject=TEXT,
        pattern=rf"{REQ}(?P<dist>{_ECO_DIST})\b(?![-\w])" + REQ_END,
        side="ecosystem",
        tier="usage",
        severity="info",
        message="requires a PyTorch ecosystem library (transformers, peft, accelerate, diffusers...)",
        kinds=DEPS,
        literals=ECOSYSTEM,
    ),
    Rule(
        id="requires-gpu-library",
        subject=TEXT,
        pattern=REQ + rf"(?P<dist>{_GPU_DIST})\b(?![-\w])" + REQ_END,
        side="dependency",
        tier="usage",
        severity="warning",
        message="depends on a native GPU library: its own ROCm support decides yours; vet it too",
        kinds=DEPS,
        literals=tuple(n.split("-")[0] for n in GPU_LIBRARIES),
    ),
)
