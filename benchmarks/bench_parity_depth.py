"""What float16 / bfloat16 / float32 cost a model as it gets deeper, and how well the model criterion's
yardstick predicts it (docs/parity.md, "The model criterion").

For BERT, GPT-2 and Llama built from transformers configs (narrow: hidden 64, 4 heads; seeded random
weights, nothing downloaded) at several depths, prints per dtype the error of the CPU's own run in
that dtype against float64 (normwise ||got-ref||/||ref|| and max |got-ref|), the same for the
yardstick (the float64 computation with every op's result rounded to the dtype, probe.RoundTo), and
their ratios: the model criterion allows a device MODEL_FACTORS (normwise, max) times the
yardstick. It prints, it does not assert.

    python benchmarks/bench_parity_depth.py [--depths 1 4 12 32] [--tokens 16]
"""

from __future__ import annotations

import argparse
import copy
import warnings
from collections.abc import Callable
from typing import Any

import torch

from pytest_rocm.parity.probe import RoundTo
from pytest_rocm.parity.tolerances import MODEL_FACTORS


def _models() -> dict[str, Callable[[int], Any]]:
    import transformers as tf

    common = {"vocab_size": 256, "max_position_embeddings": 64}
    return {
        "llama": lambda n: tf.LlamaForCausalLM(
            tf.LlamaConfig(
                hidden_size=64,
                intermediate_size=128,
                num_hidden_layers=n,
                num_attention_heads=4,
                num_key_value_heads=2,
                tie_word_embeddings=False,
                **common,
            )
        ),
        "gpt2": lambda n: tf.GPT2LMHeadModel(
            tf.GPT2Config(
                vocab_size=256, n_embd=64, n_layer=n, n_head=4, n_positions=64, bos_token_id=0, eos_token_id=0
            )
        ),
        "bert": lambda n: tf.BertModel(
            tf.BertConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=n, num_attention_heads=4, **common)
        ),
    }


def _output(model: Any, ids: torch.Tensor) -> torch.Tensor:
    out = model(ids)
    return (out.logits if hasattr(out, "logits") else out.last_hidden_state).double()


def _errors(value: torch.Tensor, ref: torch.Tensor) -> tuple[float, float]:
    d = value - ref
    return float(d.norm() / ref.norm()), float(d.abs().max())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depths", type=int, nargs="+", default=[1, 4, 12, 32])
    parser.add_argument("--tokens", type=int, default=16)
    options = parser.parse_args()
    warnings.filterwarnings("ignore")
    ids = torch.randint(0, 256, (1, options.tokens), generator=torch.Generator().manual_seed(1))
    print(f"allowed: {MODEL_FACTORS[0]:g}x the yardstick's normwise error, {MODEL_FACTORS[1]:g}x its max error")
    print(
        f"{'model':6} {'layers':>6} {'dtype':9} {'cpu normwise':>12} {'yardstick':>10} {'ratio':>6} "
        f"{'cpu max':>9} {'yardstick':>10} {'ratio':>6}"
    )
    for name, build in _models().items():
        for depth in options.depths:
            torch.manual_seed(0)
            model = build(depth).eval()
            with torch.no_grad():
                ref = _output(copy.deepcopy(model).double(), ids)
                for dtype in (torch.float32, torch.float16, torch.bfloat16):
                    cpu_nw, cpu_max = _errors(_output(copy.deepcopy(model).to(dtype), ids), ref)
                    with RoundTo(dtype):
                        yard = _output(copy.deepcopy(model).to(dtype).double(), ids)
                    y_nw, y_max = _errors(yard, ref)
                    short = str(dtype).removeprefix("torch.")
                    print(
                        f"{name:6} {depth:6} {short:9} {cpu_nw:12.2e} {y_nw:10.2e} {cpu_nw / y_nw:6.2f} "
                        f"{cpu_max:9.2e} {y_max:10.2e} {cpu_max / y_max:6.2f}",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
