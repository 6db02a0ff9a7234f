"""Real attention shapes: one decoder layer at 7B width, and a tiny-depth Llama with head_dim 128.

The toy Llama of test_tiny_llama.py has head_dim 16; the kernels a GPU library picks for head_dim
128 with 4 query heads per key/value head (what Llama-3-8B runs) are different ones. Rows:

* ``models/<model>-layer/forward-backward[<dtype>]``: one transformers decoder layer (Llama-3-8B's,
  Qwen2.5-7B's; widths.py cites the configs) with seeded weights, its output and every gradient
  (input and weights) against the float64 CPU reference. ``full``: the real width (hidden 4096,
  32/8 heads of 128, intermediate 14336 for Llama-3-8B: ~0.9 GiB of float32 weights); ``ci``: the
  same head_dim and GQA ratio with one key/value head (hidden 512 / 896).
* ``models/llama-hd128/<check>[<dtype>]`` and ``models/llama-hd128-lora/train[bfloat16]``: the
  generation, KV-cache and LoRA checks of the toy Llama on its ``hd128`` variant (tiny.VARIANTS):
  2 layers, hidden 512, 4 heads of 128 over 1 key/value head.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_rocm import INFO_PROPERTY, PARITY_PROPERTY, not_installed_reason

torch = pytest.importorskip("torch", reason=not_installed_reason("torch"))

from . import tiny  # noqa: E402
from .rows import row, rows  # noqa: E402
from .widths import WIDTHS, Width  # noqa: E402

pytestmark = pytest.mark.rocm_requires("transformers")

LAYER_DTYPES = ("float32", "bfloat16")
#: tokens through the layer: ci 64; full 512 on a GPU, 128 on the CPU (the float64 reference of a
#: 7B-width layer costs ~1 GFLOP per token there)
SEQUENCE = {"ci": 32, "full": {"gpu": 512, "cpu": 128}}
#: the layer's output and gradients against float64, per dtype: parity's elementwise rtol/atol plus
#: this normwise slack (x rms of each tensor). Measured on the CPU at ci width (32 tokens): float32
#: worst normwise 1.1e-6; bfloat16 1.4e-2 (a q_proj bias gradient), and single elements of the weight
#: gradients (sums over tokens of bf16-rounded activations) up to ~0.1 rms off, hence 0.15 (the toy
#: Llama's bf16 forward bound). At full width (128 tokens): float32 2.0e-6, bfloat16 1.8e-2 (peak RSS
#: of the four full rows on the CPU: 10.0 GB). float32 stays far below TF32's ~1e-3; a head-layout
#: bug is off by ~1.
LAYER_NORMWISE = {"float32": 2e-5, "bfloat16": 0.15}
WEIGHT_STD = 0.02  # the configs' initializer_range

VARIANT = "hd128"
HD_WORKLOAD = "llama-hd128"
#: as for the toy Llama (test_tiny_llama.py's bounds, re-measured on hd128 on the CPU: fp32 3.6e-7,
#: fp16 9.6e-4, bf16 7.4e-3 normwise)
FORWARD_NORMWISE = {"float32": 2e-5, "float16": 3e-2, "bfloat16": 0.15}


# --- one decoder layer at real width ---------------------------------------------------------------
def _layer_class(width: Width) -> Any:
    if width.architecture == "qwen2":
        from transformers.models.qwen2.modeling_qwen2 import Qwen2DecoderLayer

        return Qwen2DecoderLayer
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer

    return LlamaDecoderLayer


def _rotary_class(width: Width) -> Any:
    if width.architecture == "qwen2":
        from transformers.models.qwen2.modeling_qwen2 import Qwen2RotaryEmbedding

        return Qwen2RotaryEmbedding
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    return LlamaRotaryEmbedding


def _seeded_params(layer: torch.nn.Module) -> dict[str, torch.Tensor]:
    """float32 weights, exact in bfloat16 (so the bf16 run is judged on its arithmetic, not on the
    rounding of its weights): projections ~N(0, 0.02), norm weights ~1, biases small."""
    gen = torch.Generator().manual_seed(tiny.SEED)
    params = {}
    for name, p in layer.named_parameters():
        values = torch.randn(p.shape, generator=gen)
        if name.endswith("layernorm.weight"):
            values = 1 + 0.1 * values
        elif name.endswith("bias"):
            values = 0.02 * values
        else:
            values = WEIGHT_STD * values
        params[name] = values.to(torch.bfloat16).float()
    return params


def _layer_rows() -> list:
    return [
        pytest.param(
            width,
            dtype,
            id=f"{width.name}-{dtype}",
            marks=pytest.mark.rocm_feature(row(f"{width.name}-layer", "forward-backward", dtype)),
        )
        for width in WIDTHS
        for dtype in LAYER_DTYPES
    ]


@pytest.mark.parametrize(("width", "dtype"), _layer_rows())
def test_decoder_layer(width: Width, dtype: str, rocm_device, rocm_scale: str, parity, record_property) -> None:
    """Forward and backward of one decoder layer against float64: output, input and weight gradients."""
    shape = width if rocm_scale == "full" else width.reduced(kv_heads=1)
    on = "gpu" if rocm_device.type == "cuda" else "cpu"
    tokens = SEQUENCE["ci"] if rocm_scale == "ci" else SEQUENCE["full"][on]
    config = shape.config()
    with torch.device("meta"):  # the module only gives structure: the weights are the parity inputs
        layer = _layer_class(width)(config, layer_idx=0)
    rotary = _rotary_class(width)(config)  # float32 inverse frequencies, as in the model
    params = _seeded_params(layer)
    gen = torch.Generator().manual_seed(tiny.SEED + 1)
    hidden = torch.randn(1, tokens, shape.hidden, generator=gen).to(torch.bfloat16).float()
    positions = torch.arange(tokens).unsqueeze(0)  # integer: parity neither casts it nor asks its gradient
    record_property(
        INFO_PROPERTY, {"width": shape.facts(), "real_width": width.facts(), "tokens": tokens, "scale": rocm_scale}
    )

    def decoder_layer(x: torch.Tensor, weights: dict, position_ids: torch.Tensor) -> torch.Tensor:
        # the model computes the rotary cos/sin once per forward, in float32, then casts to x's dtype
        cos, sin = rotary.to(x.device)(x, position_ids)
        kwargs = {"position_embeddings": (cos, sin), "attention_mask": None}
        return torch.func.functional_call(layer, weights, (x,), kwargs)

    parity(
        decoder_layer,
        hidden,
        params,
        positions,
        dtypes=(dtype,),
        grad=True,
        tolerances={dtype: {"normwise": LAYER_NORMWISE[dtype]}},
        name=f"{width.name}-layer",
    )


# --- the toy Llama with real head_dim and GQA ratio -------------------------------------------------
def _sequence(device: torch.device) -> torch.Tensor:
    return torch.tensor([tiny.PROMPT + tiny.reference_tokens(VARIANT)], dtype=torch.long, device=device)


@pytest.mark.parametrize("dtype", rows(HD_WORKLOAD, "forward", tiny.DTYPES))
def test_hd128_forward(dtype: str, parity) -> None:
    """Logits against the fp64 CPU reference, head_dim 128 over a 4:1 GQA."""
    with torch.no_grad():
        embeds = tiny.llama(variant=VARIANT).get_input_embeddings()(_sequence(torch.device("cpu")))

    @torch.no_grad()
    def logits(inputs_embeds: torch.Tensor) -> torch.Tensor:
        name = str(inputs_embeds.dtype).removeprefix("torch.")
        model = tiny.llama(inputs_embeds.device, name, variant=VARIANT)
        return model(inputs_embeds=inputs_embeds, use_cache=False).logits

    parity(logits, embeds, dtypes=(dtype,), tolerances={dtype: {"normwise": FORWARD_NORMWISE[dtype]}}, name="logits")


@pytest.mark.parametrize("dtype", rows(HD_WORKLOAD, "generate", ("float32", "bfloat16")))
def test_hd128_generate(dtype: str, rocm_device, record_property) -> None:
    """Greedy decoding through transformers' generate and the KV cache: fp32 exact, fp16/bf16 top-k."""
    reference = tiny.reference_tokens(VARIANT)
    model = tiny.llama(rocm_device, dtype, variant=VARIANT)
    if dtype == "float32":
        tokens = tiny.greedy(model)
        record_property(INFO_PROPERTY, {"tokens": tokens, "reference_tokens": list(reference)})
        assert tokens == list(reference), f"fp32 greedy tokens differ from the CPU's: {tokens} != {list(reference)}"
        return
    ranks = tiny.ranks_of(tiny.teacher_forced_logits(model, reference, use_cache=True), reference)
    record_property(INFO_PROPERTY, {"reference_token_ranks": ranks, "top_k": tiny.TOP_K})
    missed = [(step, rank) for step, rank in enumerate(ranks) if rank >= tiny.TOP_K]
    assert not missed, f"{dtype}: the reference token fell out of the top {tiny.TOP_K} at (step, rank) {missed}"


@pytest.mark.parametrize("dtype", rows(HD_WORKLOAD, "kv-cache", ("bfloat16",)))
def test_hd128_kv_cache(dtype: str, rocm_device, record_property) -> None:
    """Decoding against the KV cache (head_dim 128, one key/value head) agrees with recomputing."""
    reference = tiny.reference_tokens(VARIANT)
    model = tiny.llama(rocm_device, dtype, variant=VARIANT)
    cached = tiny.teacher_forced_logits(model, reference, use_cache=True)
    uncached = tiny.teacher_forced_logits(model, reference, use_cache=False)
    error, bound = tiny.normwise_error(cached, uncached), 4e-2  # test_tiny_llama.py's bf16 bound
    record_property(PARITY_PROPERTY, [tiny.record(dtype, "cached-vs-uncached-logits", error, bound)])
    assert error <= bound, f"{dtype}: logits with the KV cache differ from without: normwise {error:.3g}"


@pytest.mark.rocm_requires("peft")
@pytest.mark.parametrize(
    "dtype",
    [
        pytest.param(
            "bfloat16", id="bfloat16", marks=pytest.mark.rocm_feature(row("llama-hd128-lora", "train", "bfloat16"))
        )
    ],
)
def test_hd128_adapter_training(dtype: str, rocm_device, record_property) -> None:
    """test_lora.py's LoRA fine-tune (r=8 on every projection, AdamW, 2 accumulated micro-batches) on
    the hd128 variant: the loss falls by the same margin."""
    from peft import get_peft_model

    from . import test_lora as lora

    tiny.seed_everything()
    model = get_peft_model(tiny.llama(rocm_device, dtype, variant=VARIANT).train(), lora._lora_config())
    data = lora._data(rocm_device)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lora.LEARNING_RATE)
    losses = []
    for _ in range(STEPS):
        optimizer.zero_grad(set_to_none=True)
        losses.append(lora._accumulated_step(model, data))
        optimizer.step()
    first, last = losses[0], sum(losses[-3:]) / 3
    record_property(INFO_PROPERTY, {"losses": [round(x, 4) for x in losses], "loss_ratio": last / first})
    assert all(map(torch.isfinite, map(torch.tensor, losses))), f"non-finite loss: {losses}"
    assert last <= lora.LOSS_RATIO * first, f"LoRA loss fell from {first:.3f} to {last:.3f} only: {losses}"


#: optimizer steps for the hd128 LoRA row: the toy's 24 cost ~6x more at this width on a CPU, where
#: the loss falls 6.07 -> 4.46 -> 1.71 -> 0.45 -> 0.18 (the last 3 steps' mean: 0.13 of the first,
#: against the bound of test_lora.LOSS_RATIO = 0.5)
STEPS = 5
