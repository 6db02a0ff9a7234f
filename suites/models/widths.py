"""Real model widths: the attention and MLP shapes of the models users run, each citing its config.

The ``full`` profile builds one decoder layer at these widths; ``ci`` keeps what decides which
kernels run (head_dim and the query-per-key/value-head ratio) and shrinks the rest
(:meth:`Width.reduced`: fewer heads, the same intermediate/hidden ratio). Values are copied from
each model's ``config.json`` on the Hugging Face hub (nothing is downloaded at run time).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any


@dataclass(frozen=True)
class Width:
    name: str  # row prefix: models/<name>-layer/...
    source: str  # the config the numbers come from
    architecture: str  # "llama" | "qwen2": which transformers decoder layer
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    rope_theta: float
    rms_norm_eps: float
    max_positions: int

    def __post_init__(self) -> None:
        if self.heads * self.head_dim != self.hidden or self.heads % self.kv_heads:
            raise ValueError(f"{self.name}: {self.heads} heads x {self.head_dim} != hidden {self.hidden}, or bad GQA")

    @property
    def gqa(self) -> int:
        """Query heads per key/value head."""
        return self.heads // self.kv_heads

    def reduced(self, kv_heads: int = 1) -> Width:
        """The same head_dim and GQA ratio with ``kv_heads`` key/value heads; the MLP keeps its ratio."""
        heads = kv_heads * self.gqa
        hidden = heads * self.head_dim
        intermediate = round(self.intermediate * hidden / self.hidden / 64) * 64
        return replace(self, hidden=hidden, heads=heads, kv_heads=kv_heads, intermediate=intermediate)

    def config(self, layers: int = 1) -> Any:
        """A transformers config of this width (SDPA attention, random init: nothing downloaded)."""
        settings = {
            "vocab_size": self.vocab,
            "hidden_size": self.hidden,
            "intermediate_size": self.intermediate,
            "num_hidden_layers": layers,
            "num_attention_heads": self.heads,
            "num_key_value_heads": self.kv_heads,
            "head_dim": self.head_dim,
            "rope_theta": self.rope_theta,
            "rms_norm_eps": self.rms_norm_eps,
            "max_position_embeddings": self.max_positions,
            "attn_implementation": "sdpa",
        }
        if self.architecture == "qwen2":
            from transformers import Qwen2Config

            return Qwen2Config(**settings)
        from transformers import LlamaConfig

        return LlamaConfig(**settings)

    def facts(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "hidden": self.hidden,
            "heads": self.heads,
            "kv_heads": self.kv_heads,
            "head_dim": self.head_dim,
            "intermediate": self.intermediate,
        }


LLAMA_3_8B = Width(
    name="llama-3-8b",
    source="https://huggingface.co/meta-llama/Meta-Llama-3-8B/blob/main/config.json",
    architecture="llama",
    hidden=4096,
    heads=32,
    kv_heads=8,
    head_dim=128,
    intermediate=14336,
    vocab=128256,
    rope_theta=500000.0,
    rms_norm_eps=1e-5,
    max_positions=8192,
)

QWEN2_5_7B = Width(
    name="qwen2-5-7b",
    source="https://huggingface.co/Qwen/Qwen2.5-7B/blob/main/config.json",
    architecture="qwen2",
    hidden=3584,
    heads=28,
    kv_heads=4,
    head_dim=128,
    intermediate=18944,
    vocab=152064,
    rope_theta=1000000.0,
    rms_norm_eps=1e-6,
    max_positions=131072,
)

WIDTHS: tuple[Width, ...] = (LLAMA_3_8B, QWEN2_5_7B)
