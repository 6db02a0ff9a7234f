"""Tiny Llama inference: forward parity, greedy generation, KV cache, gradient checkpointing.

Rows: ``models/tiny-llama/<check>[<dtype>]``. The reference is always the same seeded model in
float64 on the CPU.
"""

from __future__ import annotations

import pytest

from pytest_rocm import INFO_PROPERTY, PARITY_PROPERTY, not_installed_reason

torch = pytest.importorskip("torch", reason=not_installed_reason("torch"))

from . import tiny  # noqa: E402  (after the torch check, which tiny needs)
from .rows import rows  # noqa: E402

WORKLOAD = "tiny-llama"
pytestmark = pytest.mark.rocm_requires("transformers")

#: logits against the fp64 CPU reference, judged by the parity engine: every logit within
#: rtol*|ref| + normwise*rms(logits) (the normwise term scales with the logits' typical size, so
#: it is what decides for a tensor of 6144 logits, most of them near 0). Measured on the CPU, as
#: (normwise relative error, worst logit error / rms): fp32 (4.5e-7, 1.9e-6), fp16 (1.3e-3,
#: 7.1e-3), bf16 (1.1e-2, 5.2e-2). The bounds leave ~3-10x headroom for other devices' kernels
#: while fp32 stays far below TF32's ~1e-3 (the point of the fp32 row). Scaling the attention
#: output by 1.1 gives (7.9e-2, 0.30) in bf16: caught.
FORWARD_NORMWISE = {"float32": 2e-5, "float16": 3e-2, "bfloat16": 0.15}
#: decoding against the KV cache versus one pass over the whole sequence, same device and dtype:
#: only the summation order differs (measured on the CPU: fp32 ~1e-7, fp16 ~5e-4, bf16 ~4e-3)
KV_CACHE_NORMWISE = {"float32": 1e-5, "float16": 1e-2, "bfloat16": 4e-2}
#: gradients with activation checkpointing against without: the recomputation is the same
#: arithmetic, so anything beyond rounding noise means the recomputed forward differs


def _sequence(device: torch.device) -> torch.Tensor:
    """PROMPT followed by the reference continuation: a realistic input of 24 tokens."""
    return torch.tensor([tiny.PROMPT + tiny.reference_tokens()], dtype=torch.long, device=device)


@pytest.mark.parametrize("dtype", rows(WORKLOAD, "forward", tiny.DTYPES))
def test_forward(dtype: str, parity) -> None:
    """Logits on the device against the fp64 CPU reference, judged normwise."""
    reference = tiny.llama()
    with torch.no_grad():
        # Embeddings are the floating input parity casts per dtype; the lookup itself is exact.
        embeds = reference.get_input_embeddings()(_sequence(torch.device("cpu")))

    @torch.no_grad()
    def logits(inputs_embeds: torch.Tensor) -> torch.Tensor:
        dtype_name = str(inputs_embeds.dtype).removeprefix("torch.")
        model = tiny.llama(inputs_embeds.device, dtype_name)
        return model(inputs_embeds=inputs_embeds, use_cache=False).logits

    parity(logits, embeds, dtypes=(dtype,), tolerances={dtype: {"normwise": FORWARD_NORMWISE[dtype]}}, name="logits")


@pytest.mark.parametrize("dtype", rows(WORKLOAD, "generate", tiny.DTYPES))
def test_generate(dtype: str, rocm_device: torch.device, record_property) -> None:
    """Greedy decoding of PROMPT. fp32 must reproduce the CPU tokens exactly; fp16/bf16 must rank
    the reference token among the top TOP_K at every step, teacher-forced through the KV cache."""
    reference = tiny.reference_tokens()
    model = tiny.llama(rocm_device, dtype)
    if dtype == "float32":
        tokens = tiny.greedy(model)
        record_property(INFO_PROPERTY, {"tokens": tokens, "reference_tokens": list(reference)})
        diverged = next((i for i, (a, b) in enumerate(zip(tokens, reference, strict=False)) if a != b), None)
        assert tokens == list(reference), (
            f"fp32 greedy tokens differ from the CPU's from step {diverged}: {tokens} != {list(reference)}"
        )
        return
    ranks = tiny.ranks_of(tiny.teacher_forced_logits(model, reference, use_cache=True), reference)
    record_property(INFO_PROPERTY, {"reference_token_ranks": ranks, "top_k": tiny.TOP_K})
    missed = [(step, rank) for step, rank in enumerate(ranks) if rank >= tiny.TOP_K]
    assert not missed, (
        f"{dtype}: the reference token fell out of the top {tiny.TOP_K} at (step, rank) {missed}; "
        f"ranks per step {ranks}"
    )


@pytest.mark.parametrize("dtype", rows(WORKLOAD, "kv-cache", tiny.DTYPES))
def test_kv_cache(dtype: str, rocm_device: torch.device, record_property) -> None:
    """Decoding with the KV cache agrees with recomputing the whole sequence (cache off)."""
    reference = tiny.reference_tokens()
    model = tiny.llama(rocm_device, dtype)
    cached = tiny.teacher_forced_logits(model, reference, use_cache=True)
    uncached = tiny.teacher_forced_logits(model, reference, use_cache=False)
    error = tiny.normwise_error(cached, uncached)
    bound = KV_CACHE_NORMWISE[dtype]
    record_property(PARITY_PROPERTY, [tiny.record(dtype, "cached-vs-uncached-logits", error, bound)])
    assert error <= bound, f"{dtype}: logits with the KV cache differ from without: normwise {error:.3g} > {bound:g}"
    if dtype == "float32":
        with_cache, without_cache = tiny.greedy(model, use_cache=True), tiny.greedy(model, use_cache=False)
        assert with_cache == without_cache, f"fp32 greedy tokens: cache on {with_cache} != cache off {without_cache}"


@pytest.mark.parametrize("dtype", rows(WORKLOAD, "checkpoint", ("float32",)))
def test_checkpoint(dtype: str, rocm_device: torch.device, record_property) -> None:
    """transformers' gradient checkpointing gives the same gradients as storing activations."""
    sequence = _sequence(rocm_device)

    def gradients(checkpointing: bool) -> tuple[torch.Tensor, int]:
        model = tiny.llama(rocm_device, dtype).train()
        if checkpointing:
            tiny.enable_checkpointing(model)
        calls = []
        # a pre-hook on the layer's first inner module: it runs again when backward recomputes the
        # layer (recomputation stops early once every saved tensor is back, so a forward hook on a
        # late module may never fire again)
        model.model.layers[0].self_attn.register_forward_pre_hook(lambda *_: calls.append(1))
        model(sequence, labels=sequence, use_cache=False).loss.backward()
        return tiny.flat(p.grad for p in model.parameters()), len(calls)

    tiny.check_recomputed_gradients(gradients, dtype, record_property, "layer")
