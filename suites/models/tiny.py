"""Toy-size models for the model suite: built from configs with seeded random weights, never downloaded.

Two workloads stand in for what users run:

* a Llama-style causal LM (transformers' ``LlamaConfig``: 2 layers, hidden 64, 4 query heads over
  2 key/value heads so grouped-query attention is exercised, vocabulary 256). ``initializer_range``
  is raised from the default 0.02 to 0.1 so that attention dominates the logits: zeroing the
  attention output moves the logits by more than their own norm, and the greedy tokens change at
  almost every step. A model whose logits did not depend on attention could not catch a broken
  attention kernel.
* a small CNN (conv, batch norm, ReLU, max and average pooling, linear head) for mixed-precision
  training.

The fp64 CPU copy of each model is the reference; devices get deep copies cast to the dtype under
test, so every test sees identical starting weights.
"""

from __future__ import annotations

import copy
import functools
import inspect
import random
from typing import TYPE_CHECKING, Any

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from pytest_rocm import DEFAULT_DTYPES, PARITY_PROPERTY

if TYPE_CHECKING:
    from transformers import LlamaForCausalLM

SEED = 0
VOCAB = 256
#: fixed prompt (token ids) for generation; the length is arbitrary, the ids avoid special tokens
PROMPT: tuple[int, ...] = (5, 17, 42, 99, 7, 200, 3, 58)
NEW_TOKENS = 16
#: low-precision generation passes when the reference token is among the device's TOP_K most likely
#: tokens at every step (vLLM judges low-precision generations by this kind of top-k containment)
TOP_K = 5

DTYPES = DEFAULT_DTYPES


def seed_everything(seed: int = SEED) -> None:
    random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA/HIP device
    try:
        import numpy

        numpy.random.seed(seed)
    except ImportError:  # numpy is optional for the suite
        pass


def dtype_of(name: str) -> torch.dtype:
    return {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "float64": torch.float64}[
        name
    ]


# --- tiny Llama -------------------------------------------------------------------------------


#: Llama variants: ``tiny`` (the module docstring's toy) and ``hd128``, the attention shapes of real models at
#: toy width: head_dim 128 and 4 query heads per key/value head (Llama-3-8B's 32/8, widths.py), hidden 512,
#: intermediate 3.5x hidden (Llama-3-8B's 14336/4096), rope_theta 500000 (Llama-3's). Its
#: initializer_range 0.05 keeps greedy decoding varied (14 distinct tokens in 16) with a smallest
#: top-1/top-2 logit gap of 6.9e-3 of the largest logit; zeroing attention moves the logits by 1.4x
#: their norm (measured on the CPU in float64).
VARIANTS: dict[str, dict[str, Any]] = {
    "tiny": {},
    "hd128": {
        "hidden_size": 512,
        "intermediate_size": 1792,
        "num_attention_heads": 4,
        "num_key_value_heads": 1,
        "rope_theta": 500000.0,
        "initializer_range": 0.05,
    },
}


def llama_config(variant: str = "tiny") -> Any:
    from transformers import LlamaConfig

    settings: dict[str, Any] = {
        "vocab_size": VOCAB,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,  # GQA: each key/value head serves two query heads
        "max_position_embeddings": 128,
        "initializer_range": 0.1,  # see the module docstring: attention must matter
        "tie_word_embeddings": False,
        "attn_implementation": "sdpa",  # what users get by default on every backend
    }
    return LlamaConfig(**{**settings, **VARIANTS[variant]})


@functools.cache
def _reference_llama(variant: str = "tiny") -> LlamaForCausalLM:
    from transformers import LlamaForCausalLM

    seed_everything()
    model = LlamaForCausalLM(llama_config(variant))
    return model.to(torch.float64).eval()


def llama(device: torch.device | str = "cpu", dtype: str = "float64", variant: str = "tiny") -> LlamaForCausalLM:
    """A fresh copy of the seeded Llama ``variant`` on ``device`` in ``dtype``, in eval mode."""
    return copy.deepcopy(_reference_llama(variant)).to(device=device, dtype=dtype_of(dtype)).eval()


def prompt_ids(device: torch.device | str = "cpu") -> torch.Tensor:
    return torch.tensor([PROMPT], dtype=torch.long, device=device)


@torch.no_grad()
def greedy(model: LlamaForCausalLM, new_tokens: int = NEW_TOKENS, use_cache: bool = True) -> list[int]:
    """Greedy decoding of PROMPT through transformers' own generation loop; exactly ``new_tokens`` ids."""
    device = next(model.parameters()).device
    out = model.generate(
        prompt_ids(device),
        attention_mask=torch.ones(1, len(PROMPT), dtype=torch.long, device=device),
        do_sample=False,
        max_new_tokens=new_tokens,
        min_new_tokens=new_tokens,  # random weights may emit EOS; the length must not depend on it
        use_cache=use_cache,
        pad_token_id=0,
    )
    return out[0, len(PROMPT) :].tolist()


@functools.cache
def reference_tokens(variant: str = "tiny") -> tuple[int, ...]:
    """The CPU float64 greedy continuation of PROMPT: the tokens every device is judged against."""
    return tuple(greedy(_reference_llama(variant)))


@torch.no_grad()
def teacher_forced_logits(model: LlamaForCausalLM, tokens: tuple[int, ...], use_cache: bool) -> torch.Tensor:
    """Logits (float64, on the CPU) that predict each of ``tokens`` after PROMPT, one row per step.

    The model always sees the reference tokens (teacher forcing), so one early divergence in low
    precision cannot cascade into a different continuation. With ``use_cache`` the prompt is
    prefilled and each token decoded against the KV cache, the path generation takes; without it,
    one forward pass over the whole sequence.
    """
    device = next(model.parameters()).device
    sequence = torch.tensor([PROMPT + tuple(tokens)], dtype=torch.long, device=device)
    steps = len(tokens)
    if not use_cache:
        logits = model(sequence, use_cache=False).logits[0, len(PROMPT) - 1 : len(PROMPT) - 1 + steps]
        return logits.double().cpu()
    out = model(sequence[:, : len(PROMPT)], use_cache=True)
    rows = [out.logits[0, -1]]
    for i in range(len(PROMPT), len(PROMPT) + steps - 1):
        out = model(sequence[:, i : i + 1], use_cache=True, **{_cache_argument(model): _cache_of(out)})
        rows.append(out.logits[0, -1])
    return torch.stack(rows).double().cpu()


def _cache_argument(model: LlamaForCausalLM) -> str:
    """transformers 5 renamed ``past_key_values`` to ``cache``; support both generations."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def _cache_of(output: Any) -> Any:
    cache = output.get("cache") if hasattr(output, "get") else None
    return cache if cache is not None else output.past_key_values


def enable_checkpointing(model: LlamaForCausalLM) -> None:
    """transformers' activation checkpointing (named gradient checkpointing before version 5)."""
    kwargs = {"use_reentrant": False}
    if hasattr(model, "activation_checkpointing_enable"):
        model.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)


def ranks_of(logits: torch.Tensor, tokens: tuple[int, ...]) -> list[int]:
    """Per step, how many tokens the logits rank strictly above the given one (0 = it is the argmax)."""
    target = torch.tensor(tokens, dtype=torch.long).unsqueeze(1)
    return (logits > logits.gather(1, target)).sum(dim=1).tolist()


def reference_margins(variant: str = "tiny") -> torch.Tensor:
    """Gap between the best and second-best reference logit at each greedy step (fp64, CPU).

    Exact token equality in fp32 is only a fair demand when these gaps dwarf fp32 rounding; the
    plugin's tests check that they do for the seeded model.
    """
    logits = teacher_forced_logits(_reference_llama(variant), reference_tokens(variant), use_cache=True)
    top2 = logits.topk(2, dim=1).values
    return (top2[:, 0] - top2[:, 1]) / logits.abs().max()


# --- small CNN ------------------------------------------------------------------------------


class SmallCNN(nn.Module):
    """conv-BN-ReLU-maxpool, conv-BN-ReLU-avgpool, linear: the layers autocast treats differently."""

    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.block1 = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2)
        )
        self.block2 = nn.Sequential(
            nn.Conv2d(16, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(), nn.AdaptiveAvgPool2d(1)
        )
        self.head = nn.Linear(32, classes)
        #: recompute each block in backward instead of storing its activations
        self.checkpointing = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in (self.block1, self.block2):
            x = checkpoint(block, x, use_reentrant=False) if self.checkpointing else block(x)
        return self.head(x.flatten(1))


@functools.lru_cache(maxsize=1)
def _reference_cnn() -> SmallCNN:
    seed_everything()
    return SmallCNN()


def cnn(device: torch.device | str = "cpu") -> SmallCNN:
    """A fresh float32 copy of the seeded CNN, in training mode (batch norm uses batch statistics)."""
    return copy.deepcopy(_reference_cnn()).to(device).train()


def cnn_batch(device: torch.device | str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """A fixed synthetic batch: 32 random 3x16x16 images with random labels."""
    gen = torch.Generator().manual_seed(SEED + 2)
    images = torch.randn(32, 3, 16, 16, generator=gen)
    labels = torch.randint(0, 10, (32,), generator=gen)
    return images.to(device), labels.to(device)


# --- judging --------------------------------------------------------------------------------


def normwise_error(value: torch.Tensor, reference: torch.Tensor) -> float:
    """‖value − reference‖ / ‖reference‖ in float64: stays meaningful for long reductions."""
    value = value.detach().double().cpu()
    reference = reference.detach().double().cpu()
    return float((value - reference).norm() / reference.norm().clamp_min(1e-300))


def flat(tensors: Any) -> torch.Tensor:
    """All tensors (parameters, gradients) concatenated into one float64 CPU vector."""
    return torch.cat([t.detach().double().cpu().flatten() for t in tensors])


def record(dtype: str, name: str, normwise: float, bound: float, **more: Any) -> dict[str, Any]:
    """A parity record in the report's schema, for comparisons the ``parity`` fixture does not make
    (device against itself: KV cache, compile, merged adapters, autocast training)."""
    return {
        "dtype": dtype,
        "name": name,
        "normwise": normwise,
        "ok": normwise <= bound,
        "max_abs": more.pop("max_abs", None),
        "max_rel": more.pop("max_rel", None),
        "rtol": None,
        "atol": None,
        "normwise_bound": bound,
        "mode": "self",
        **more,
    }


#: checkpointing recomputes the same float32 operations: only summation order may differ
CHECKPOINT_NORMWISE = 1e-6


def check_recomputed_gradients(gradients: Any, dtype: str, record_property: Any, block: str) -> None:
    """Gradients with checkpointing equal those with stored activations.

    ``gradients(checkpointing)`` returns (flat gradients, forward calls of the checkpointed
    ``block``); the calls prove the block really ran twice, so the check cannot pass with
    checkpointing silently off.
    """
    plain, plain_calls = gradients(False)
    recomputed, recomputed_calls = gradients(True)
    assert (plain_calls, recomputed_calls) == (1, 2), (
        f"checkpointing did not recompute the {block} (forward calls {plain_calls} -> {recomputed_calls})"
    )
    error = normwise_error(recomputed, plain)
    record_property(PARITY_PROPERTY, [record(dtype, "checkpointed-gradients", error, CHECKPOINT_NORMWISE)])
    assert error <= CHECKPOINT_NORMWISE, f"gradients with checkpointing differ: normwise {error:.3g}"


def two_device_max_memory() -> dict[Any, int]:
    """``max_memory`` for ``device_map="auto"`` that forces the tiny Llama across GPUs 0 and 1.

    accelerate fills device 0 first and the whole model fits on any GPU, so device 0 is capped
    below the weights' size (device 1 gets plenty, the CPU nothing). At 90% the cut falls between
    the two decoder layers (embeddings and layer 0 on GPU 0, the rest on GPU 1), so activations
    cross devices inside the decoder stack; at lower caps accelerate, which keeps room for the
    largest layer, moves everything but the embeddings to GPU 1.
    """
    weights = sum(p.numel() * 4 for p in _reference_llama().parameters())  # float32 bytes
    return {0: weights * 9 // 10, 1: weights * 4, "cpu": 0}
