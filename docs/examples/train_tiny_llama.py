"""A tiny Llama training step (2 layers, built from a config: nothing is downloaded).

rocm-compat capture -o llama-ops.json -- python docs/examples/train_tiny_llama.py --steps 1
"""

from __future__ import annotations

import argparse

import torch
from transformers import LlamaConfig, LlamaForCausalLM


def tiny_llama(device: str = "cpu") -> tuple[LlamaForCausalLM, torch.optim.Optimizer, torch.Tensor]:
    """The model (seeded), its AdamW and a batch of tokens: what one training step needs."""
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=256,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    model = LlamaForCausalLM(config).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    tokens = torch.randint(0, config.vocab_size, (2, 16), device=device)
    return model, optimizer, tokens


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    model, optimizer, tokens = tiny_llama(args.device)
    for step in range(args.steps):
        loss = model(input_ids=tokens, labels=tokens).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        print(f"step {step}: loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
