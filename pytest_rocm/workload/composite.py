"""Composite calls recorded as themselves, beside the ops they decompose into.

The dispatch mode listens below autograd, where ``aten::lstm``, ``gru``, ``rnn_tanh``/``rnn_relu``,
``rms_norm`` and ``scaled_dot_product_attention`` have already become the ops of their CPU
decomposition (GEMMs, ``pow``, ``mean``...); a GPU runs one fused kernel for them (MIOpen's RNN,
a fused RMSNorm, flash attention), which a replay of the GEMMs never reaches. A function-level
mode beside it sees the call before it decomposes and records it as that aten op, so the replay
runs ``aten.lstm.input`` itself: on a GPU it takes the path the device takes (``miopen_rnn`` on
ROCm), and its reference is the same op in float64 on the CPU.

Only those functions are looked at (a name check per torch function call); under
``torch.inference_mode()`` the dispatch mode sees composites itself, so this one stays out.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.overrides import TorchFunctionMode

#: torch function name -> the aten op it calls (whose CPU path decomposes, a GPU's does not)
COMPOSITES: dict[str, str] = {
    "lstm": "aten::lstm",
    "gru": "aten::gru",
    "rnn_tanh": "aten::rnn_tanh",
    "rnn_relu": "aten::rnn_relu",
    "rms_norm": "aten::rms_norm",
    "scaled_dot_product_attention": "aten::scaled_dot_product_attention",
}


def overload(qualified: str, args: Any, kwargs: dict[str, Any]) -> Any:
    """The OpOverload a call of ``aten::name`` with these arguments resolves to, or None."""
    try:
        name = torch._C._jit_resolve_packet(qualified, *args, **kwargs)
    except RuntimeError:
        return None
    packet = getattr(torch.ops.aten, qualified.split("::")[1])
    return getattr(packet, name or "default", None)


def _value(signature: Any, position: int) -> Any:
    args = signature["args"]
    return args[position].get("value") if position < len(args) else None


def chain(signature: Any) -> int:
    """How many dependent steps a recurrent composite chains (time steps x layers x directions):
    its rounding accumulates along them, so its tolerance's K is multiplied by this (1 otherwise)."""
    op = str(signature["op"])
    if op.split(".")[1] not in ("lstm", "gru", "rnn_tanh", "rnn_relu"):
        return 1
    try:
        if op.endswith(
            ".input"
        ):  # (input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)
            shape = signature["args"][0]["tensor"]["shape"]
            steps = shape[1] if _value(signature, 8) and len(shape) == 3 else shape[0]
            layers, both = _value(signature, 4), _value(signature, 7)
        else:  # .data: (data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional)
            steps = signature["args"][1]["tensor"]["shape"][0]
            layers, both = _value(signature, 5), _value(signature, 8)
    except (KeyError, IndexError, TypeError):
        return 1
    return max(1, int(steps)) * max(1, int(layers or 1)) * (2 if both else 1)


class Composites(TorchFunctionMode):
    """Hands each composite call to the recorder as its aten op, then runs it unchanged."""

    def __init__(self, recorder: Any) -> None:
        super().__init__()
        self.recorder = recorder

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        qualified = COMPOSITES.get(getattr(func, "__name__", ""))
        if qualified is not None and not torch.is_inference_mode_enabled():
            op = overload(qualified, args, kwargs)
            if op is not None:
                tensor = next((a for a in args if isinstance(a, torch.Tensor)), None)
                device = tensor.device.type if tensor is not None else "cpu"
                autocast = None
                if torch.is_autocast_enabled(device):
                    autocast = {
                        "device_type": device,
                        "dtype": str(torch.get_autocast_dtype(device)).removeprefix("torch."),
                    }
                self.recorder.record(op, args, kwargs, torch._C._current_graph_task_id() != -1, autocast)
        return func(*args, **kwargs)


__all__ = ["COMPOSITES", "Composites", "chain", "overload"]
