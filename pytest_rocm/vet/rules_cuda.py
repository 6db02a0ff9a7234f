"""vet rules for CUDA code: native sources, device code, binaries and the build.

``torch.cuda.*`` (``is_available``, ``.cuda()``, ``device="cuda"``) is deliberately absent: PyTorch's
ROCm builds serve it through HIP, so it is not CUDA-only.
"""

from __future__ import annotations

from pytest_rocm.vet.kinds import BINARY, BUILD, CUDA_SRC, NATIVE, PYTHON
from pytest_rocm.vet.rule import DERIVED, NEEDED, PATH, SECTION, TEXT, Rule, kinds

SRC = kinds(CUDA_SRC, NATIVE)

CUDA_RULES: tuple[Rule, ...] = (
    # ---- CUDA: native sources ------------------------------------------------------------
    Rule(
        id="cuda-source-file",
        subject=PATH,
        pattern=r"\.cuh?$",
        side="cuda",
        tier="source",
        severity="warning",
        message="CUDA source file: needs nvcc, or hipify and hipcc to build for ROCm",
    ),
    Rule(
        id="cuda-runtime-api",
        subject=TEXT,
        pattern=r"\bcuda(?:Malloc\w*|Free\w*|Memcpy\w*|Memset\w*|Stream\w+|Event\w+|DeviceSynchronize|"
        r"GetDevice\w*|SetDevice\w*|LaunchKernel\w*|GetLastError|PeekAtLastError|GetErrorString|"
        r"FuncSetAttribute|FuncGetAttributes|Occupancy\w+|HostAlloc|HostRegister|Graph\w+|"
        r"IpcGetMemHandle|IpcOpenMemHandle|PointerGetAttributes)\s*\(|"
        r"\bcuda(?:Stream_t|Event_t|Error_t|DeviceProp|Graph_t|GraphExec_t|IpcMemHandle_t)\b",
        side="cuda",
        tier="source",
        severity="error",
        message="CUDA runtime API: has HIP equivalents (hipMalloc...), but this code calls CUDA's",
        kinds=SRC,
        literals=("cuda",),
    ),
    Rule(
        id="cuda-driver-api",
        subject=TEXT,
        pattern=r"\bcu(?:LaunchKernel|ModuleLoad\w*|ModuleGetFunction|CtxCreate\w*|CtxGetCurrent|"
        r"CtxSetCurrent|MemAlloc\w*|MemFree\w*|Init|DeviceGet\w*|GetProcAddress\w*|"
        r"TensorMapEncode\w*|FuncSetAttribute|LinkCreate\w*)\s*\(|"
        r"\bCU(?:result|device|context|module|function|stream|deviceptr|tensorMap)\b",
        side="cuda",
        tier="source",
        severity="error",
        message="CUDA driver API: NVIDIA's driver, not present on ROCm",
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
        id="cuda-header",
        subject=TEXT,
        pattern=r"^[ \t]*#[ \t]*include[ \t]*[<\"](?:cuda\.h|cuda_runtime(?:_api)?\.h|cuda_fp16\.h|"
        r"cuda_bf16\.h|cuda_fp8\.h|cublas(?:_v2|Lt)?\.h|cudnn\w*\.h|cusparse\w*\.h|cufft\w*\.h|"
        r"curand\w*\.h|cusolver\w*\.h|nccl\.h|nvrtc\.h|cooperative_groups\.h|mma\.h|"
        r"cuda/\S+|cub/\S+|thrust/\S+|c10/cuda/\S+|ATen/cuda/\S+)[>\"]",
        side="cuda",
        tier="source",
        severity="error",
        message="CUDA header: hipify maps it to a HIP/ROC library header; as written it builds only with CUDA",
        kinds=SRC,
        literals=("include",),
    ),
    Rule(
        id="cuda-only-header",
        subject=TEXT,
        pattern=r"^[ \t]*#[ \t]*include[ \t]*[<\"](?:NvInfer\w*\.h|nvml\.h|cutlass/\S+|cute/\S+|"
        r"nvToolsExt\w*\.h|nvtx3/\S+|cufile\.h|nvjpeg\.h|nvshmem\w*\.h)[>\"]",
        side="cuda",
        tier="source",
        severity="error",
        message="header of an NVIDIA-only library (TensorRT, NVML, CUTLASS, NVSHMEM...): no ROCm port",
        kinds=SRC,
        literals=("include",),
    ),
    Rule(
        id="cuda-library-call",
        subject=TEXT,
        pattern=r"\b(?:cublas|cublasLt|cudnn|cusparse|cufft|curand|cusolver|nccl|nvml|nvrtc)[A-Z]\w*\s*\(",
        side="cuda",
        tier="source",
        severity="error",
        message="call into an NVIDIA library (cuBLAS, cuDNN, NCCL, NVML...): ROCm has its own (hipBLAS, MIOpen, RCCL, amdsmi)",
        kinds=SRC,
        literals=("cublas", "cudnn", "cusparse", "cufft", "curand", "cusolver", "nccl", "nvml", "nvrtc"),
    ),
    Rule(
        id="inline-ptx",
        subject=TEXT,
        pattern=r"\basm\s*(?:volatile\s*)?\(\s*\"[^\"\n]*(?:\b(?:mma|ldmatrix|stmatrix|cp\.async|wgmma|"
        r"ld\.global|st\.global|ld\.shared|st\.shared|shfl\.sync|mov\.[bu]32|prmt|lop3|red\.|"
        r"atom\.|bar\.sync|cvt\.\w+|fma\.rn)\b)",
        side="cuda",
        tier="source",
        severity="error",
        message="inline PTX assembly: NVIDIA's instruction set, no HIP translation exists",
        kinds=SRC,
        literals=("asm",),
    ),
    Rule(
        id="warp-sync-intrinsic",
        subject=TEXT,
        pattern=r"\b(?:__shfl(?:_xor|_up|_down)?_sync|__ballot_sync|__activemask|__syncwarp)\s*\(",
        side="cuda",
        tier="source",
        severity="warning",
        message="32-lane warp intrinsic: AMD CDNA wavefronts are 64 lanes; masks and lane math need review",
        kinds=SRC,
        literals=("__shfl", "__ballot_sync", "__activemask", "__syncwarp"),
    ),
    Rule(
        id="cuda-kernel",
        subject=TEXT,
        pattern=r"\b__global__\s+(?:static\s+)?void\b",
        side="cuda",
        tier="source",
        severity="warning",
        message="GPU kernel (CUDA syntax; HIP accepts it too when the file is built with hipcc)",
        kinds=SRC,
        unless_in_file=r"hip/hip_runtime|__HIP_PLATFORM_|__HIPCC__|USE_ROCM",
        literals=("__global__",),
    ),
    Rule(
        id="nvidia-device-code-file",
        subject=PATH,
        pattern=r"\.(?:ptx|cubin|fatbin)$",
        side="cuda",
        tier="core",
        severity="error",
        message="NVIDIA device code (PTX/cubin): runs only on NVIDIA GPUs",
    ),
    # ---- CUDA: binaries ------------------------------------------------------------------
    Rule(
        id="links-cuda-library",
        subject=NEEDED,
        pattern=r"^lib(?:cudart|cuda|cublas|cublasLt|cudnn\w*|cufft|curand|cusparse|cusolver|nvrtc|"
        r"nccl|nvidia-ml|nvToolsExt|nvJitLink|nvinfer\w*|cupti|nvshmem\w*)\.so",
        side="cuda",
        tier="core",
        severity="error",
        message="binary linked against an NVIDIA library: it will not load on a ROCm machine",
    ),
    Rule(
        id="nvidia-fatbin-section",
        subject=SECTION,
        pattern=r"^(?:\.nv_fatbin|__nv_relfatbin|\.nvFatBinSegment)$",
        side="cuda",
        tier="core",
        severity="error",
        message="binary embeds NVIDIA GPU code (fatbin): kernels run only on NVIDIA GPUs",
    ),
    Rule(
        id="cuda-variant-binary",
        subject=PATH,
        pattern=r"(?:^|/)[^/]*cuda\d*[^/]*\.(?:so|pyd|dll)(?:\.\d+)*$",
        side="cuda",
        tier="core",
        severity="warning",
        message="binary built for CUDA (by its name)",
        kinds=kinds(BINARY),
    ),
    # ---- CUDA: build ---------------------------------------------------------------------
    Rule(
        id="build-nvcc",
        subject=TEXT,
        pattern=r"\bnvcc\b",
        side="cuda",
        tier="core",
        severity="error",
        message="the build calls nvcc, NVIDIA's compiler",
        kinds=kinds(BUILD),
        literals=("nvcc",),
    ),
    Rule(
        id="build-cuda-extension",
        subject=TEXT,
        pattern=r"\bCUDAExtension\b",
        side="cuda",
        tier="core",
        severity="error",
        message="builds a torch CUDAExtension: a ROCm PyTorch hipifies and compiles it with hipcc, "
        "which works only if the sources avoid NVIDIA-only constructs",
        kinds=kinds(BUILD),
        literals=("CUDAExtension",),
    ),
    Rule(
        id="build-cuda-home",
        subject=TEXT,
        pattern=r"\bCUDA_(?:HOME|PATH|ROOT|TOOLKIT_ROOT_DIR|INC_DIR)\b",
        side="cuda",
        tier="core",
        severity="warning",
        message="the build looks for a CUDA toolkit",
        kinds=kinds(BUILD),
        literals=("CUDA_",),
    ),
    Rule(
        id="build-cuda-arch",
        subject=TEXT,
        pattern=r"\bTORCH_CUDA_ARCH_LIST\b|-gencode\b|\barch=compute_\d+|\bCMAKE_CUDA_ARCHITECTURES\b",
        side="cuda",
        tier="core",
        severity="warning",
        message="the build targets NVIDIA architectures (sm_XX)",
        kinds=kinds(BUILD),
        literals=("TORCH_CUDA_ARCH_LIST", "-gencode", "compute_", "CMAKE_CUDA_ARCHITECTURES"),
    ),
    Rule(
        id="build-cmake-cuda",
        subject=TEXT,
        pattern=r"\bfind_package\s*\(\s*(?:CUDA|CUDAToolkit)\b|\benable_language\s*\(\s*CUDA\b|"
        r"\bproject\s*\([^)]*\bCUDA\b|\bcuda_add_library\b",
        side="cuda",
        tier="core",
        severity="error",
        message="CMake builds CUDA code",
        kinds=kinds(BUILD),
        literals=("CUDA", "cuda_add_library"),
    ),
    # ---- CUDA compiled at run time --------------------------------------------------------
    Rule(
        id="cuda-jit-load",
        subject=TEXT,
        pattern=r"(?:(?<![\w.])(?<!def )load|\bcpp_extension\.load)\s*\(",  # a call, not `def load(`
        side="cuda",
        tier="source",
        severity="warning",
        message="JIT-compiles CUDA sources with torch.utils.cpp_extension.load, behind an opt-in (inside a "
        "function the import path does not call)",
        kinds=kinds(PYTHON),
        only_if_in_file=r"\bcpp_extension\b[\s\S]*\.cuh?[\"']|\.cuh?[\"'][\s\S]*\bcpp_extension\b",
        literals=("cpp_extension",),
    ),
    Rule(
        id="cuda-jit-import-path",
        subject=DERIVED,
        pattern="",
        side="cuda",
        tier="core",
        severity="error",
        message="JIT-compiles CUDA sources with torch.utils.cpp_extension.load on the import path: the "
        "package's core ops are CUDA kernels",
    ),
    Rule(
        id="cuda-only-import-on-import-path",
        subject=DERIVED,
        pattern="",
        side="cuda",
        tier="core",
        severity="error",
        message="imports a CUDA-only Python library (PyCUDA, TensorRT, numba.cuda) as a shipped module is imported, "
        "no fallback",
    ),
    # ---- a native build at all (neither side: says whether C/C++ CUDA code is compiled) -----
    Rule(
        id="build-native-extension",
        subject=TEXT,
        pattern=r"\b(?:Extension|CppExtension|Pybind11Extension)\s*\(|\bext_modules\b|"
        r"\b(?:add_library|pybind11_add_module|nanobind_add_module|python_add_library)\s*\(",
        side="build",
        tier="usage",
        severity="info",
        message="the build compiles native code (an extension module or a library)",
        kinds=kinds(BUILD),
        literals=("Extension", "ext_modules", "add_library", "_add_module"),
        per_file=1,
    ),
)
