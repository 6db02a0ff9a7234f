"""Float64 CPU references for ops the CPU has no kernel for: the fused attention kernels, and
cuDNN's and MIOpen's batch norm and convolutions (``native_batch_norm`` and ``convolution``, whose
normalised output and result are compared; the saved statistics differ in form between them).

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


def batch_norm(
    input: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    running_mean: torch.Tensor | None,
    running_var: torch.Tensor | None,
    training: bool,
    exponential_average_factor: float,
    epsilon: float,
) -> tuple[torch.Tensor]:
    """cuDNN's and MIOpen's batch norm: the normalised output (their saved statistics differ in form)."""
    out, _, _ = torch.ops.aten.native_batch_norm.default(
        input, weight, bias, running_mean, running_var, training, exponential_average_factor, epsilon
    )
    return (out,)


def _conv(transposed: bool) -> Callable[..., tuple[torch.Tensor]]:
    def conv(input: torch.Tensor, weight: torch.Tensor, *rest: Any) -> tuple[torch.Tensor]:
        # cuDNN's lacks bias, MIOpen's has it: the tail after (padding[, output_padding], stride,
        # dilation, groups) is benchmark/deterministic switches
        bias = rest[0] if rest and (rest[0] is None or isinstance(rest[0], torch.Tensor)) else None
        rest = rest[1:] if rest and (rest[0] is None or isinstance(rest[0], torch.Tensor)) else rest
        if transposed:
            padding, output_padding, stride, dilation, groups = rest[:5]
        else:
            (padding, stride, dilation, groups), output_padding = rest[:4], [0] * len(rest[0])
        out = torch.ops.aten.convolution.default(
            input, weight, bias, stride, padding, dilation, transposed, output_padding, groups
        )
        return (out,)

    return conv


#: op -> a function of the same arguments returning the outputs it can check (a prefix of the op's)
SUBSTITUTES: dict[str, Callable[..., Any]] = {
    "aten.cudnn_batch_norm.default": batch_norm,
    "aten.miopen_batch_norm.default": batch_norm,
    "aten.cudnn_convolution.default": _conv(False),
    "aten.miopen_convolution.default": _conv(False),
    "aten.cudnn_convolution_transpose.default": _conv(True),
    "aten.miopen_convolution_transpose.default": _conv(True),
    "aten._scaled_dot_product_flash_attention.default": flash,
    "aten._scaled_dot_product_efficient_attention.default": efficient,
    "aten._scaled_dot_product_cudnn_attention.default": efficient,
}


def pinned(signature: dict[str, Any]) -> dict[str, Any]:
    """The signature with defaults that depend on the dtype made explicit, so the float64
    reference computes the device's function: ``rms_norm``'s ``eps=None`` is the input dtype's
    epsilon (float32's 1.2e-7 on the device, float64's 2.2e-16 in the reference otherwise)."""
    if signature["op"] != "aten.rms_norm.default" or not signature["args"] or "tensor" not in signature["args"][0]:
        return signature
    eps = signature["kwargs"].get("eps", signature["args"][3] if len(signature["args"]) > 3 else None)
    if eps is not None and eps.get("value") is not None:
        return signature
    dtype = getattr(torch, signature["args"][0]["tensor"]["dtype"], None)
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        return signature
    args = list(signature["args"])[:3]
    return {**signature, "args": args, "kwargs": {**signature["kwargs"], "eps": {"value": torch.finfo(dtype).eps}}}
