"""What a parity run really computed in, and the ``mode="model"`` yardstick (docs/parity.md).

* :class:`DtypeProbe`: a dispatch mode that sees every aten op of a run (forward and backward) and
  records the floating dtypes of the tensors it touched and of the ``nn.Parameter`` objects among
  them. A closure over a module (``lambda ids: m(ids).logits``) is invisible to the casting of
  ``fn``'s inputs: the probe is how a run proves that it ran in the dtype under test.
* :class:`RoundTo`: the yardstick of the model criterion. The computation runs in float64 on the
  CPU and every op's floating result is rounded to the dtype under test: what storing every
  intermediate in that dtype costs this model, with exact accumulation. It never calls a kernel of
  the dtype under test, so a bug in those kernels (the CPU's own, on CI where the device is the
  CPU) cannot hide in the yardstick, and dtype-keyed code (``if x.dtype == torch.bfloat16``) takes
  the float64 branch.
* :func:`cast_module`: ``module=``: swap a caller's module's parameters and buffers for cast
  copies for one run, and put the originals back (the caller's model is never touched).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


#: ops that copy, convert or allocate but compute nothing: a parameter seen only by these (a model
#: deep-copied and cast inside fn) was not used in another dtype's arithmetic
_NO_ARITHMETIC = frozenset(
    {"_to_copy", "clone", "copy_", "detach", "alias", "lift_fresh", "empty_like", "zeros_like", "ones_like", "set_"}
)


class _LightMode(TorchDispatchMode):  # type: ignore[no-untyped-call]  # torch: untyped __init_subclass__
    """A dispatch mode whose handler is not wrapped in ``torch._disable_dynamo``: that wrapper imports
    torch._dynamo (some 900 modules, triton among them) on a mode's first op, seconds for the first
    parity call, and a process that imports triton twice (pytester's in-process runs) aborts."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False


class DtypeProbe(_LightMode):
    """Records the floating dtypes a run's ops touched, and its floating parameters' dtypes."""

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        #: floating dtype name -> number of ops that had a tensor of it (argument or result)
        self.op_dtypes: dict[str, int] = {}
        #: floating dtype name -> {id: shape} of the distinct nn.Parameter objects of that dtype used
        self.param_dtypes: dict[str, dict[int, tuple[int, ...]]] = {}

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        __tracebackhide__ = True  # an error of fn's op reads from fn's line, not from this mode
        kwargs = kwargs or {}
        flat, _ = tree_flatten((args, kwargs))
        # before the op: an op that fails on mixed dtypes is seen too
        self._see(flat, params=func.overloadpacket.__name__ not in _NO_ARITHMETIC)
        out = func(*args, **kwargs)
        self._see(tree_flatten(out)[0], params=False)
        return out

    def _see(self, items: list[Any], params: bool) -> None:
        names = set()
        for t in items:
            if isinstance(t, torch.Tensor) and t.is_floating_point():
                name = dtype_name(t.dtype)
                names.add(name)
                if params and isinstance(t, torch.nn.Parameter):
                    self.param_dtypes.setdefault(name, {})[id(t)] = tuple(t.shape)
        for name in names:
            self.op_dtypes[name] = self.op_dtypes.get(name, 0) + 1

    def problem(self, dtype: str, output_dtypes: set[str]) -> str | None:
        """Why this run did not run in ``dtype`` (None when it did, or when nothing was floating)."""
        off = {d: shapes for d, shapes in self.param_dtypes.items() if d != dtype}
        if off:
            shapes = next(iter(off.values()))
            n = sum(len(s) for s in off.values())
            example = next(iter(shapes.values()))
            return (
                f"the {dtype} run used {n} parameter(s) in {', '.join(sorted(off))} (e.g. one of shape "
                f"{list(example)}): a module that fn calls was not cast"
            )
        seen = set(self.op_dtypes) | output_dtypes
        if seen and dtype not in seen:
            return f"the {dtype} run computed only in {', '.join(sorted(seen))}: nothing ran in {dtype}"
        return None


#: how to fix a run that did not run in the dtype under test
HOW_TO_PASS_A_MODEL = (
    "pass the model as fn (parity(model, ids)), or name the module a closure uses: "
    "parity(lambda ids: m(ids).logits, ids, module=m)"
)


class RoundTo(_LightMode):
    """Rounds every floating (float64) result of every op to ``dtype`` (and back to float64)."""

    def __init__(self, dtype: torch.dtype, compute: torch.dtype = torch.float64) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.dtype = dtype
        self.compute = compute

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        __tracebackhide__ = True
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if getattr(func, "is_view", False):
            return out  # a view shares its (already rounded) input's memory
        schema = func._schema
        if not schema.is_mutable and func not in _WRITES_UNANNOTATED:
            return tree_map(self._round, out)
        # an op that writes into its arguments (an in-place op, ``out=``, batch norm's running
        # statistics): what it wrote is stored in the dtype, so it is rounded where it lies (a copy
        # would cut the alias); its other results, fresh tensors, are rounded as any op's
        for i, arg in enumerate(schema.arguments):
            if (arg.alias_info is not None and arg.alias_info.is_write) or i in _WRITES_UNANNOTATED.get(func, ()):
                value = args[i] if i < len(args) else kwargs.get(arg.name)
                tree_map(self._round_in_place, value)
        if not isinstance(out, tuple):
            return out if _aliased(schema.returns[0:1]) else self._round(out)
        return tuple(o if _aliased(schema.returns[i : i + 1]) else tree_map(self._round, o) for i, o in enumerate(out))

    def _round_in_place(self, t: Any) -> Any:
        if isinstance(t, torch.Tensor) and t.dtype == self.compute:
            with torch.no_grad():
                t.copy_(t.to(self.dtype))
        return t

    def _round(self, t: Any) -> Any:
        if isinstance(t, torch.Tensor) and t.dtype == self.compute:
            return t.to(self.dtype).to(self.compute)
        return t


#: ops that write into arguments their schema does not mark as written: batch norm in training
#: updates its running mean and variance (arguments 3 and 4) in place
_WRITES_UNANNOTATED: dict[Any, tuple[int, ...]] = {torch.ops.aten.native_batch_norm.default: (3, 4)}


def _aliased(returns: Any) -> bool:
    """Whether a (single-element list of a) schema return aliases an argument."""
    return bool(returns) and returns[0].alias_info is not None


@contextmanager
def cast_module(module: torch.nn.Module, convert: Callable[[torch.Tensor], torch.Tensor]) -> Iterator[None]:
    """For the block's duration, ``module``'s parameters and buffers are ``convert``-ed copies
    (tied parameters stay tied); afterwards the original objects are back in place."""
    saved: list[tuple[dict[str, Any], str, Any]] = []
    copies: dict[int, Any] = {}
    for sub in module.modules():
        tables: tuple[tuple[dict[str, Any], Callable[..., Any]], ...] = (
            (sub._parameters, _param_copy),
            (sub._buffers, _buffer_copy),
        )
        for table, make in tables:
            for name, value in list(table.items()):
                if value is None:
                    continue
                if id(value) not in copies:
                    copies[id(value)] = make(value, convert)
                saved.append((table, name, value))
                table[name] = copies[id(value)]
    try:
        yield
    finally:
        for table, name, value in reversed(saved):
            table[name] = value


def _param_copy(p: torch.nn.Parameter, convert: Callable[[torch.Tensor], torch.Tensor]) -> torch.nn.Parameter:
    return torch.nn.Parameter(convert(p.detach()), requires_grad=p.requires_grad and p.is_floating_point())


def _buffer_copy(b: torch.Tensor, convert: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
    return convert(b.detach())
