"""A capture from one vendor's GPU replayed on the other's: the op the replaying build runs instead.

A CUDA capture records cuDNN's kernels (``cudnn_batch_norm``, ``cudnn_convolution``,
``_cudnn_rnn``); a ROCm build of PyTorch has those ops but no cuDNN behind them, and runs MIOpen's
(``miopen_batch_norm``...) where the program would. :func:`for_device` rewrites a signature to the
op this build runs, moving arguments by their schema names (a ``Tensor? bias`` the other lacks is
None; ``allow_tf32``, which MIOpen has no switch for, is dropped), or says why it cannot: cuDNN's
RNN takes a weight buffer in cuDNN's layout, which no signature can turn into MIOpen's. A ROCm
capture replayed on a CUDA build is said not replayable the same way (no MIOpen there).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from pytest_rocm.workload.guard import NotReplayable, resolve_op

#: cuDNN op -> the op a ROCm build runs in its place
CUDNN_TO_MIOPEN: dict[str, str] = {
    "aten.cudnn_batch_norm.default": "aten.miopen_batch_norm.default",
    "aten.cudnn_convolution.default": "aten.miopen_convolution.default",
    "aten.cudnn_convolution_transpose.default": "aten.miopen_convolution_transpose.default",
    "aten._scaled_dot_product_cudnn_attention.default": "aten._scaled_dot_product_efficient_attention.default",
}
#: vendor ops no signature maps, and why
UNMAPPED: dict[str, str] = {
    "_cudnn_rnn": "cuDNN's RNN takes its weights as one buffer in cuDNN's layout; ROCm runs "
    "miopen_rnn with MIOpen's layout, which a signature cannot rebuild (capture the program on "
    "ROCm: its miopen_rnn calls replay there)",
}


def rocm_build() -> bool:
    return bool(getattr(torch.version, "hip", None))


def translate(signature: Mapping[str, Any], target: str) -> dict[str, Any] | None:
    """``signature`` as a call of ``target``, arguments moved by name; None when one is missing."""
    source, dest = resolve_op(str(signature["op"]))._schema, resolve_op(target)._schema
    named = {a.name: arg for a, arg in zip(source.arguments, signature["args"], strict=False)}
    named.update(signature["kwargs"])
    args: list[dict[str, Any]] = []
    kwargs: dict[str, dict[str, Any]] = {}
    for argument in dest.arguments:
        if argument.name in named:
            value = named[argument.name]
        elif argument.type.kind() == "OptionalType":
            value = {"value": None}
        elif argument.has_default_value():
            continue
        else:
            return None
        if argument.kwarg_only:
            kwargs[argument.name] = value
        else:
            args.append(value)
    return {**signature, "op": target, "args": args, "kwargs": kwargs}


def for_device(signature: Mapping[str, Any], device: torch.device) -> tuple[Mapping[str, Any], str | None]:
    """(the signature this build runs, a note saying what was mapped or None); NotReplayable when
    the op is another vendor's library with no counterpart here."""
    if device.type != "cuda":
        return signature, None  # the CPU runs neither library: the replay says so itself
    op = str(signature["op"])
    packet = op.split(".")[1]
    if rocm_build():
        if packet in UNMAPPED or packet.lstrip("_") in UNMAPPED:
            raise NotReplayable(f"{op} is cuDNN's: {UNMAPPED[packet if packet in UNMAPPED else packet.lstrip('_')]}")
        target = CUDNN_TO_MIOPEN.get(op)
        if target is None:
            if "cudnn" in packet:
                raise NotReplayable(f"{op} is cuDNN's and this ROCm build has no counterpart mapped for it")
            return signature, None
        mapped = translate(signature, target)
        if mapped is None:
            raise NotReplayable(f"{op} is cuDNN's and its arguments do not map onto {target}")
        return mapped, f"captured as {op} (cuDNN); replayed as {target}, what this ROCm build runs for it"
    if "miopen" in packet:
        raise NotReplayable(f"{op} is MIOpen's (captured on ROCm): this CUDA build has no MIOpen")
    return signature, None


__all__ = ["CUDNN_TO_MIOPEN", "UNMAPPED", "for_device", "rocm_build", "translate"]
