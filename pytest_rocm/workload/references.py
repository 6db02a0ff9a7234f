"""Float64 CPU references for ops the CPU has no kernel for: the fused attention kernels.

A capture taken on a GPU calls ``_scaled_dot_product_flash_attention`` or
``_scaled_dot_product_efficient_attention`` (and cuDNN's), which exist for CUDA and ROCm only; their
reference is PyTorch's math attention on the same inputs in float64. Only the attention output is
compared (the log-sum-exp and the random-state outputs have no math counterpart); its gradients
follow through autograd on both sides, so a row seen with gradients checks the fused backward too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


def _math(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None,
    dropout_p: float,
    is_causal: bool,
    scale: float | None,
) -> tuple[torch.Tensor]:
    out, _ = torch.ops.aten._scaled_dot_product_attention_math.default(
        query, key, value, mask, dropout_p, is_causal, None, scale=scale
    )
    return (out,)


def flash(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    return_debug_mask: bool = False,
    *,
    scale: float | None = None,
) -> tuple[torch.Tensor]:
    return _math(query, key, value, None, dropout_p, is_causal, scale)


def efficient(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attn_bias: torch.Tensor | None,
    compute_log_sumexp: bool,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    return_debug_mask: bool = False,  # cuDNN's signature has it, the efficient kernel's not
    *,
    scale: float | None = None,
) -> tuple[torch.Tensor]:
    return _math(query, key, value, attn_bias, dropout_p, is_causal, scale)


#: op -> a function of the same arguments returning the outputs it can check (a prefix of the op's)
SUBSTITUTES: dict[str, Callable[..., Any]] = {
    "aten._scaled_dot_product_flash_attention.default": flash,
    "aten._scaled_dot_product_efficient_attention.default": efficient,
    "aten._scaled_dot_product_cudnn_attention.default": efficient,
}
