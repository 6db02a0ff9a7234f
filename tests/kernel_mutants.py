"""Kernel bugs made on purpose, shared by the parity tests and the suite tests that run them as a
plugin (the source goes into a pytester plugin with ``inspect.getsource``)."""

from __future__ import annotations

from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode


class DropsKTail(TorchDispatchMode):
    """bfloat16 matmuls ignore the last eighth of the reduction (a K-remainder bug)."""

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        if name in ("mm", "addmm", "bmm") and any(
            isinstance(a, torch.Tensor) and a.dtype == torch.bfloat16 for a in args
        ):
            a, b = (args[1], args[2]) if name == "addmm" else (args[0], args[1])
            keep = a.shape[-1] - a.shape[-1] // 8
            a, b = a[..., :keep], b[..., :keep, :]
            return func(args[0], a, b, **kwargs) if name == "addmm" else func(a, b, **kwargs)
        return func(*args, **kwargs)


class PerturbsOneShape(TorchDispatchMode):
    """One op at one input layout returns 1 % too much (``factor``), in the device runs only (the
    reference's float64 runs are left alone): a kernel wrong at one shape, right at every other."""

    def __init__(self, op: str, shapes: list[list[int]], factor: float = 1.01) -> None:
        super().__init__()
        self.op, self.shapes, self.factor = op, shapes, factor

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        if (
            str(func) == self.op
            and [list(t.shape) for t in tensors] == self.shapes
            and not any(t.dtype == torch.float64 for t in tensors)
        ):
            return out * self.factor
        return out


class PerturbsLowPrecision(TorchDispatchMode):
    """One op returns 1 % too much where an input is float16 or bfloat16: a low-precision kernel
    bug; the float32 and float64 runs (the reference's among them) are left alone."""

    def __init__(self, op: str) -> None:
        super().__init__()
        self.op = op

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        low = (torch.float16, torch.bfloat16)
        if str(func) == self.op and any(isinstance(a, torch.Tensor) and a.dtype in low for a in args):
            return out * 1.01
        return out


class PerturbsNonContiguous(TorchDispatchMode):
    """One op returns 1 % too much where a tensor input is not contiguous and not float64: a kernel
    wrong only for a strided (transposed, sliced) layout, right for the dense one."""

    def __init__(self, op: str) -> None:
        super().__init__()
        self.op = op

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        if (
            str(func) == self.op
            and any(not t.is_contiguous() for t in tensors)
            and not any(t.dtype == torch.float64 for t in tensors)
        ):
            return out * 1.01
        return out


class PerturbsStridedInput(TorchDispatchMode):
    """One op returns 1 % too much when an input reaches it as a sliced or offset view (not dense,
    or not at the start of its storage), in low-precision runs only: a kernel wrong for the
    caller's layout, right for a contiguous copy (the vectorized path assumed, pytorch#187064)."""

    def __init__(self, op: str) -> None:
        super().__init__()
        self.op = op
        self.fired = 0

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        if str(func) == self.op and any(t.dtype != torch.float64 and _sliced(t) for t in tensors):
            self.fired += 1
            return out * 1.01
        return out


def _sliced(t: torch.Tensor) -> bool:
    """A view ``.contiguous()``/``.clone()`` would change: strided gaps, or a storage offset."""
    if t.storage_offset() != 0:
        return True
    pairs = sorted((s, n) for s, n in zip(t.stride(), t.shape, strict=True) if n != 1)
    expected = 1
    for stride, size in pairs:
        if stride != expected:
            return True
        expected *= size
    return False
