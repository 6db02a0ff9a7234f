"""The rule table of ``rocm-compat vet``: what counts as CUDA-only, what shows a ROCm path.

Rules are data. Each names what it looks at (``subject``): a line of a file's ``text``, a
member's ``path``, a library an ELF binary ``needed``, or an ELF ``section`` name; which file
``kinds`` it applies to; which ``side`` it is evidence for; and its ``tier``, which is how much
the verdict makes of it:

- ``core``: built or linked in, decides the class (a binary linked to libcudart, ``nvcc`` or
  ``CUDAExtension`` in the build, an ``nvidia-*`` requirement; a HIP binary or ROCm build path);
- ``source``: GPU source code (CUDA API calls, ``.cu`` files; HIP includes, Triton kernels);
- ``caveat``: a CUDA assumption in Python that fails or misleads on ROCm but is not native code;
- ``aware``: Python that branches on ROCm (``torch.version.hip``): a ROCm path for native code
  next to it, not native code itself;
- ``mention``: a description that mentions ROCm (no code behind it, by itself);
- ``usage``: what the package builds on (torch, the PyTorch ecosystem, other GPU libraries).

Deliberately absent: ``torch.cuda.*`` (``is_available``, ``.cuda()``, ``device="cuda"``), which
PyTorch's ROCm builds serve through HIP, so it is not CUDA-only.

Why this module is long: ``RULES`` is a table (about 600 of its lines, one ``Rule`` per entry,
each with its message), kept next to the ``Rule`` type so a rule and its fields read together;
the code around it is about 150 lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Final, Literal, get_args

# file kinds ----------------------------------------------------------------------------------
FileKind = Literal[
    "cuda-source", "native-source", "python", "build", "metadata", "wheel-info", "requirements", "binary", "archive"
]
CUDA_SRC: Final = "cuda-source"  # .cu .cuh
NATIVE: Final = "native-source"  # C/C++/HIP sources and headers
PYTHON: Final = "python"
BUILD: Final = "build"  # setup.py, CMake, Makefile, pyproject.toml ...
METADATA: Final = "metadata"  # METADATA / PKG-INFO
WHEEL: Final = "wheel-info"  # a wheel's WHEEL file (tags)
REQUIREMENTS: Final = "requirements"  # requirements*.txt, egg-info requires.txt
BINARY: Final = "binary"  # .so .pyd .dylib ... and device code files
ARCHIVE: Final = "archive"  # a nested archive

_NATIVE_SUFFIXES = {
    ".c",
    ".cc",
    ".cpp",
    ".cxx",
    ".c++",
    ".h",
    ".hh",
    ".hpp",
    ".hxx",
    ".inl",
    ".ipp",
    ".tcc",
    ".hip",
    ".cl",
}
_BUILD_NAMES = {
    "setup.py",
    "setup.cfg",
    "pyproject.toml",
    "cmakelists.txt",
    "makefile",
    "meson.build",
    "build.sh",
    "build",
    "build.bazel",
    "workspace",
    "sconstruct",
}
_BUILD_SUFFIXES = {".cmake", ".mk", ".bzl", ".bazel"}
_BINARY_SUFFIXES = {".so", ".pyd", ".dylib", ".dll", ".o", ".a", ".cubin", ".fatbin", ".ptx", ".hsaco", ".co"}
_ARCHIVE_SUFFIXES = (".whl", ".zip", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".tar")


def kind_of(path: str) -> FileKind | None:
    """The kind of a file from its name; None for files the scan ignores (docs, data, .pyc)."""
    p = PurePosixPath(path)
    name = p.name.lower()
    suffix = p.suffix.lower()
    if name in _BUILD_NAMES or suffix in _BUILD_SUFFIXES:
        return BUILD
    if suffix in (".cu", ".cuh"):
        return CUDA_SRC
    if suffix in _NATIVE_SUFFIXES:
        return NATIVE
    if suffix in (".py", ".pyi"):
        return PYTHON
    if name in ("metadata", "pkg-info"):
        return METADATA
    if name == "wheel" and p.parent.name.endswith(".dist-info"):
        return WHEEL
    if name == "requires.txt" or (name.startswith("requirements") and suffix in (".txt", ".in")):
        return REQUIREMENTS
    if suffix in _BINARY_SUFFIXES or re.search(r"\.so(\.\d+)+$", name):
        return BINARY
    if name.endswith(_ARCHIVE_SUFFIXES):
        return ARCHIVE
    return None


# rules ---------------------------------------------------------------------------------------
#: what a rule looks at: a line of text, a member's path, an ELF NEEDED library, an ELF section;
#: ``safety``: what the readers report about members they refuse to read
Subject = Literal["text", "path", "needed", "section", "safety"]
TEXT: Final = "text"
PATH: Final = "path"
NEEDED: Final = "needed"
SECTION: Final = "section"
#: which way a finding points
Side = Literal["cuda", "rocm", "ecosystem", "torch", "dependency", "safety"]
#: how much the verdict makes of a finding (the module docstring)
Tier = Literal["core", "source", "caveat", "aware", "mention", "usage", "safety"]
Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = get_args(Severity)
#: where a finding sits: "comment" (in a comment or docstring), "optional" (an extra's requirement)
Context = Literal["", "comment", "optional"]


@dataclass(frozen=True)
class Rule:
    id: str
    subject: Subject
    pattern: str
    side: Side
    tier: Tier
    severity: Severity  # a match in a comment is always info
    message: str
    kinds: frozenset[FileKind] = field(default_factory=frozenset)  # empty: any kind
    #: no finding when this also matches somewhere in the same file (a HIP branch next to a
    #: CUDA check)
    unless_in_file: str | None = None
    flags: int = re.MULTILINE
    #: a file without any of these substrings cannot match (a fast pre-filter: scanning torch
    #: with every regex over every file would take minutes)
    literals: tuple[str, ...] = ()
    #: at most this many findings per file (0: all); "uses torch" once per file is enough
    per_file: int = 0

    @property
    def regex(self) -> re.Pattern[str]:
        return _compiled(self.pattern, self.flags)

    @property
    def unless_regex(self) -> re.Pattern[str] | None:
        return _compiled(self.unless_in_file, self.flags) if self.unless_in_file else None


_CACHE: dict[tuple[str, int], re.Pattern[str]] = {}


def _compiled(pattern: str, flags: int) -> re.Pattern[str]:
    key = (pattern, flags)
    if key not in _CACHE:
        _CACHE[key] = re.compile(pattern, flags)
    return _CACHE[key]


def _k(*kinds: FileKind) -> frozenset[FileKind]:
    return frozenset(kinds)


SRC = _k(CUDA_SRC, NATIVE)
PY = _k(PYTHON, BUILD)
DEPS = _k(METADATA, REQUIREMENTS, BUILD)

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
_REQ = r"^(?:Requires-Dist:[ \t]*|[ \t]*[\"']?)"  # METADATA line, requirements line, TOML item
#: what may follow a requirement's name: a specifier, extras, a marker, the closing quote or the
#: end of the line -- not `name = value` (a TOML key such as an entry point named rocm)
_REQ_END = r"(?=[ \t]*(?:[<>!~]=?|===?|\[|;|,|@|[\"']|$))"

RULES: tuple[Rule, ...] = (
    # ---- CUDA: native sources ------------------------------------------------------------
    Rule(
        "cuda-source-file",
        PATH,
        r"\.cuh?$",
        "cuda",
        "source",
        "warning",
        "CUDA source file: needs nvcc, or hipify and hipcc to build for ROCm",
    ),
    Rule(
        "cuda-runtime-api",
        TEXT,
        r"\bcuda(?:Malloc\w*|Free\w*|Memcpy\w*|Memset\w*|Stream\w+|Event\w+|DeviceSynchronize|"
        r"GetDevice\w*|SetDevice\w*|LaunchKernel\w*|GetLastError|PeekAtLastError|GetErrorString|"
        r"FuncSetAttribute|FuncGetAttributes|Occupancy\w+|HostAlloc|HostRegister|Graph\w+|"
        r"IpcGetMemHandle|IpcOpenMemHandle|PointerGetAttributes)\s*\(|"
        r"\bcuda(?:Stream_t|Event_t|Error_t|DeviceProp|Graph_t|GraphExec_t|IpcMemHandle_t)\b",
        "cuda",
        "source",
        "error",
        "CUDA runtime API: has HIP equivalents (hipMalloc...), but this code calls CUDA's",
        kinds=SRC,
        literals=("cuda",),
    ),
    Rule(
        "cuda-driver-api",
        TEXT,
        r"\bcu(?:LaunchKernel|ModuleLoad\w*|ModuleGetFunction|CtxCreate\w*|CtxGetCurrent|"
        r"CtxSetCurrent|MemAlloc\w*|MemFree\w*|Init|DeviceGet\w*|GetProcAddress\w*|"
        r"TensorMapEncode\w*|FuncSetAttribute|LinkCreate\w*)\s*\(|"
        r"\bCU(?:result|device|context|module|function|stream|deviceptr|tensorMap)\b",
        "cuda",
        "source",
        "error",
        "CUDA driver API: NVIDIA's driver, not present on ROCm",
        kinds=SRC,
        literals=(
            "cuLaunch",
            "cuModule",
            "cuCtx",
            "cuMem",
            "cuInit",
            "cuDevice",
            "cuGetProc",
            "cuTensorMap",
            "cuFunc",
            "cuLink",
            "CUresult",
            "CUdevice",
            "CUcontext",
            "CUmodule",
            "CUfunction",
            "CUstream",
            "CUdeviceptr",
            "CUtensorMap",
        ),
    ),
    Rule(
        "cuda-header",
        TEXT,
        r"^[ \t]*#[ \t]*include[ \t]*[<\"](?:cuda\.h|cuda_runtime(?:_api)?\.h|cuda_fp16\.h|"
        r"cuda_bf16\.h|cuda_fp8\.h|cublas(?:_v2|Lt)?\.h|cudnn\w*\.h|cusparse\w*\.h|cufft\w*\.h|"
        r"curand\w*\.h|cusolver\w*\.h|nccl\.h|nvrtc\.h|cooperative_groups\.h|mma\.h|"
        r"cuda/\S+|cub/\S+|thrust/\S+|c10/cuda/\S+|ATen/cuda/\S+)[>\"]",
        "cuda",
        "source",
        "error",
        "CUDA header: hipify maps it to a HIP/ROC library header; as written it builds only with CUDA",
        kinds=SRC,
        literals=("include",),
    ),
    Rule(
        "cuda-only-header",
        TEXT,
        r"^[ \t]*#[ \t]*include[ \t]*[<\"](?:NvInfer\w*\.h|nvml\.h|cutlass/\S+|cute/\S+|"
        r"nvToolsExt\w*\.h|nvtx3/\S+|cufile\.h|nvjpeg\.h|nvshmem\w*\.h)[>\"]",
        "cuda",
        "source",
        "error",
        "header of an NVIDIA-only library (TensorRT, NVML, CUTLASS, NVSHMEM...): no ROCm port",
        kinds=SRC,
        literals=("include",),
    ),
    Rule(
        "cuda-library-call",
        TEXT,
        r"\b(?:cublas|cublasLt|cudnn|cusparse|cufft|curand|cusolver|nccl|nvml|nvrtc)[A-Z]\w*\s*\(",
        "cuda",
        "source",
        "error",
        "call into an NVIDIA library (cuBLAS, cuDNN, NCCL, NVML...): ROCm has its own (hipBLAS, MIOpen, RCCL, amdsmi)",
        kinds=SRC,
        literals=("cublas", "cudnn", "cusparse", "cufft", "curand", "cusolver", "nccl", "nvml", "nvrtc"),
    ),
    Rule(
        "inline-ptx",
        TEXT,
        r"\basm\s*(?:volatile\s*)?\(\s*\"[^\"\n]*(?:\b(?:mma|ldmatrix|stmatrix|cp\.async|wgmma|"
        r"ld\.global|st\.global|ld\.shared|st\.shared|shfl\.sync|mov\.[bu]32|prmt|lop3|red\.|"
        r"atom\.|bar\.sync|cvt\.\w+|fma\.rn)\b)",
        "cuda",
        "source",
        "error",
        "inline PTX assembly: NVIDIA's instruction set, no HIP translation exists",
        kinds=SRC,
        literals=("asm",),
    ),
    Rule(
        "warp-sync-intrinsic",
        TEXT,
        r"\b(?:__shfl(?:_xor|_up|_down)?_sync|__ballot_sync|__activemask|__syncwarp)\s*\(",
        "cuda",
        "source",
        "warning",
        "32-lane warp intrinsic: AMD CDNA wavefronts are 64 lanes; masks and lane math need review",
        kinds=SRC,
        literals=("__shfl", "__ballot_sync", "__activemask", "__syncwarp"),
    ),
    Rule(
        "cuda-kernel",
        TEXT,
        r"\b__global__\s+(?:static\s+)?void\b",
        "cuda",
        "source",
        "warning",
        "GPU kernel (CUDA syntax; HIP accepts it too when the file is built with hipcc)",
        kinds=SRC,
        unless_in_file=r"hip/hip_runtime|__HIP_PLATFORM_|__HIPCC__|USE_ROCM",
        literals=("__global__",),
    ),
    Rule(
        "nvidia-device-code-file",
        PATH,
        r"\.(?:ptx|cubin|fatbin)$",
        "cuda",
        "core",
        "error",
        "NVIDIA device code (PTX/cubin): runs only on NVIDIA GPUs",
    ),
    # ---- CUDA: binaries ------------------------------------------------------------------
    Rule(
        "links-cuda-library",
        NEEDED,
        r"^lib(?:cudart|cuda|cublas|cublasLt|cudnn\w*|cufft|curand|cusparse|cusolver|nvrtc|"
        r"nccl|nvidia-ml|nvToolsExt|nvJitLink|nvinfer\w*|cupti|nvshmem\w*)\.so",
        "cuda",
        "core",
        "error",
        "binary linked against an NVIDIA library: it will not load on a ROCm machine",
    ),
    Rule(
        "nvidia-fatbin-section",
        SECTION,
        r"^(?:\.nv_fatbin|__nv_relfatbin|\.nvFatBinSegment)$",
        "cuda",
        "core",
        "error",
        "binary embeds NVIDIA GPU code (fatbin): kernels run only on NVIDIA GPUs",
    ),
    Rule(
        "cuda-variant-binary",
        PATH,
        r"(?:^|/)[^/]*cuda\d*[^/]*\.(?:so|pyd|dll)(?:\.\d+)*$",
        "cuda",
        "core",
        "warning",
        "binary built for CUDA (by its name)",
        kinds=_k(BINARY),
    ),
    # ---- CUDA: build ---------------------------------------------------------------------
    Rule(
        "build-nvcc",
        TEXT,
        r"\bnvcc\b",
        "cuda",
        "core",
        "error",
        "the build calls nvcc, NVIDIA's compiler",
        kinds=_k(BUILD),
        literals=("nvcc",),
    ),
    Rule(
        "build-cuda-extension",
        TEXT,
        r"\bCUDAExtension\b",
        "cuda",
        "core",
        "error",
        "builds a torch CUDAExtension: a ROCm PyTorch hipifies and compiles it with hipcc, "
        "which works only if the sources avoid NVIDIA-only constructs",
        kinds=_k(BUILD),
        literals=("CUDAExtension",),
    ),
    Rule(
        "build-cuda-home",
        TEXT,
        r"\bCUDA_(?:HOME|PATH|TOOLKIT_ROOT_DIR)\b",
        "cuda",
        "core",
        "warning",
        "the build looks for a CUDA toolkit",
        kinds=_k(BUILD),
        literals=("CUDA_",),
    ),
    Rule(
        "build-cuda-arch",
        TEXT,
        r"\bTORCH_CUDA_ARCH_LIST\b|-gencode\b|\barch=compute_\d+|\bCMAKE_CUDA_ARCHITECTURES\b",
        "cuda",
        "core",
        "warning",
        "the build targets NVIDIA architectures (sm_XX)",
        kinds=_k(BUILD),
        literals=("TORCH_CUDA_ARCH_LIST", "-gencode", "compute_", "CMAKE_CUDA_ARCHITECTURES"),
    ),
    Rule(
        "build-cmake-cuda",
        TEXT,
        r"\bfind_package\s*\(\s*(?:CUDA|CUDAToolkit)\b|\benable_language\s*\(\s*CUDA\b|"
        r"\bproject\s*\([^)]*\bCUDA\b|\bcuda_add_library\b",
        "cuda",
        "core",
        "error",
        "CMake builds CUDA code",
        kinds=_k(BUILD),
        literals=("CUDA", "cuda_add_library"),
    ),
    # ---- CUDA: dependencies and versions -------------------------------------------------
    Rule(
        "requires-nvidia-package",
        TEXT,
        _REQ + r"nvidia-(?!smi\b)[a-z0-9-]+" + _REQ_END,
        "cuda",
        "core",
        "error",
        "depends on NVIDIA's CUDA runtime packages (nvidia-*): a CUDA-only install",
        kinds=DEPS,
        literals=("nvidia-",),
    ),
    Rule(
        "requires-cuda-only-package",
        TEXT,
        _REQ + r"(?:cupy-cuda\w+|pycuda|tensorrt(?:[-_]cu\d+)?|pynvml|nvidia-ml-py3?|cuda-python|"
        r"onnxruntime-gpu)\b" + _REQ_END,
        "cuda",
        "core",
        "error",
        "depends on a CUDA-only package (CuPy's CUDA wheels, PyCUDA, TensorRT, NVML...)",
        kinds=DEPS,
        literals=("cupy-cuda", "pycuda", "tensorrt", "pynvml", "nvidia-ml-py", "cuda-python", "onnxruntime-gpu"),
    ),
    Rule(
        "cuda-local-version",
        TEXT,
        r"^(?:Version:[ \t]*[^\s+]+\+cu\d+|Requires-Dist:[^\n;]*\+cu\d+)\b|==[^\s,;\"']+\+cu\d+",
        "cuda",
        "core",
        "error",
        "a CUDA build (+cuXYZ local version)",
        kinds=DEPS,
        literals=("+cu",),
    ),
    Rule(
        "cuda-wheel-name",
        PATH,
        r"(?:\+cu\d+|[-_.]cu\d{2,3}\b)[^/]*\.whl$",
        "cuda",
        "core",
        "error",
        "a wheel built for CUDA (+cuXYZ in its file name)",
        kinds=_k(ARCHIVE),
    ),
    # ---- CUDA: Python assumptions --------------------------------------------------------
    Rule(
        "python-nvml",
        TEXT,
        r"^[ \t]*(?:import|from)[ \t]+(?:pynvml|py3nvml|nvidia_smi)\b",
        "cuda",
        "caveat",
        "warning",
        "NVML (NVIDIA management library): absent on ROCm; amdsmi is the AMD counterpart",
        kinds=PY,
        literals=("nvml", "nvidia_smi"),
    ),
    Rule(
        "python-nvidia-smi",
        TEXT,
        r"[\"']nvidia-smi\b",
        "cuda",
        "caveat",
        "warning",
        "runs nvidia-smi: absent on AMD machines (amd-smi / rocm-smi are the equivalents)",
        kinds=PY,
        literals=("nvidia-smi",),
    ),
    Rule(
        "python-cuda-only-import",
        TEXT,
        r"^[ \t]*(?:import[ \t]+(?:pycuda|tensorrt|cuda\.bindings)\b|from[ \t]+(?:pycuda|tensorrt|"
        r"cuda\.bindings)\b|from[ \t]+numba[ \t]+import[ \t]+cuda\b|import[ \t]+numba\.cuda\b|"
        r"from[ \t]+cuda[ \t]+import\b)",
        "cuda",
        "caveat",
        "error",
        "imports a CUDA-only Python library (PyCUDA, TensorRT, numba.cuda, cuda-python)",
        kinds=PY,
        literals=("pycuda", "tensorrt", "cuda.bindings", "numba", "from cuda"),
    ),
    Rule(
        "python-cuda-version-check",
        TEXT,
        r"\btorch\.version\.cuda\b",
        "cuda",
        "caveat",
        "warning",
        "checks torch.version.cuda with no torch.version.hip branch in the file: it is None on ROCm",
        kinds=PY,
        unless_in_file=r"\btorch\.version\.hip\b",
        literals=("torch.version.cuda",),
    ),
    Rule(
        "python-device-capability",
        TEXT,
        r"\bget_device_capability\s*\(",
        "cuda",
        "caveat",
        "warning",
        "get_device_capability() returns the gfx major/minor on ROCm, not an SM version",
        kinds=PY,
        unless_in_file=r"\btorch\.version\.hip\b|\bis_hip\b|\bgcnArchName\b",
        literals=("get_device_capability",),
    ),
    Rule(
        "python-cuda-jit",
        TEXT,
        r"\bload_inline\s*\([^)]*cuda_sources|\bcupy\.RawKernel\b",
        "cuda",
        "source",
        "warning",
        "compiles CUDA source at run time (torch load_inline / CuPy RawKernel)",
        kinds=PY,
        literals=("load_inline", "RawKernel"),
    ),
    # ---- ROCm path -----------------------------------------------------------------------
    Rule(
        "hip-platform-macro",
        TEXT,
        r"\b(?:__HIP_PLATFORM_AMD__|__HIP_PLATFORM_HCC__|__HIPCC__|__HIP_DEVICE_COMPILE__|USE_ROCM|"
        r"__HIP__|__gfx\d+\w*__)\b",
        "rocm",
        "source",
        "info",
        "native code with a HIP/ROCm branch",
        kinds=_k(CUDA_SRC, NATIVE, BUILD),
        literals=("__HIP", "USE_ROCM", "__gfx"),
    ),
    Rule(
        "hip-header",
        TEXT,
        r"^[ \t]*#[ \t]*include[ \t]*[<\"](?:hip/\S+|hipblas\S*|hipblaslt/\S+|rocblas\S*|miopen/\S+|"
        r"hipcub/\S+|rocprim/\S+|rccl\S*|hiprand\S*|rocrand\S*|hipsparse\S*|hipfft\S*|"
        r"ck/\S+|ck_tile/\S+|amd_smi/\S+|rocm_smi/\S+)[>\"]",
        "rocm",
        "source",
        "info",
        "includes a HIP/ROCm header",
        kinds=SRC,
        literals=("include",),
    ),
    Rule(
        "hipify-output",
        TEXT,
        r"automatically generated by hipify|HIPIFY",
        "rocm",
        "source",
        "info",
        "hipify output: CUDA code already translated to HIP",
        kinds=SRC,
        literals=("hipify", "HIPIFY"),
    ),
    Rule(
        "hip-source-file",
        PATH,
        r"(?:\.hip|_hip\.(?:cpp|cc|cu|h|hpp|cuh)|\.hsaco)$",
        "rocm",
        "source",
        "info",
        "HIP source or AMD code object file",
    ),
    Rule(
        "python-hip-branch",
        TEXT,
        r"\btorch\.version\.hip\b|\btorch\.cuda\.is_hip\b|\bis_hip\b",
        "rocm",
        "aware",
        "info",
        "a ROCm branch in Python (torch.version.hip): the code knows about ROCm",
        kinds=PY,
        literals=("is_hip", "torch.version.hip"),
    ),
    Rule(
        "triton-kernel",
        TEXT,
        r"^[ \t]*@(?:triton\.jit|triton\.autotune|triton\.heuristics)\b",
        "rocm",
        "source",
        "info",
        "Triton kernel: Triton compiles it for AMD GPUs through its AMD backend",
        kinds=PY,
        literals=("@triton",),
    ),
    Rule(
        "build-rocm",
        TEXT,
        r"\b(?:ROCM_HOME|ROCM_PATH|HIP_PATH|PYTORCH_ROCM_ARCH|AMDGPU_TARGETS|GPU_TARGETS|hipcc|"
        r"hipify_python|hipify|find_package\s*\(\s*(?:hip|HIP|rocblas|hipblas)\b|"
        r"enable_language\s*\(\s*HIP\b|--offload-arch|BUILD_FOR_ROCM|USE_ROCM|ROCM_VERSION)\b",
        "rocm",
        "core",
        "info",
        "the build has a HIP/ROCm path",
        kinds=_k(BUILD),
        literals=("ROCM", "HIP", "hip", "GPU_TARGETS", "offload-arch"),
    ),
    Rule(
        "links-rocm-library",
        NEEDED,
        r"^lib(?:amdhip64|hipblas\w*|rocblas|MIOpen|rccl|hiprtc|rocsparse|hipsparse\w*|rocrand|"
        r"hiprand|hipfft|rocfft|rocsolver|hipsolver|roctx64|roctracer64|amd_comgr|hsa-runtime64|"
        r"amd_smi|rocm_smi64)\.so",
        "rocm",
        "core",
        "info",
        "binary linked against ROCm libraries: a HIP build",
    ),
    Rule(
        "hip-fatbin-section",
        SECTION,
        r"^(?:\.hip_fatbin|\.hipFatBinSegment)$",
        "rocm",
        "core",
        "info",
        "binary embeds AMD GPU code (HIP fatbin)",
    ),
    Rule(
        "rocm-variant-binary",
        PATH,
        r"(?:^|/)[^/]*(?:rocm|hip)\d*[^/]*\.(?:so|dll)(?:\.\d+)*$",
        "rocm",
        "core",
        "info",
        "binary built for ROCm (by its name)",
        kinds=_k(BINARY),
    ),
    Rule(
        "rocm-version-or-requirement",
        TEXT,
        r"^Version:[ \t]*\S+\+rocm[\d.]*|" + _REQ + r"[\w.-]*rocm[\w.-]*" + _REQ_END,
        "rocm",
        "core",
        "info",
        "a ROCm build (+rocm version or a *-rocm requirement)",
        kinds=DEPS,
        literals=("rocm",),
    ),
    Rule(
        "rocm-mention",
        TEXT,
        r"\b(?:ROCm|HIP|hipcc|MI300X?|MI250X?|MI210|gfx9\d\w|gfx1[012]\d\d|"
        r"AMD GPUs?|Instinct|Radeon)\b",
        "rocm",
        "mention",
        "info",
        "the package description mentions ROCm/AMD GPUs",
        kinds=_k(METADATA),
        flags=re.MULTILINE,
        literals=("ROCm", "HIP", "hipcc", "MI2", "MI3", "gfx", "AMD", "Instinct", "Radeon"),
    ),
    # ---- what it builds on ---------------------------------------------------------------
    Rule(
        "uses-torch",
        TEXT,
        r"^[ \t]*(?:import|from)[ \t]+torch\b",
        "torch",
        "usage",
        "info",
        "uses PyTorch",
        kinds=_k(PYTHON),
        literals=("torch",),
        per_file=1,
    ),
    Rule(
        "requires-torch",
        TEXT,
        _REQ + r"torch\b(?![-_.\w])" + _REQ_END,
        "torch",
        "usage",
        "info",
        "requires PyTorch",
        kinds=DEPS,
        literals=("torch",),
    ),
    Rule(
        "uses-ecosystem",
        TEXT,
        rf"^[ \t]*(?:import|from)[ \t]+(?P<mod>{_ECO_IMPORT})\b",
        "ecosystem",
        "usage",
        "info",
        "builds on the PyTorch ecosystem (transformers, peft, accelerate, diffusers...)",
        kinds=_k(PYTHON),
        per_file=3,
        literals=tuple(n.replace("-", "_") for n in ECOSYSTEM),
    ),
    Rule(
        "requires-ecosystem",
        TEXT,
        rf"{_REQ}(?P<dist>{_ECO_DIST})\b(?![-\w])" + _REQ_END,
        "ecosystem",
        "usage",
        "info",
        "requires a PyTorch ecosystem library (transformers, peft, accelerate, diffusers...)",
        kinds=DEPS,
        literals=ECOSYSTEM,
    ),
    Rule(
        "requires-gpu-library",
        TEXT,
        _REQ + rf"(?P<dist>{_GPU_DIST})\b(?![-\w])" + _REQ_END,
        "dependency",
        "usage",
        "warning",
        "depends on a native GPU library: its own ROCm support decides yours; vet it too",
        kinds=DEPS,
        literals=tuple(n.split("-")[0] for n in GPU_LIBRARIES),
    ),
)

#: what the readers of archives and folders report about members they refuse to read
SAFETY: Final = "safety"
SAFETY_RULES: tuple[Rule, ...] = (
    Rule(
        "unsafe-path",
        SAFETY,
        "",
        "safety",
        "safety",
        "warning",
        "archive member with an absolute path or '..' escaping the tree: not read",
    ),
    Rule(
        "unsafe-link",
        SAFETY,
        "",
        "safety",
        "safety",
        "warning",
        "symbolic or hard link pointing outside the tree: not followed",
    ),
    Rule("special-file", SAFETY, "", "safety", "safety", "info", "device, FIFO or other special file: not read"),
    Rule(
        "oversized-member",
        SAFETY,
        "",
        "safety",
        "safety",
        "warning",
        "file larger than the scan's size limit: not read",
    ),
    Rule(
        "archive-too-large",
        SAFETY,
        "",
        "safety",
        "safety",
        "warning",
        "archive expands beyond the scan's total size limit: the rest was not read",
    ),
    Rule(
        "nested-archive-skipped",
        SAFETY,
        "",
        "safety",
        "safety",
        "warning",
        "archive inside an archive beyond the nesting limit (or too large): not opened",
    ),
    Rule(
        "unreadable",
        SAFETY,
        "",
        "safety",
        "safety",
        "warning",
        "file or nested archive that could not be read (corrupt, permission denied)",
    ),
    Rule(
        "outside-install",
        SAFETY,
        "",
        "safety",
        "safety",
        "info",
        "installed file outside the distribution's install folder (a script): not read",
    ),
)

RULES_BY_ID = {r.id: r for r in RULES + SAFETY_RULES}


@dataclass(frozen=True)
class Finding:
    rule: str
    path: str
    line: int | None
    text: str
    severity: Severity
    #: "comment" (in a comment or docstring), "optional" (an extra's requirement) or ""
    context: Context = ""

    @property
    def spec(self) -> Rule:
        return RULES_BY_ID[self.rule]

    @property
    def counts(self) -> bool:
        """Whether it is evidence for the verdict (not in a comment, not an optional extra)."""
        return not self.context

    def to_json(self) -> dict[str, object]:
        rule = self.spec
        return {
            "rule": self.rule,
            "path": self.path,
            "line": self.line,
            "text": self.text,
            "severity": self.severity,
            "side": rule.side,
            "tier": rule.tier,
            "context": self.context or None,
            "message": rule.message,
        }


def safety_finding(rule: str, path: str, detail: str) -> Finding:
    return Finding(rule, path, None, detail, RULES_BY_ID[rule].severity)
