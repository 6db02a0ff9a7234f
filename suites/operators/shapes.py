"""The shapes of the operator sweeps, per scale profile, as data.

Each table maps a row id (the condition a kernel may switch on: ``hd512-causal``, ``k4096``,
``k3-channels_last-b8``) to ``(ci, full)``: the shape in the ``ci`` profile (the smallest one that
triggers the condition, so CI exercises it on 2 CPU cores) and in the ``full`` profile (the shape a
real model runs, its source named in ``SOURCES``). The id is the same in both profiles, so a row
compares across a ci report and a full one; ``None`` leaves a row out of a profile (the long
sequences, the vocabulary-sized rows and SDXL's layers are full-only).

Model configs the full shapes come from (Hugging Face ``config.json`` of each model):

* Llama-3-8B (meta-llama/Meta-Llama-3-8B): hidden 4096, 32 attention heads over 8 key/value heads,
  head_dim 128, intermediate 14336, vocabulary 128256, context 8192;
* Qwen2.5-7B (Qwen/Qwen2.5-7B): hidden 3584, 28 heads over 4 key/value heads (head_dim 128, a GQA
  ratio of 7), intermediate 18944, vocabulary 152064, bias on the q/k/v projections;
* SDXL UNet (stabilityai/stable-diffusion-xl-base-1.0, unet/config.json): block_out_channels
  320/640/1280, 128x128 latents at 1024 px (64x64 at 512 px), GroupNorm with 32 groups, attention
  heads of 64 channels, no attention in the first block;
* head dims of other families: 64 (GPT-2, SDXL), 80 (Phi-2: 2560 / 32), 96 (Phi-3-mini: 3072 / 32),
  192 (DeepSeek-V2/V3 MLA: 128 + 64 rotary), 256 (Gemma-7B), 384 and 512 (the sizes of the public
  ROCm reports: vllm-omni#7484, pytorch#189849, TheRock#6561);
* Llama-3-70B: hidden 8192 (the 8192-feature norms); Falcon-40B / GPT-J-6B: LayerNorm at 8192 / 4096.

Memory (``full``, the CPU float64 reference plus one low-precision run, gradients included): the
largest row is ``sdpa_sweep[llama3_8b_s8192]`` with the math backend: one 4 x 8192 x 8192 fp32
attention matrix is 1 GiB, forward and backward hold about four of them plus the float64
reference's (the reference may use the CPU's flash kernel), ~6-8 GiB; the vocabulary rows keep
their width at 1024 (a 128256 x 4096 float64 weight, its gradient and its copies would be ~15 GiB)
and ``matmul_sweep[llama3_8b_lm_head]`` runs forward only (~8 GiB). No row needs 16 GiB.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import pytest

from pytest_rocm import scale_cases

#: why each full shape is what it is (row id -> source), for the rows of every table
SOURCES: dict[str, str] = {}


def _table(rows: dict[str, tuple[Any, Any, str]]) -> dict[str, tuple[Any, Any]]:
    """``{id: (ci, full, source)}`` -> ``{id: (ci, full)}``, sources kept in SOURCES (one namespace
    for all tables: a row id used by two tables would give one of them the other's source)."""
    clash = sorted(set(rows) & set(SOURCES))
    if clash:
        raise ValueError(f"row ids already used by another table: {', '.join(clash)}")
    SOURCES.update({key: source for key, (_, _, source) in rows.items() if source})
    return {key: (ci, full) for key, (ci, full, _) in rows.items()}


@dataclass(frozen=True)
class Row:
    """One sweep row as a test receives it: its id and its shape in this session's profile."""

    id: str
    shape: Any

    @property
    def source(self) -> str:
        return SOURCES.get(self.id, "")

    def info(self, scale: str) -> dict[str, Any]:
        """What the row records as ``rocm_info``: the profile, the shape and where it comes from."""
        return {"scale": scale, "shape": asdict(self.shape), "source": self.source}


def marker(argname: str, table: dict[str, tuple[Any, Any]]) -> pytest.MarkDecorator:
    """``rocm_scaled`` parametrization of ``argname`` with a :class:`Row` per row of this profile."""
    rows = {
        key: (Row(key, ci) if ci is not None else None, Row(key, full) if full is not None else None)
        for key, (ci, full) in table.items()
    }
    return scale_cases(argname, rows)


# -- scaled_dot_product_attention --------------------------------------------------------------
@dataclass(frozen=True)
class Attention:
    batch: int
    heads: int
    kv_heads: int
    seq_q: int
    seq_k: int
    head_dim: int
    causal: bool = False
    #: none | bool (padding, True = attend) | float (additive bias with -inf padding)
    mask: str = "none"
    #: none | enable_gqa (SDPA's own) | repeat (k/v repeated to the query heads, as transformers does)
    gqa: str = "none"
    #: contiguous | transposed (q, k, v from (B, S, H, D) views) | sliced (split from one fused qkv
    #: projection) | v_transposed (only the value is a transposed view)
    layout: str = "contiguous"


HEAD_DIMS = (64, 80, 96, 128, 192, 256, 384, 512)
#: ci: 72 = 64 + 8, a full tile and a partial one for the 64-wide tiles of fused kernels
_CI_SEQ = 72


def _attn_ci(head_dim: int = 128, **kw: Any) -> Attention:
    base: dict[str, Any] = {"batch": 2, "heads": 2, "kv_heads": 2, "seq_q": _CI_SEQ, "seq_k": _CI_SEQ}
    base.update(kw)
    return Attention(head_dim=head_dim, **base)


def _attn_full(head_dim: int = 128, **kw: Any) -> Attention:
    # Llama-3-8B: sequence 2048; 8 heads = its key/value heads (32 query heads would make the math
    # backend's fp32 2048x2048 matrices 4x larger for no new condition)
    base: dict[str, Any] = {"batch": 1, "heads": 8, "kv_heads": 8, "seq_q": 2048, "seq_k": 2048}
    base.update(kw)
    return Attention(head_dim=head_dim, **base)


_HD_SOURCE = {
    64: "head_dim 64: GPT-2, SDXL attention",
    80: "head_dim 80: Phi-2 (2560 / 32)",
    96: "head_dim 96: Phi-3-mini (3072 / 32)",
    128: "head_dim 128: Llama-3-8B, Qwen2.5-7B",
    192: "head_dim 192: DeepSeek-V2/V3 MLA (128 + 64 rotary)",
    256: "head_dim 256: Gemma-7B",
    384: "head_dim 384: vllm-omni#7484 (garbage output on ROCm)",
    512: "head_dim 512: pytorch#189849, TheRock#6561 (NaN/garbage on gfx1151, gfx1100)",
}

#: head dims also run causal (the kernels' masked tiles): the common one, and where the reports are
CAUSAL_HEAD_DIMS = (64, 128, 256, 512)

_attention_rows: dict[str, tuple[Any, Any, str]] = {}
for _hd in HEAD_DIMS:
    for _causal in (False, True) if _hd in CAUSAL_HEAD_DIMS else (False,):
        _attention_rows[f"hd{_hd}" + ("-causal" if _causal else "")] = (
            _attn_ci(_hd, causal=_causal),
            _attn_full(_hd, causal=_causal),
            f"{_HD_SOURCE[_hd]}; sequence 2048 x 8 heads (Llama-3-8B's key/value heads)",
        )
_PAD = "padding mask (last quarter of the keys of the second sequence masked), transformers' form"
_attention_rows.update(
    {
        "bool_mask": (_attn_ci(mask="bool"), _attn_full(mask="bool", batch=2), _PAD),
        "bool_mask-causal": (
            _attn_ci(mask="bool", causal=True),
            _attn_full(mask="bool", causal=True, batch=2),
            "causal and padding folded into one bool mask (transformers' sdpa path)",
        ),
        "float_mask": (
            _attn_ci(mask="float"),
            _attn_full(mask="float", batch=2),
            "additive float mask: a relative-position bias plus -inf padding (pytorch#147460: "
            "memory-efficient backend wrong with a custom float mask)",
        ),
        "float_mask-causal": (
            _attn_ci(mask="float", causal=True),
            _attn_full(mask="float", causal=True, batch=2),
            "additive float mask with the causal part folded in",
        ),
        "gqa4": (
            _attn_ci(heads=8, kv_heads=2, gqa="enable_gqa", causal=True),
            _attn_full(heads=32, kv_heads=8, gqa="enable_gqa", causal=True),
            "Llama-3-8B: 32 query heads over 8 key/value heads, enable_gqa",
        ),
        "gqa4-repeat": (
            _attn_ci(heads=8, kv_heads=2, gqa="repeat", causal=True),
            _attn_full(heads=32, kv_heads=8, gqa="repeat", causal=True),
            "Llama-3-8B GQA with k/v repeated to 32 heads (transformers' repeat_kv)",
        ),
        "gqa7": (
            _attn_ci(heads=7, kv_heads=1, gqa="enable_gqa", causal=True),
            _attn_full(heads=28, kv_heads=4, gqa="enable_gqa", causal=True),
            "Qwen2.5-7B: 28 query heads over 4 key/value heads (ratio 7, not a power of 2)",
        ),
        "transposed": (
            _attn_ci(layout="transposed", causal=True),
            _attn_full(layout="transposed", causal=True),
            "q/k/v as (B, S, H, D).transpose(1, 2) views: what every transformers model passes",
        ),
        "sliced": (
            _attn_ci(layout="sliced", causal=True),
            _attn_full(layout="sliced", causal=True),
            "q/k/v split from one fused qkv projection (GPT-2, Phi, Falcon): strided views",
        ),
        "v_transposed": (
            _attn_ci(layout="v_transposed"),
            _attn_full(layout="v_transposed"),
            "only the value non-contiguous (ROCm/pytorch#3230: wrong on MI300X)",
        ),
        "decode": (
            _attn_ci(seq_q=1, heads=8, kv_heads=2, gqa="enable_gqa"),
            _attn_full(seq_q=1, seq_k=4096, heads=32, kv_heads=8, gqa="enable_gqa"),
            "one new token against a 4096-token key/value cache, Llama-3-8B heads (generation)",
        ),
        # full only: the long sequences and SDXL's attention
        "llama3_8b_s2048": (
            None,
            _attn_full(heads=32, kv_heads=8, gqa="enable_gqa", causal=True, layout="transposed"),
            "Llama-3-8B prefill: 32/8 heads, head_dim 128, sequence 2048, causal, (B,S,H,D) views",
        ),
        "llama3_8b_s8192": (
            None,
            _attn_full(heads=4, kv_heads=1, seq_q=8192, seq_k=8192, gqa="enable_gqa", causal=True),
            "Llama-3-8B at its 8192 context: one key/value group (4 query heads over 1) so the math "
            "backend's 8192x8192 matrices fit in 16 GiB",
        ),
        "qwen25_7b_s4096": (
            None,
            _attn_full(heads=7, kv_heads=1, seq_q=4096, seq_k=4096, gqa="enable_gqa", causal=True),
            "Qwen2.5-7B at sequence 4096: one key/value group (7 query heads over 1)",
        ),
        "sdxl_64x64": (
            None,
            _attn_full(64, batch=2, heads=10, kv_heads=10, seq_q=4096, seq_k=4096),
            "SDXL UNet self-attention at 1024 px, second block: 64x64 = 4096 tokens, 640 channels "
            "= 10 heads of 64, batch 2 (classifier-free guidance)",
        ),
    }
)
ATTENTION = _table(_attention_rows)


# -- GEMM --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Gemm:
    m: int
    n: int
    k: int
    #: 0: a 2-d mm; else the batch of a bmm
    batch: int = 0
    #: contiguous | a_transposed | b_transposed (a linear's weight) | both_transposed | a_sliced (row
    #: stride > k: a slice of a wider buffer) | a_step2 (every other column) | a_offset (storage
    #: offset, a view starting one row in) | batch_strided (bmm over (B, S, H, D) permuted views)
    layout: str = "contiguous"
    #: mm | bmm | linear_bias (addmm) | matmul (a 3-d activation times a 2-d weight)
    op: str = "mm"
    #: False: forward only (the lm_head: its float64 gradient would not fit)
    grad: bool = True


_g = Gemm  # short name for the table below


GEMM = _table(
    {
        # long accumulations: fp16/bf16 must accumulate in fp32
        "k4096": (_g(16, 16, 4096), _g(2048, 4096, 4096), "Llama-3-8B q_proj / o_proj: 2048 tokens x 4096 x 4096"),
        "k14336": (_g(8, 8, 14336), _g(2048, 4096, 14336), "Llama-3-8B down_proj: K = intermediate 14336"),
        "k18944": (_g(8, 8, 18944), _g(1024, 3584, 18944), "Qwen2.5-7B down_proj: K = intermediate 18944"),
        # sizes that are not multiples of the kernels' tiles / vector widths
        "unaligned_odd": (
            _g(7, 13, 29),
            _g(2047, 1031, 4099),
            "odd M/N/K (an arbitrary prompt length of 2047 tokens; N, K odd near real widths)",
        ),
        "unaligned_8": (_g(24, 40, 56), _g(2040, 4104, 1000), "multiples of 8, not of 16"),
        "unaligned_16": (_g(48, 80, 112), _g(2032, 3568, 1072), "multiples of 16, not of 64"),
        "decode_m1": (_g(1, 16, 64), _g(1, 14336, 4096), "one token (decode, a GEMV): Llama-3-8B up_proj"),
        # layouts: views the BLAS receives as transposes, leading dimensions and offsets; ci 16x24x40
        **{
            layout: (_g(16, 24, 40, layout=layout), _g(*full, layout=layout), source)
            for layout, full, source in (
                ("a_transposed", (4096, 4096, 2048), "x.T @ grad (a weight gradient) at Llama-3-8B width"),
                (
                    "b_transposed",
                    (2048, 14336, 4096),
                    "x @ W.T with W stored (out, in), as nn.Linear: Llama-3-8B gate_proj",
                ),
                ("both_transposed", (2048, 4096, 4096), "both operands transposed views at Llama-3-8B width"),
                (
                    "a_sliced",
                    (2048, 4096, 4096),
                    "the query slice of a fused qkv activation (row stride 3 x 4096), pytorch#140278",
                ),
                ("a_step2", (2048, 4096, 4096), "every other column of a buffer (inner stride 2)"),
                (
                    "a_offset",
                    (2048, 4096, 4096),
                    "a view starting one row into its storage (a storage offset), pytorch#140278",
                ),
            )
        },
        # batched
        "bmm": (
            _g(16, 24, 40, batch=4, op="bmm"),
            _g(2048, 2048, 128, batch=32, op="bmm"),
            "attention scores Q @ K.T of Llama-3-8B: 32 heads x 2048 x 2048, K = head_dim 128",
        ),
        "bmm_strided": (
            _g(16, 24, 40, batch=4, op="bmm", layout="batch_strided"),
            _g(2048, 128, 2048, batch=32, op="bmm", layout="batch_strided"),
            "P @ V over (B, S, H, D) permuted views: Llama-3-8B, 32 heads, sequence 2048",
        ),
        "matmul_3d": (
            _g(40, 24, 64, batch=2, op="matmul"),
            _g(2048, 1024, 4096, batch=2, op="matmul"),
            "(B, S, K) @ (K, N) folded into one mm: Llama-3-8B k_proj (4096 -> 8 x 128), batch 2",
        ),
        "linear_bias": (
            _g(16, 24, 40, op="linear_bias"),
            _g(2048, 3584, 3584, op="linear_bias"),
            "Qwen2.5-7B q_proj: 3584 -> 3584 with bias (addmm)",
        ),
        "llama3_8b_lm_head": (
            None,
            _g(512, 128256, 4096, layout="b_transposed", grad=False),
            "Llama-3-8B lm_head: 512 tokens x vocabulary 128256, forward only (memory)",
        ),
    }
)

#: the layouts TunableOp is checked on (pytorch#140278: wrong results / crashes on views)
VIEW_LAYOUTS = ("a_transposed", "b_transposed", "a_sliced", "a_step2", "a_offset", "bmm_strided")
GEMM_VIEWS = {key: value for key, value in GEMM.items() if key in VIEW_LAYOUTS}


# -- convolution -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Conv:
    batch: int
    in_ch: int
    out_ch: int
    size: int
    kernel: int
    stride: int = 1
    channels_last: bool = False


_conv_rows: dict[str, tuple[Any, Any, str]] = {}
for _layout in ("contiguous", "channels_last"):
    for _batch in (1, 8):
        _cl = _layout == "channels_last"
        for _name, _ci, _full, _src in (
            ("k3", (8, 16, 12, 3, 1), (320, 320, 128, 3, 1), "SDXL down_blocks.0 resnet conv: 320 ch at 128x128"),
            (
                "k1",
                (8, 16, 12, 1, 1),
                (320, 640, 64, 1, 1),
                "SDXL down_blocks.1 conv_shortcut (1x1): 320 -> 640 at 64x64",
            ),
            (
                "k3s2",
                (8, 8, 12, 3, 2),
                (320, 320, 128, 3, 2),
                "SDXL down_blocks.0 downsampler: 3x3 stride 2 at 128x128",
            ),
            ("k3_640", None, (640, 640, 64, 3, 1), "SDXL down_blocks.1 resnet conv: 640 ch at 64x64"),
            ("k3_1280", None, (1280, 1280, 32, 3, 1), "SDXL down_blocks.2 resnet conv: 1280 ch at 32x32"),
            ("conv_in", None, (4, 320, 128, 3, 1), "SDXL conv_in: 4 latent channels -> 320 at 128x128"),
            ("k3_320_64", None, (320, 320, 64, 3, 1), "SD at 512 px: 320 ch at a 64x64 latent"),
        ):
            _conv_rows[f"{_name}-{_layout}-b{_batch}"] = (
                Conv(_batch, *_ci, channels_last=_cl) if _ci else None,
                Conv(_batch, *_full, channels_last=_cl),
                f"{_src}, batch {_batch}, {_layout}",
            )
CONV = _table(_conv_rows)


# -- norms -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Norm:
    kind: str  # layer_norm | rms_norm | group_norm
    rows: int  # tokens (layer/rms) or batch (group)
    features: int  # normalized size (layer/rms) or channels (group)
    groups: int = 0
    spatial: int = 0  # H = W (group norm)

    @property
    def per_group(self) -> int:
        """Elements one normalization reduces over."""
        if self.kind == "group_norm":
            return self.features // self.groups * self.spatial * self.spatial
        return self.features


_norm_rows: dict[str, tuple[Any, Any, str]] = {}
for _kind in ("layer_norm", "rms_norm"):
    for _f, _src in (
        (4096, "Llama-3-8B hidden 4096 (RMSNorm) / GPT-J-6B (LayerNorm)"),
        (3584, "Qwen2.5-7B hidden 3584 (not a power of 2)"),
        (8192, "Llama-3-70B hidden 8192 (RMSNorm) / Falcon-40B (LayerNorm)"),
    ):
        _norm_rows[f"{_kind}-f{_f}"] = (Norm(_kind, 4, _f), Norm(_kind, 2048, _f), f"{_src}, 2048 tokens")
_norm_rows.update(
    {
        "group_norm-g4096": (
            Norm("group_norm", 2, 32, 8, 32),
            Norm("group_norm", 2, 320, 32, 128),
            "SDXL GroupNorm(32, 320) at 128x128 (163840 per group), batch 2",
        ),
        "group_norm-g8192": (
            Norm("group_norm", 2, 64, 8, 32),
            Norm("group_norm", 2, 1280, 32, 32),
            "SDXL GroupNorm(32, 1280) at 32x32 (40960 per group), batch 2",
        ),
    }
)
NORM = _table(_norm_rows)


# -- softmax / log_softmax rows ----------------------------------------------------------------
@dataclass(frozen=True)
class Rows:
    rows: int
    cols: int


SOFTMAX = _table(
    {
        f"{op}-r{n}": (Rows(4, n), Rows(rows, n), src)
        for op in ("softmax", "log_softmax")
        for n, rows, src in (
            (1024, 4096, "attention probabilities of one head at sequence 1024 (4096 query rows)"),
            (4096, 4096, "attention probabilities of one head at sequence 4096"),
            (8192, 2048, "Llama-3-8B at its 8192 context: 2048 query rows of one head"),
        )
    }
    | {
        "log_softmax-vocab": (
            Rows(2, 65537),
            Rows(512, 128256),
            "cross-entropy over the Llama-3-8B vocabulary (128256), 512 tokens",
        ),
        "softmax-vocab": (
            Rows(2, 65537),
            Rows(256, 152064),
            "sampling probabilities over the Qwen2.5-7B vocabulary (152064), 256 rows",
        ),
    }
)


# -- long reductions, cumsum -------------------------------------------------------------------
@dataclass(frozen=True)
class Reduction:
    op: str  # sum | mean | var | norm | amax | cumsum
    shape: tuple[int, ...]
    dim: int | None = None  # None: over everything
    #: False: forward only. The gradient of a mean / variance over 2^24 elements is ~1/2^24 per
    #: element: below fp16's normal range and under parity's atol, so it would prove nothing (and
    #: it is an elementwise expand, not a long reduction)
    grad: bool = True

    @property
    def length(self) -> int:
        """Elements one output reduces over."""
        return self.numel if self.dim is None else self.shape[self.dim]

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


_P16, _P24 = 1 << 16, 1 << 24
REDUCTION = _table(
    {
        # the whole tensor, 2^16 + 1 (a tail past a power of 2) and 2^24 elements
        **{
            f"{op}-all_2p16": (
                Reduction(op, (_P16 + 1,)),
                Reduction(op, (_P24 + 1,), grad=op not in ("mean", "var")),
                "2^24 + 1 elements: a 4096 x 4096 weight's norm (gradient clipping), plus a tail",
            )
            for op in ("sum", "mean", "var", "norm", "amax")
        },
        **{
            f"{op}-all_2p24": (
                None,
                Reduction(op, (_P24,)),
                "2^24 elements (a 4096 x 4096 weight), power of 2",
            )
            for op in ("sum", "norm")
        },
        # reductions along an axis: rows (inner, contiguous) and columns (outer, strided)
        "sum-rows_2p16": (
            Reduction("sum", (4, _P16), -1),
            Reduction("sum", (64, 128256), -1),
            "a sum over the Llama-3-8B vocabulary (128256) per token, 64 tokens",
        ),
        "sum-cols_2p16": (
            Reduction("sum", (_P16, 4), 0),
            Reduction("sum", (8192, 4096), 0),
            "a bias gradient: 8192 tokens summed per Llama-3-8B feature (strided reduction)",
        ),
        "mean-cols_2p16": (
            Reduction("mean", (_P16, 4), 0),
            Reduction("mean", (8192, 4096), 0),
            "mean over 8192 tokens per feature (strided reduction)",
        ),
        # scans over long rows
        "cumsum-row4096": (
            Reduction("cumsum", (4, 4096), -1),
            Reduction("cumsum", (8, 8192), -1),
            "position ids from an attention mask: cumsum over 8192 tokens, batch 8",
        ),
        "cumsum-row65537": (
            Reduction("cumsum", (2, _P16 + 1), -1),
            Reduction("cumsum", (16, 128256), -1),
            "top-p sampling: cumsum of sorted probabilities over the Llama-3-8B vocabulary, 16 rows",
        ),
    }
)


# -- embedding ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Embedding:
    vocab: int
    dim: int
    tokens: int


EMBEDDING = _table(
    {
        "vocab65537": (
            Embedding(65537, 16, 64),
            Embedding(65537, 1024, 4096),
            "vocabulary past 2^16 (an index that does not fit 16 bits), int64 indices",
        ),
        "llama3_8b_vocab": (
            None,
            Embedding(128256, 1024, 4096),
            "Llama-3-8B vocabulary 128256, 2 x 2048 tokens; width 1024 of 4096 (memory)",
        ),
        "qwen25_7b_vocab": (
            None,
            Embedding(152064, 1024, 4096),
            "Qwen2.5-7B vocabulary 152064, 2 x 2048 tokens; width 1024 of 3584 (memory)",
        ),
    }
)
