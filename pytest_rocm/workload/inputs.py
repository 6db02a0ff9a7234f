"""Inputs for replaying one signature: generated, never recorded, in one of the value regimes.

Every tensor is made at its captured layout: a storage of the size its strides and storage offset
need, viewed with ``as_strided``, so the kernel under test sees the same strides and offset as in
the program. Values are drawn in float64 on the CPU from a seed, rounded to the captured dtype for
the device, and that rounded value, held in float64, is the reference's input: the two runs see
the same numbers. Integer tensors (indices, targets) are drawn below the smallest size of the
call's floating tensors, so an index is valid for any dimension it could address.

Value regimes (``REGIMES``): ``random`` (standard normal), ``zeros``, ``constant-rows`` (every
last-dimension row one value: softmax and normalisation of a constant), ``large`` (normal times
``min(1e4, sqrt(max of the dtype) / 8)``: large, yet a product of two stays finite).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

REGIMES: tuple[str, ...] = ("random", "zeros", "constant-rows", "large")


@dataclass
class Built:
    """One run's arguments, and the leaves that require grad (in argument order)."""

    args: list[Any]
    kwargs: dict[str, Any]
    grad_inputs: list[tuple[str, torch.Tensor]] = field(default_factory=list)


def torch_dtype(name: str) -> torch.dtype:
    value = getattr(torch, name, None)
    if not isinstance(value, torch.dtype):
        raise ValueError(f"this torch has no dtype {name!r}")
    return value


def _is_float(dtype: torch.dtype) -> bool:
    return dtype.is_floating_point or dtype.is_complex


def _storage_size(meta: Mapping[str, Any]) -> int:
    if any(s == 0 for s in meta["shape"]):
        return int(meta["offset"])
    span = sum((int(s) - 1) * abs(int(st)) for s, st in zip(meta["shape"], meta["stride"], strict=True))
    return int(meta["offset"]) + span + 1


def _tensors(arg: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    if "tensor" in arg:
        return [arg["tensor"]]
    return [t for item in arg.get("list") or () for t in _tensors(item)]


def index_bound(signature: Mapping[str, Any]) -> int:
    """Integer inputs are drawn in ``[0, bound)``: the smallest size of the floating tensors."""
    sizes = [
        s
        for arg in [*signature["args"], *signature["kwargs"].values()]
        for meta in _tensors(arg)
        if _is_float(torch_dtype(meta["dtype"]))
        for s in meta["shape"]
        if s > 0
    ]
    return max(1, min(sizes)) if sizes else 2


def large_scale(dtype: torch.dtype) -> float:
    if not dtype.is_floating_point:
        return 1e4
    return min(1e4, math.sqrt(torch.finfo(dtype).max) / 8)


def laid_out(storage: torch.Tensor, shape: list[int], stride: list[int], offset: int) -> torch.Tensor:
    """A tensor on ``storage`` (a 1-D tensor) at exactly this layout, and not a view: an op that
    refuses views (``detach_``, ``resize_``) gets what the program gave it, a tensor of its own."""
    return torch.empty(0, dtype=storage.dtype, device=storage.device).set_(
        storage.untyped_storage(), offset, shape, stride
    )


def storage_of(tensor: torch.Tensor) -> torch.Tensor:
    """The whole storage under ``tensor`` as a 1-D tensor of its dtype."""
    return torch.empty(0, dtype=tensor.dtype, device=tensor.device).set_(tensor.untyped_storage())


class Maker:
    """Builds the device run's and the reference run's arguments of one signature in one regime."""

    def __init__(self, signature: Mapping[str, Any], device: torch.device, regime: str, seed: int = 0) -> None:
        self.signature, self.device, self.regime = signature, device, regime
        self.generator = torch.Generator().manual_seed(seed)
        self.bound = index_bound(signature)
        tensors = [m for a in [*signature["args"], *signature["kwargs"].values()] for m in _tensors(a)]
        #: captured tensors on an accelerator: CPU ones stay on the CPU (a 0-dim scalar tensor)
        self.mixed = any(m["device"] != "cpu" for m in tensors)
        self.input_float_dtypes = {m["dtype"] for m in tensors if _is_float(torch_dtype(m["dtype"]))}
        self.grad = bool(signature.get("grad"))

    def _values(self, meta: Mapping[str, Any]) -> torch.Tensor:
        """The storage's values in float64 (or the integer dtype), on the CPU, rounded to the dtype."""
        dtype = torch_dtype(meta["dtype"])
        size = _storage_size(meta)
        g = self.generator
        if dtype == torch.bool:
            return torch.randint(0, 2, (size,), generator=g).bool()
        if not _is_float(dtype):
            return torch.randint(0, self.bound, (size,), generator=g).to(dtype)
        wide = torch.complex128 if dtype.is_complex else torch.float64
        if self.regime == "zeros":
            values = torch.zeros(size, dtype=wide)
        else:
            values = torch.randn(size, generator=g, dtype=wide)
            if self.regime == "large":
                values *= large_scale(dtype)
        return values.to(dtype).to(wide)  # rounded to the dtype: the same numbers on both sides

    def _constant_rows(self, view: torch.Tensor, dtype: torch.dtype) -> None:
        """Every last-dimension row of the float64 ``view`` one value, rounded to the captured
        ``dtype`` first: the reference holds exactly the numbers the device's copy holds."""
        if view.dim() == 0 or view.numel() == 0:
            return
        row = torch.randn((*view.shape[:-1], 1), generator=self.generator, dtype=view.dtype)
        row = row.to(dtype).to(view.dtype)
        try:
            view.copy_(row.to(view.dtype).expand(view.shape))
        except RuntimeError:  # an overlapping layout (stride 0): one value everywhere is constant too
            view.fill_(float(row.reshape(-1)[0]))

    def tensor(self, meta: Mapping[str, Any], where: str, built: Built, built_ref: Built) -> tuple[Any, Any]:
        dtype = torch_dtype(meta["dtype"])
        values = self._values(meta)
        shape, stride, offset = list(meta["shape"]), list(meta["stride"]), int(meta["offset"])
        device = torch.device("cpu") if self.mixed and meta["device"] == "cpu" else self.device
        ref = laid_out(values.clone(), shape, stride, offset)
        if self.regime == "constant-rows" and _is_float(dtype):
            self._constant_rows(ref, dtype)
        dev = laid_out(storage_of(ref).to(dtype).to(device), shape, stride, offset)
        if meta.get("conj") and dtype.is_complex:  # the lazy view the kernel got, on both sides
            dev, ref = dev.conj(), ref.conj()
        if meta.get("neg"):
            dev, ref = torch._neg_view(dev), torch._neg_view(ref)
        if self.grad and meta.get("requires_grad") and _is_float(dtype):
            dev, ref = dev.detach().requires_grad_(True), ref.detach().requires_grad_(True)
            built.grad_inputs.append((where, dev))
            built_ref.grad_inputs.append((where, ref))
        return dev, ref

    def value(self, arg: Mapping[str, Any], where: str, built: Built, built_ref: Built) -> tuple[Any, Any]:
        """One argument for the device run and for the reference run."""
        if "tensor" in arg:
            return self.tensor(arg["tensor"], where, built, built_ref)
        if "list" in arg:
            pairs = [self.value(a, f"{where}[{i}]", built, built_ref) for i, a in enumerate(arg["list"])]
            return [p[0] for p in pairs], [p[1] for p in pairs]
        if "value" in arg:
            value = arg["value"]
            return value, value
        if "float" in arg:
            return float(arg["float"]), float(arg["float"])
        if "complex" in arg:
            return complex(*arg["complex"]), complex(*arg["complex"])
        if "dtype" in arg:
            dtype = torch_dtype(arg["dtype"])
            # the dtype of the inputs, named again (softmax backward's input_dtype): float64 in the reference
            return dtype, (torch.float64 if arg["dtype"] in self.input_float_dtypes else dtype)
        if "device" in arg:
            device = torch.device("cpu") if self.mixed and arg["device"] == "cpu" else self.device
            return device, torch.device("cpu")
        if "layout" in arg:
            layout = getattr(torch, arg["layout"])
            return layout, layout
        if "memory_format" in arg:
            fmt = getattr(torch, arg["memory_format"])
            return fmt, fmt
        raise ValueError(f"{where}: an argument that cannot be rebuilt ({arg})")

    def build(self) -> tuple[Built, Built]:
        built, built_ref = Built([], {}), Built([], {})
        for i, arg in enumerate(self.signature["args"]):
            dev, ref = self.value(arg, f"arg{i}", built, built_ref)
            built.args.append(dev)
            built_ref.args.append(ref)
        for name, arg in self.signature["kwargs"].items():
            dev, ref = self.value(arg, name, built, built_ref)
            built.kwargs[name] = dev
            built_ref.kwargs[name] = ref
        return built, built_ref


def same_dtype_reference(built_ref: Built, signature: Mapping[str, Any]) -> Built:
    """The reference's arguments at the captured dtypes (for an op with no float64 kernel)."""
    maker = Maker(signature, torch.device("cpu"), "random")
    dtypes = {name: torch_dtype(name) for name in maker.input_float_dtypes}

    def back(value: Any, meta_dtype: torch.dtype | None = None) -> Any:
        if isinstance(value, torch.Tensor) and value.dtype == torch.float64 and meta_dtype is not None:
            return value.detach().to(meta_dtype).requires_grad_(value.requires_grad)
        return value

    def walk(value: Any, arg: Mapping[str, Any]) -> Any:
        if "tensor" in arg:
            return back(value, torch_dtype(arg["tensor"]["dtype"]))
        if "list" in arg:
            return [walk(v, a) for v, a in zip(value, arg["list"], strict=True)]
        if "dtype" in arg:
            return dtypes.get(arg["dtype"], value)
        return value

    args = [walk(v, a) for v, a in zip(built_ref.args, signature["args"], strict=True)]
    kwargs = {k: walk(v, signature["kwargs"][k]) for k, v in built_ref.kwargs.items()}
    return Built(args, kwargs)
