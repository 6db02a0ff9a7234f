"""RNN, LSTM and GRU (two layers, batch_first; one bidirectional LSTM), forward and backward.

The module's parameters are passed to parity as inputs (torch.func.functional_call), so they are
cast per dtype and their gradients are compared too. On ROCm these run through MIOpen's RNN
kernels, on CUDA through cuDNN.
"""

from __future__ import annotations

import pytest
import torch
from opsupport import check, dtypes, eps_tolerances, randn
from torch import nn
from torch.func import functional_call


def _module(kind: str) -> nn.Module:
    torch.manual_seed(0)  # stable initial weights: the inputs are part of the feature's identity
    if kind == "rnn":
        return nn.RNN(8, 12, num_layers=2, batch_first=True)
    if kind == "lstm":
        return nn.LSTM(8, 12, num_layers=2, batch_first=True)
    if kind == "lstm_bidirectional":
        return nn.LSTM(8, 12, num_layers=1, batch_first=True, bidirectional=True)
    return nn.GRU(8, 12, num_layers=2, batch_first=True)


@dtypes
@pytest.mark.parametrize("kind", ["rnn", "lstm", "lstm_bidirectional", "gru"])
def test_rnn(kind: str, dtype: str, parity, rocm_device: torch.device) -> None:
    module = _module(kind)
    names = [name for name, _ in module.named_parameters()]
    weights = [p.detach().clone() for p in module.parameters()]

    def run(x: torch.Tensor, *params: torch.Tensor) -> tuple[torch.Tensor, ...]:
        module.to(device=x.device, dtype=x.dtype)  # buffers / flat-weight bookkeeping per run
        output, state = functional_call(module, dict(zip(names, params, strict=True)), (x,))
        return (output, *state) if isinstance(state, tuple) else (output, state)

    # Weight gradients sum over time steps and batch through the recurrence: rounding compounds
    # and cancels, so elements stray further than in one op; held to 8 eps normwise instead.
    check(
        parity,
        rocm_device,
        kind,
        run,
        randn(3, 7, 8, seed=1),
        *weights,
        dtype=dtype,
        tolerances=eps_tolerances(normwise_eps=8),
    )
