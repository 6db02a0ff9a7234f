"""An LSTM sequence model's training step (embedding, 2-layer LSTM, linear head).

rocm-compat capture -o lstm-ops.json -- python docs/examples/train_lstm.py
"""

from __future__ import annotations

import argparse

import torch
from torch import nn


class Tagger(nn.Module):
    def __init__(self, vocab: int = 50, hidden: int = 32, tags: int = 5) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, 16)
        self.lstm = nn.LSTM(16, hidden, num_layers=2, batch_first=True)
        self.head = nn.Linear(hidden, tags)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(self.embed(tokens))
        return self.head(out)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    torch.manual_seed(0)
    model = Tagger().to(args.device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    tokens = torch.randint(0, 50, (3, 7), device=args.device)
    tags = torch.randint(0, 5, (3, 7), device=args.device)
    for step in range(args.steps):
        loss = nn.functional.cross_entropy(model(tokens).flatten(0, 1), tags.flatten())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        print(f"step {step}: loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
