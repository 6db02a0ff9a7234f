"""The known-issues table: one row per public ROCm bug report, kept as data.

Each :class:`Case` is a minimal reproduction of ONE report at the report's shape and dtype (``shapes``,
used by the ``full`` profile) and at the smallest size that keeps the report's condition (``ci_shapes``,
used by ``ci``). The runner (``repro.py``) builds seeded inputs, runs the op on the device under test
and once in float64 on the CPU, and compares. On an environment that has the bug the row fails with
a message that names the report; on a fixed one it passes.

What each report says about where it was seen (``seen_on``) and what fixed it (``fixed_in``) is
copied from the report as we read it; anything the report does not state is left out or said to be
unknown in ``note``. Where a report gives no exact shape, ``note`` says which shape we chose and why.

Torch-free on purpose: docs and the plugin's tests read the table without importing torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: what a report describes: the row fails the same way the report did
KINDS = ("wrong-result", "error", "crash", "hang", "slow", "nondeterministic")

#: GPU features a row may need; without them (on the CPU) the row skips and says which
FEATURES = {
    "tunableop": "TunableOp (torch.cuda.tunable, PYTORCH_TUNABLEOP_ENABLED=1)",
    "sdpa-backend": "a specific SDPA backend forced with torch.nn.attention.sdpa_kernel",
    "rocm": "a ROCm build of torch",
}


@dataclass(frozen=True)
class Case:
    id: str
    url: str
    title: str
    #: where the report saw it: gfx targets, GPU names, torch / ROCm / library versions (as reported)
    seen_on: dict[str, Any]
    #: {"version": ..., "change": url} when the report (or the fix it links) says; None when unknown
    fixed_in: dict[str, Any] | None
    kind: str
    #: key of repro.OPS
    op: str
    dtypes: tuple[str, ...]
    #: the report's shapes (the ``full`` profile)
    shapes: dict[str, Any]
    #: the smallest shapes that keep the report's condition (the ``ci`` profile); None: same as shapes
    ci_shapes: dict[str, Any] | None = None
    #: ``full`` on the CPU when the report's shape would take minutes there (the condition is kept)
    cpu_full_shapes: dict[str, Any] | None = None
    options: dict[str, Any] = field(default_factory=dict)
    needs: tuple[str, ...] = ()
    #: run in a subprocess: the report is a crash (segfault, GPU memory fault) that would kill the run
    isolate: bool = False
    #: per-dtype tolerance overrides {"rtol", "atol", "normwise"}; defaults: pytest_rocm.parity's table
    tolerance: dict[str, dict[str, float]] = field(default_factory=dict)
    #: reduction length for the default tolerances (sqrt(K) growth of the accumulation error)
    reduction: int = 1
    #: kind "slow": the report's shapes timed on a GPU (after one warm-up call) against budget_s
    timing: dict[str, Any] | None = None
    timeout_s: float = 300.0
    related: tuple[str, ...] = ()
    note: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"{self.id}: kind {self.kind!r} is not one of {KINDS}")
        unknown = set(self.needs) - set(FEATURES)
        if unknown:
            raise ValueError(f"{self.id}: unknown needs {sorted(unknown)}")

    def shapes_for(self, scale: str, on_cpu: bool) -> dict[str, Any]:
        if scale == "ci":
            return self.ci_shapes if self.ci_shapes is not None else self.shapes
        if on_cpu and self.cpu_full_shapes is not None:
            return self.cpu_full_shapes
        return self.shapes

    def feature(self, dtype: str) -> str:
        """The compatibility-table row: ``known_issues/<id>[<dtype>]``."""
        return f"known_issues/{self.id}[{dtype}]"

    def issue(self) -> dict[str, Any]:
        """The row's ``issue`` metadata for the report (DESIGN.md: URL, where seen, fixed-in)."""
        return {
            "url": self.url,
            "title": self.title,
            "kind": self.kind,
            "seen_on": self.seen_on,
            "fixed_in": self.fixed_in,
            "related": list(self.related),
            "note": self.note,
        }


PT = "https://github.com/pytorch/pytorch"

CASES: tuple[Case, ...] = (
    # --- scaled_dot_product_attention -----------------------------------------------------------------
    Case(
        id="sdpa-hd512-gfx1151",
        url=f"{PT}/issues/189849",
        related=("https://github.com/ROCm/TheRock/issues/6561",),
        title="Flash SDPA wrong output for head_dim=512 on gfx1151 (ROCm 7.15 regression)",
        seen_on={
            "gfx": ["gfx1151"],
            "torch": ["2.14.0a0+rocm7.15.0a20260627 .. 2.14.0a0+rocm7.15.0a20260713 (nightlies)"],
            "rocm": ["7.15 nightlies"],
            "not_on": ["gfx1201 (same builds)", "2.12.0+rocm7.15.0a20260626 (last good)"],
        },
        fixed_in=None,
        kind="wrong-result",
        op="sdpa",
        dtypes=("float16", "bfloat16"),
        shapes={"q": (1, 1, 4096, 512)},
        ci_shapes={"q": (1, 1, 64, 512)},
        options={"backends": [("flash",), None]},
        note="Outputs saturate to exactly 512.0. The excerpt we read gives neither shape nor dtype: the row "
        "uses one head of 512 (the attention of SD3's VAE, where the report saw it) over 4096 tokens (a "
        "512x512 image's 64x64 latent) in float16 and bfloat16. The pytorch issue is closed, the TheRock "
        "one open; no fixed version is stated.",
    ),
    Case(
        id="sdpa-hd384-gfx1100",
        url="https://github.com/vllm-project/vllm-omni/issues/7484",
        title="Wan2.2 VAE silently produces corrupted output on gfx1100 (SDPA head_dim=384)",
        seen_on={"gfx": ["gfx1100"], "vllm": ["0.29.0"]},
        fixed_in=None,
        kind="wrong-result",
        op="sdpa",
        dtypes=("bfloat16",),
        shapes={"q": (1, 1, 6240, 384)},
        ci_shapes={"q": (1, 1, 64, 384)},
        options={"backends": [("flash",), ("efficient",), None]},
        note="Open. Shape not in the excerpt: one head of 384 (Wan2.2's VAE attention) over 6240 tokens "
        "(a 480x832 frame at 1/8 resolution), bfloat16 (Wan2.2's usual dtype).",
    ),
    Case(
        id="sdpa-noncontiguous-value-mi300x",
        url="https://github.com/ROCm/pytorch/issues/3230",
        title="SDPA: FLASH/EFFICIENT backends return wrong values when V is non-contiguous (ROCm 7.0, MI300X)",
        seen_on={"gfx": ["gfx942"], "gpu": ["AMD Instinct MI300X"], "rocm": ["7.0"]},
        fixed_in=None,
        kind="wrong-result",
        op="sdpa",
        dtypes=("bfloat16",),
        shapes={"q": (1, 16, 62, 128)},
        options={"value_layout": "heads-transposed-view", "backends": [("flash",), ("efficient",), None]},
        note="The report's exact repro: B,H,L,D = 1,16,62,128 bfloat16, V = (B,L,H*D).view(B,L,H,D).transpose(1,2); "
        "max abs diff ~2-3. Closed; no fixed version stated.",
    ),
    Case(
        id="sdpa-memeff-float-mask",
        url=f"{PT}/issues/147460",
        title="scaled_dot_product_attention using mem-efficient backend (aotriton) produces wrong outputs "
        "with custom attn_mask on torch 2.6.0+rocm6.2.4",
        seen_on={"torch": ["2.6.0+rocm6.2.4"]},
        fixed_in=None,
        kind="wrong-result",
        op="sdpa",
        dtypes=("float16",),
        shapes={"q": (2, 8, 7, 64)},
        options={"mask": "float-left-padded-causal", "left_padding": (0, 3), "backends": [("efficient",), None]},
        note="The report's mask: 2 sequences of 7, float16 with -65504 (finfo.min) where masked, the second "
        "sequence left-padded by 3 (the rows of the padding attend to everything, as transformers builds it). "
        "Heads and head_dim are not in the excerpt: 8 heads of 64. Closed; no fixed version stated.",
    ),
    Case(
        id="sdpa-fp16-large-values-nan",
        url=f"{PT}/issues/116176",
        title="Float16 scaled_dot_product_attention returns NaNs on ROCm",
        seen_on={"note": "ROCm float16 only; CUDA float16 and ROCm float32 fine (report of 2023-12)"},
        fixed_in=None,
        kind="wrong-result",
        op="sdpa",
        dtypes=("float16",),
        shapes={"q": (32, 8, 128, 64)},
        ci_shapes={"q": (2, 8, 128, 64)},
        options={
            "qk_scale": -900.0,
            "qk_dist": "rand",
            "v_dist": "rand",
            "check": "finite-convex",
            "backends": [("efficient", "math"), None],
        },
        note="The report's repro: q, k = rand(32,8,128,64)*-900, v = rand, float16, flash disabled; every output "
        "was NaN. The scores (~1e6) make softmax one-hot, so the output is judged by what must hold for any "
        "correct kernel: finite and inside the range of v. Closed (high priority); no fixed version stated.",
    ),
    Case(
        id="sdpa-fp16-bf16-small",
        url=f"{PT}/issues/119772",
        title="ROCm: scaled_dot_product_attention gives wrong results in fp16 and bfloat16",
        seen_on={"note": "report of 2024-02; GPU not in the excerpt"},
        fixed_in={"version": None, "change": None, "note": "closed 2024-11 by the maintainers as resolved"},
        kind="wrong-result",
        op="sdpa",
        dtypes=("float16", "bfloat16"),
        shapes={"q": (5, 4, 10, 8)},
        note="The report's repro: B,H,L,D = 5,4,10,8 randn, compared with float32.",
    ),
    Case(
        id="aotriton-bf16-large-inputs-nan",
        url="https://github.com/ROCm/aotriton/issues/54",
        related=("https://github.com/ROCm/aotriton/pull/179",),
        title="large bf16 inputs leads to nan",
        seen_on={
            "gfx": ["gfx942"],
            "gpu": ["AMD Instinct MI300X"],
            "rocm": ["6.2.3"],
            "also": ["gfx1151, torch 2.12.0+rocm7.14.0, AOTriton 0.11.2 (a later comment)"],
        },
        fixed_in=None,
        kind="wrong-result",
        op="sdpa",
        dtypes=("bfloat16",),
        shapes={"q": (1, 1, 64, 16)},
        options={"qk_fill": 133120.0, "backends": [("flash",), None]},
        note="The report's numbers: q = k = 133120 with qk_scale 0.25 (head_dim 16); fma vs mul rounding "
        "makes exp2(247.375) = inf, then NaN. All scores are equal, so the output is the mean of v. "
        "Open; ROCm/aotriton#179 (a gfx1151 fix) says it fixes it.",
    ),
    Case(
        id="sdpa-hdim-over-256-error",
        url=f"{PT}/issues/148850",
        title="[ROCm] AOTriton 0.9.2b RuntimeError Only Supports Head Dimension <=256",
        seen_on={"torch": ["2.7.0.dev20250309+rocm6.3"], "aotriton": ["0.9.2"]},
        fixed_in=None,
        kind="error",
        op="sdpa",
        dtypes=("float16",),
        shapes={"q": (1, 1, 16384, 512)},
        ci_shapes={"q": (1, 1, 128, 512)},
        cpu_full_shapes={"q": (1, 1, 4096, 512)},
        options={"q_fill": 1.0, "kv_clone_q": True},
        note="The report's repro: q = ones(1,1,16384,512) float16, k = v = q.clone(), default backends -> "
        "'FlashAttention forward only supports head dimension at most 256'. The CPU's full profile uses 4096 "
        "tokens (16384 takes minutes there); the condition, head_dim 512, is the same. Closed.",
    ),
    Case(
        id="sdpa-efficient-hd512-no-kernel",
        url=f"{PT}/issues/138864",
        title='[ROCm] "No available kernel" when running EFFICIENT_ATTENTION sdpa',
        seen_on={"note": "GPU and versions not in the excerpt (seen running genmo/mochi-1-preview)"},
        fixed_in=None,
        kind="error",
        op="sdpa",
        dtypes=("bfloat16",),
        shapes={"q": (2, 8, 1, 512), "kv": (2, 8, 257, 512)},
        options={"mask": "bool-ones", "backends": [("efficient",)]},
        needs=("sdpa-backend",),
        note="The report's exact repro: q (2,8,1,512), k, v (2,8,257,512) bfloat16, a bool mask of ones "
        "(2,1,1,257), EFFICIENT_ATTENTION forced. Closed.",
    ),
    # --- GEMM: TunableOp, hipBLASLt, rocBLAS -------------------------------------------------------------
    Case(
        id="tunableop-views-memory-fault",
        url=f"{PT}/issues/140278",
        title="[ROCm][TunableOp] TunableOp on some operations on tensor views results in memory access fault",
        seen_on={
            "gfx": ["gfx90a (MI250, reproduced by a maintainer)"],
            "note": "the reporter's GPU is not supported by hipBLASLt (they set PYTORCH_TUNABLEOP_HIPBLASLT_ENABLED=0)",
        },
        fixed_in={"version": None, "change": f"{PT}/pull/140673"},
        kind="crash",
        op="einsum-views",
        dtypes=("float16",),
        shapes={"q": (16, 16, 1024, 64), "q_split": 512, "k_split": 1024},
        options={"env": {"PYTORCH_TUNABLEOP_ENABLED": "1", "PYTORCH_TUNABLEOP_TUNING": "1"}},
        needs=("tunableop",),
        isolate=True,
        timeout_s=600.0,
        note="The report's exact repro: q, k (16,16,1024,64) float16, q.split(512,-2)[0], k.split(1024,-2)[0], "
        "einsum('bhid,bhjd->bhij') -> 'Memory access fault by GPU'. Workaround: "
        "PYTORCH_TUNABLEOP_ROTATING_BUFFER_SIZE=0. Fixed by pytorch#140673 (TunableOp fix for batched MM with views).",
    ),
    Case(
        id="tunableop-mi300x-memory-fault",
        url=f"{PT}/issues/139116",
        related=("https://github.com/ROCm/pytorch/pull/1664",),
        title="[ROCm] PyTorch TunableOps results in Memory Access Fault",
        seen_on={"gfx": ["gfx942"], "gpu": ["8x AMD Instinct MI300X"], "rocm": ["6.2.1"]},
        fixed_in={
            "version": None,
            "change": f"{PT}/pull/139137",
            "note": "cherry-picked to ROCm/pytorch's rocm6.3 branch in ROCm/pytorch#1664",
        },
        kind="crash",
        op="mlp",
        dtypes=("bfloat16",),
        shapes={"batch": 7_200_000, "in": 12, "hidden": 16, "out": 1},
        ci_shapes={"batch": 72_000, "in": 12, "hidden": 16, "out": 1},
        options={"env": {"PYTORCH_TUNABLEOP_ENABLED": "1", "PYTORCH_TUNABLEOP_TUNING": "1"}},
        needs=("tunableop",),
        isolate=True,
        reduction=16,
        timeout_s=600.0,
        note="The report's script: batch 7,200,000 x width 12 in bfloat16 through a model with linear1_width=16 "
        "and out_width=1; the model's layers are not in the excerpt, the row uses Linear(12,16)-ReLU-Linear(16,1). "
        "Fixed by pytorch#139137 (TunableOp uses dense size calculations as minimum sizes).",
    ),
    Case(
        id="tunableop-matmul-segfault",
        url=f"{PT}/issues/159070",
        title="[ROCm][TunableOp] Simple matmul with TunableOp results in segfault",
        seen_on={"gfx": ["gfx942"], "gpu": ["AMD Instinct MI300X"], "torch": ["2.9.0.dev20250630+rocm6.4"]},
        fixed_in=None,
        kind="crash",
        op="matmul",
        dtypes=("float32",),
        shapes={"a": (512, 2048), "b": (2048, 1024)},
        options={"env": {"PYTORCH_TUNABLEOP_ENABLED": "1", "PYTORCH_TUNABLEOP_VERBOSE": "1"}, "dist": "rand"},
        needs=("tunableop",),
        isolate=True,
        reduction=2048,
        timeout_s=600.0,
        note="The AMD blog's example from the report: torch.rand(512,2048) @ torch.rand(2048,1024) float32 with "
        "PYTORCH_TUNABLEOP_ENABLED=1 -> segfault. Closed; no fixed version stated.",
    ),
    Case(
        id="hipblaslt-unsupported-arch",
        url=f"{PT}/issues/138067",
        related=("https://github.com/ROCm/pytorch/pull/1855",),
        title="Attempting to use hipBLASLt on a unsupported architecture!",
        seen_on={"gfx": ["gfx908"], "rocm": ["6.2.2"], "torch": ["source build b72ff35"]},
        fixed_in={
            "version": None,
            "change": f"{PT}/pull/138267",
            "note": "ported to ROCm/pytorch release/2.5 in ROCm/pytorch#1855 (Fix ADDMM hipBLASLt regression)",
        },
        kind="error",
        op="linear",
        dtypes=("float32", "bfloat16"),
        shapes={"x": (16, 64), "w": (32, 64)},
        reduction=64,
        note="F.linear with a bias (addmm) raised 'Attempting to use hipBLASLt on a unsupported architecture!' on "
        "gfx908 instead of falling back to hipBLAS. The report's shapes are not in the excerpt: (16,64) x (32,64)^T "
        "+ bias. On a GPU the row records torch.backends.cuda.preferred_blas_library() and any fall-back warning.",
    ),
    Case(
        id="sgemm-gfx1151-wrong",
        url="https://github.com/ROCm/rocBLAS/issues/1680",
        related=("https://github.com/ROCm/rocm-libraries/issues/11530",),
        title="sgemm silently returns wrong results on gfx1151 (Radeon 8060S): max rel err 1.7e4, no error raised",
        seen_on={"gfx": ["gfx1151"], "gpu": ["Radeon 8060S (Ryzen AI MAX+ 395)"], "rocblas": ["7.1.0 (Ubuntu 26.04)"]},
        fixed_in=None,
        kind="wrong-result",
        op="matmul",
        dtypes=("float32",),
        shapes={"a": (256, 256), "b": (256, 256)},
        options={"dist": "uniform", "low": -10.0, "high": 10.0},
        reduction=256,
        note="The report's repro: rocblas_sgemm 256^3 with values uniform in [-10, 10]. The report calls rocBLAS "
        "directly; torch.matmul may route to hipBLASLt instead. Open.",
    ),
    Case(
        id="dgemm-segfault-gfx1102",
        url=f"{PT}/issues/161256",
        title="Simple float64 Matmul on RX 7600xt with ROCm 6.4.3 and PyTorch 2.8 Crashes with Segfault",
        seen_on={
            "gfx": ["gfx1102"],
            "gpu": ["AMD Radeon RX 7600 XT"],
            "torch": ["2.8.0+rocm6.4"],
            "rocm": ["6.4.3 (userland)"],
            "not_on": ["2.7.1+rocm6.3 with ROCm 6.3.4"],
        },
        fixed_in=None,
        kind="crash",
        op="matmul",
        dtypes=("float64",),
        shapes={"a": (1000, 1000), "b": (1000, 1000)},
        isolate=True,
        reduction=1000,
        timeout_s=180.0,
        note="The report's exact repro: randn(1000,1000) @ randn(1000,1000) in float64 -> SIGSEGV in rocBLAS "
        "(Tensile::PlaceholderLibrary::loadPlaceholderLibrary). Open.",
    ),
    # --- convolution / MIOpen ----------------------------------------------------------------------------
    Case(
        id="miopen-gfx1151-conv-batchnorm",
        url="https://github.com/ROCm/pytorch/issues/2837",
        related=("https://github.com/ROCm/rocm-libraries/issues/4070",),
        title="PyTorch fails to execute BatchNorm2d, Conv2d, and Conv3d on AMD Ryzen AI Max+ 395 (gfx1151) with ROCm 7.1",
        seen_on={"gfx": ["gfx1151"], "gpu": ["Radeon 8060S Graphics"], "rocm": ["7.1 (HIP 7.1.25413)"]},
        fixed_in=None,
        kind="error",
        op="miopen-smoke",
        dtypes=("float16", "float32"),
        shapes={"conv2d": (2, 3, 32, 32), "conv3d": (1, 3, 8, 16, 16), "batchnorm": (4, 8, 16, 16), "out": 8},
        reduction=81,
        note="'MIOpen Error: stoul' -> miopenStatusUnknownError for Conv3d (float16), Conv3d and BatchNorm2d "
        "(float32); BatchNorm2d in float16 worked. The report's shapes are not in the excerpt: small ones. Closed.",
    ),
    Case(
        id="miopen-gfx1151-conv-solvers-fail",
        url="https://github.com/ROCm/MIOpen/issues/3964",
        title="[gfx1151/Strix Halo] MIOpen 3.6.0 (ROCm 10.0 wheel): ALL conv solvers fail - 'Invalid elapsed time "
        "(elapsed <= 0)'",
        seen_on={"gfx": ["gfx1151"], "gpu": ["Radeon 8060S"], "torch": ["2.13.0+rocm10.0.0"], "miopen": ["3.6.0.8"]},
        fixed_in=None,
        kind="error",
        op="conv2d",
        dtypes=("float32",),
        shapes={"x": (1, 16, 32, 32), "w": (16, 16, 3, 3)},
        reduction=144,
        note="F.conv2d -> miopenStatusUnknownError; every solver fails evaluation. Workaround: "
        "torch.backends.cudnn.enabled=False. Shapes not in the excerpt: a 3x3 convolution of 16 channels. Open.",
    ),
    Case(
        id="miopen-slow-conv-gfx1201",
        url="https://github.com/ROCm/rocm-libraries/issues/2567",
        title="Very slow convolution performance on RX 9070",
        seen_on={
            "gfx": ["gfx1201"],
            "gpu": ["AMD Radeon RX 9070"],
            "hip": ["7.2.0"],
            "miopen": ["3.5.1"],
            "os": ["Windows"],
        },
        fixed_in=None,
        kind="slow",
        op="conv2d",
        dtypes=("float32",),
        shapes={"x": (2, 64, 64, 64), "w": (64, 64, 3, 3)},
        ci_shapes={"x": (1, 64, 16, 16), "w": (64, 64, 3, 3)},
        timing={"shapes": {"x": (32, 64, 256, 256), "w": (64, 64, 3, 3)}, "budget_s": 2.0},
        reduction=576,
        note="The report's MIOpenDriver command: conv -n 32 -c 64 -H 256 -W 256 -k 64 -y 3 -x 3 -p 1 float32; MIOpen "
        "picked GemmFwdRest. The report's shape is timed on GPUs only (154 GFLOP; our budget of 2 s is ~77 "
        "GFLOP/s, below any current GPU); numbers are checked at a smaller shape. Closed.",
    ),
    Case(
        id="conv3d-slow-shapes",
        url=f"{PT}/issues/146998",
        title="ROCM / HIP: Conv3d forward is very slow for some shapes.",
        seen_on={"gfx": ["gfx1100 (RX 7900 XTX, a comment: 44.5 s for the timed shape)"]},
        fixed_in=None,
        kind="slow",
        op="conv3d",
        dtypes=("bfloat16",),
        shapes={"x": (1, 16, 9, 34, 34), "w": (16, 16, 3, 3, 3)},
        ci_shapes={"x": (1, 8, 5, 10, 10), "w": (8, 8, 3, 3, 3)},
        timing={"shapes": {"x": (1, 128, 67, 258, 258), "w": (128, 128, 3, 3, 3)}, "budget_s": 5.0},
        reduction=432,
        note="A comment's timing: Conv3d(128,128,3) on (1,128,67,258,258) bfloat16 took 44.5 s on a 7900 XTX. The "
        "report's shape (5.9 TFLOP) is timed on GPUs only against our budget of 5 s; numbers are checked at a "
        "smaller shape. Closed.",
    ),
    # --- norms, reductions, indexing ---------------------------------------------------------------------
    Case(
        id="layer-norm-huge-m",
        url=f"{PT}/issues/184826",
        title="ROCm F.layer_norm silently produces wrong output for M >= 2^23, C%4!=0",
        seen_on={
            "gfx": ["gfx942"],
            "gpu": ["AMD Instinct MI300X"],
            "torch": ["2.10.0+rocm7.2.0.gitb6ee5fde"],
            "note": "the report says it reproduces on two AMD architectures and on a nightly with #181600",
        },
        fixed_in=None,
        kind="wrong-result",
        op="layer-norm",
        dtypes=("bfloat16",),
        shapes={"x": (2**23 + 7, 35)},
        ci_shapes={"x": (2**23, 3)},
        reduction=35,
        note="The report's check: randn(M, C) bfloat16, weight ones, no bias, eps 1e-5; rows at the back come out "
        "zero or garbage. Its motivating shapes (M = 2048*5247, C = 267: 2.9e9 elements) exceed our 16 GiB per "
        "row with a float64 reference; the rows keep the report's condition (M >= 2^23, C % 4 != 0). Closed.",
    ),
    Case(
        id="embedding-sparse-backward-gfx1201",
        url=f"{PT}/issues/193704",
        title="[ROCm] nn.Embedding(sparse=True) backward computes ~10^5x incorrect gradient magnitude on ROCm "
        "(gfx1201 / RDNA4)",
        seen_on={"gfx": ["gfx1201"], "gpu": ["AMD Radeon AI PRO R9700"], "torch": ["2.x+rocm6.x (as reported)"]},
        fixed_in=None,
        kind="wrong-result",
        op="embedding-sparse-backward",
        dtypes=("float32",),
        shapes={"vocab": 100_000, "dim": 64, "indices": (4, 16)},
        note="The report's exact repro: nn.Embedding(100000, 64, sparse=True), indices randint(0, 100000, (4, 16)), "
        "loss = emb(indices).sum(); dense embeddings were correct. Closed.",
    ),
    Case(
        id="topk-nondeterministic-half",
        url=f"{PT}/issues/196177",
        title="torch.topk is non-deterministic on ROCm for bfloat16/float16 when the reduced dim exceeds 256",
        seen_on={"note": "ROCm; GPU not in the excerpt; float32 unaffected"},
        fixed_in=None,
        kind="nondeterministic",
        op="topk",
        dtypes=("bfloat16", "float16"),
        shapes={"x": (256, 2048), "k": 8, "repeats": 10},
        ci_shapes={"x": (256, 257), "k": 8, "repeats": 10},
        note="The report's repro: randn(256, E), k = 8, 10 repeated calls; rows change from E = 257 on, most of them "
        "with distinct values at the k-boundary. The row also checks the values against the float64 topk. Open.",
    ),
    Case(
        id="sum-large-hip-invalid-value",
        url="https://github.com/ROCm/pytorch/issues/639",
        title="Need help to investigate : RuntimeError: HIP error: hipErrorInvalidValue on (large) sum()",
        seen_on={"gfx": ["gfx900"], "gpu": ["Radeon RX Vega 56"], "rocm": ["3.3"], "torch": ["1.5 (source build)"]},
        fixed_in=None,
        kind="error",
        op="sum",
        dtypes=("float32",),
        shapes={"x": (130_561,), "x2": (130_560, 2), "p": 0.001},
        note="The report's repro: zeros(130561).bernoulli_(0.001).sum() -> hipErrorInvalidValue (130560 worked), and "
        "the same for a (130560, 2) reshape summed over dim 0. Closed (2020).",
    ),
    Case(
        id="sort-bool-view",
        url=f"{PT}/issues/139972",
        title="[ROCm] sorting torch.bool tensor viewed from torch.uint8 type produces incorrect results",
        seen_on={"note": "ROCm; GPU and versions not in the excerpt (report of 2024-11)"},
        fixed_in=None,
        kind="wrong-result",
        op="sort-bool-view",
        dtypes=("bool",),
        shapes={"x": (100,), "high": 100},
        note="The report's repro: randint(0, 100, [100], uint8), torch.sort(a.view(torch.bool)) -> False between "
        "Trues (radix sort on bytes other than 0/1). Compared with sorting a != 0. Closed.",
    ),
)

BY_ID: dict[str, Case] = {case.id: case for case in CASES}
if len(BY_ID) != len(CASES):  # pragma: no cover - a duplicated id is a typo in the table
    raise ValueError("duplicate case ids in CASES")
