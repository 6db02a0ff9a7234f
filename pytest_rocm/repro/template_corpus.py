"""The corpus part of a reproducer: ``rocm-compat repro`` writes what follows the marker line into
an OpInfo or ModuleInfo corpus row's script, at the template's ``# rocm-compat repro: CORPUS``
line (text, never imported by pytest-rocm; ``main`` calls ``corpus_runner``).

The row's sample is rebuilt as the corpus suite made it (suites/corpus/corpus_db.py and
corpus_calls.py): from ``torch.testing._internal`` of the same torch (it ships in the wheels; its
``common_utils`` needs ``expecttest``), the entry found by name and variant, its samples made on
the CPU in the row's dtype after ``torch.manual_seed(0)``/``random.seed(0)``, the one at the
recorded index; the inputs parity passed (``passed``) are checked against the recorded layout and,
where saved, their bytes. In another torch the index names another sample: the script then runs the
recorded values and ops where every value was saved and the ops were recorded, and says it cannot
run otherwise (exit 2).
"""

# rocm-compat repro: CORPUS PART
import base64 as _base64
import random as _random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
import torch.utils._pytree as pytree

_KIN = {torch.float64: torch.complex128, torch.float32: torch.complex64, torch.float16: torch.complex32}
Runner = Callable[..., tuple[Any, list[Any]]]


def corpus_runner(spec: dict[str, Any]) -> tuple[list[torch.Tensor], Runner] | str | None:
    """(the passed inputs' storages, the runner) of the row's sample rebuilt in this torch; a
    "cannot run" line; or None: run the recorded values and ops instead."""
    corpus = spec["corpus"]
    kind = "OpInfo" if corpus["db"] == "opinfo" else "ModuleInfo"
    print(
        f"the row: {kind} {corpus['name']}, variant {corpus['variant']}, {corpus['dtype']}, sample "
        f"{corpus['sample']} (index {corpus['sample'][1:]} of {'reference_inputs' if corpus['sample'][0] == 'r' else 'sample_inputs'}) "
        f"of torch {corpus['torch']}"
    )
    if torch.__version__ != corpus["torch"]:
        why = f"sample index belongs to torch {corpus['torch']}; this is torch {torch.__version__}"
    else:
        try:
            made = _rebuild(corpus)
        except Exception as exc:  # an entry whose fields changed, a database that cannot be imported
            text = str(exc).strip().splitlines()
            why = f"torch's test database cannot make the sample: {type(exc).__name__}: {text[0] if text else ''}"
            if isinstance(exc, ImportError):
                why += " (torch.testing._internal needs expecttest: pip install expecttest)"
        else:
            if not isinstance(made, str) and (differs := _differs(spec, made[0])) is None:
                return made
            why = made if isinstance(made, str) else str(differs)
    recorded = spec["op"] is not None and all(t["values"] is not None for t in spec["tensors"])
    if recorded:
        print(f"{why}: running the recorded values and ops instead")
        return None
    return f"cannot run: {why}"


def _seeded() -> None:
    torch.manual_seed(0)
    _random.seed(0)


def _rebuild(corpus: dict[str, Any]) -> tuple[list[torch.Tensor], Runner] | str:
    dtype = getattr(torch, corpus["dtype"])
    index = int(corpus["sample"][1:])
    if corpus["db"] == "opinfo":
        from torch.testing._internal.common_methods_invocations import op_db

        found: list[Any] = [
            e for e in op_db if e.name == corpus["name"] and (e.variant_test_name or "default") == corpus["variant"]
        ]
        if not found:
            return f"this torch's OpInfo has no {corpus['name']} (variant {corpus['variant']})"
        entry = found[0]
        grad = bool(getattr(entry, "supports_autograd", False))
        make = entry.sample_inputs if corpus["sample"][0] == "s" else entry.reference_inputs
        _seeded()
        try:
            samples = list(make("cpu", dtype, requires_grad=grad))
        except Exception:
            if not grad:
                raise
            _seeded()
            samples = list(make("cpu", dtype, requires_grad=False))
        if index >= len(samples):
            return f"OpInfo {corpus['name']} has {len(samples)} samples here, not {index + 1}"
        sample = samples[index]
        leaves, tree = pytree.tree_flatten((sample.input, sample.args, sample.kwargs))
        module = None
        op = entry.op
    else:
        from torch.testing._internal.common_modules import module_db

        found = [e for e in module_db if e.name == corpus["name"]]
        if not found:
            return f"this torch's ModuleInfo has no {corpus['name']}"
        entry = found[0]
        training = corpus["variant"] == "train"
        _seeded()
        made = entry.module_inputs_func(entry, device="cpu", dtype=dtype, requires_grad=True, training=training)
        made = [m for m in made if m.forward_input is not None]
        if index >= len(made):
            return f"ModuleInfo {corpus['name']} has {len(made)} samples here, not {index + 1}"
        ctor, fwd = made[index].constructor_input, made[index].forward_input
        leaves, tree = pytree.tree_flatten((tuple(fwd.args), dict(fwd.kwargs)))
        _seeded()  # as the suite: the module's parameters drawn right after seeding
        module = entry.module_cls(*ctor.args, **ctor.kwargs).float()
        module.train(training)
        op = module
    passed = corpus["passed"]
    if any(i >= len(leaves) or not isinstance(leaves[i], torch.Tensor) for i in passed):
        return "the rebuilt sample has no tensor where the row passed one"
    storages = [_storage(leaves[i].detach()) for i in passed]
    return storages, _runner(op, module, leaves, tree, passed)


def _storage(t: torch.Tensor) -> torch.Tensor:
    span = 0 if t.numel() == 0 else 1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride()))  # noqa: B905
    flat = t.as_strided([span], [1], t.storage_offset()).clone()
    return torch.cat([torch.zeros(t.storage_offset(), dtype=t.dtype), flat])


def _differs(spec: dict[str, Any], storages: list[torch.Tensor]) -> str | None:
    """Why the rebuilt inputs are not the row's (layout, or the bytes where they were saved), or None."""
    if len(storages) != len(spec["tensors"]):
        return f"the rebuilt sample passes {len(storages)} tensors, the row {len(spec['tensors'])}"
    for i, (rec, base) in enumerate(zip(spec["tensors"], storages)):  # noqa: B905 - same length, checked
        if str(base.dtype).removeprefix("torch.") != rec["dtype"] or base.numel() < rec["storage_offset"]:
            return f"input {i} of the rebuilt sample is not the row's ({base.dtype})"
        if rec["values"] is not None:
            saved = _base64.b64decode(rec["values"]["data"])
            mine = base[rec["storage_offset"] :].contiguous().view(torch.uint8).numpy().tobytes()
            if saved != mine:
                return f"input {i} of the rebuilt sample holds other values than the row's"
    return None


def _runner(op: Any, module: Any, leaves: list[Any], tree: Any, passed: list[int]) -> Runner:
    """The corpus call (corpus_calls.op_call / module_call): the passed tensors re-laid out as the
    sample had them, the held ones moved to the run's device and floating dtype."""
    is_tensor = [isinstance(x, torch.Tensor) for x in leaves]

    def run(xs: list[torch.Tensor], device: str, dtype: torch.dtype, round_to: Any = None) -> tuple[Any, list[Any]]:
        values = list(leaves)
        for j, i in enumerate(passed):
            values[i] = _relayout(xs[j], leaves[i])
        if module is None:
            first = next((x for x in xs if x.is_floating_point()), xs[0])
            for i, t in enumerate(is_tensor):
                if t and i not in passed:
                    values[i] = _relayout(_like(leaves[i], first), leaves[i])
            inp, args, kwargs = pytree.tree_unflatten(values, tree)
            return _as_outputs(op(inp, *args, **kwargs)), []
        with _cast(module, lambda t: _moved(t, device, dtype, round_to)):
            like = next(iter(module.parameters()), None) if not xs else xs[0]
            for i, t in enumerate(is_tensor):
                if t and i not in passed:
                    values[i] = _like(leaves[i], like)
            args, kwargs = pytree.tree_unflatten(values, tree)
            out = _as_outputs(module(*args, **kwargs))
            params = [(n, p) for n, p in module.named_parameters() if p.requires_grad and p.is_floating_point()]
            return {"output": out, "state": dict(module.named_buffers())}, params

    return run


def _moved(t: torch.Tensor, device: str, dtype: torch.dtype, round_to: Any) -> torch.Tensor:
    """A parameter or buffer in the run (parity's caster): floating ones in the dtype (the
    yardstick's rounded to it, held in float64), complex ones in its complex kin."""
    t = t.detach()
    if t.is_complex():
        return t.to(device, _KIN[round_to or dtype]).to(_KIN[dtype])
    if not t.is_floating_point():
        return t.to(device, copy=True)
    if round_to is not None:
        return t.to(device, round_to).to(torch.float64)
    return t.to(device, dtype, copy=True)


@contextmanager
def _cast(module: Any, convert: Callable[[torch.Tensor], torch.Tensor]) -> Iterator[None]:
    """The module's parameters and buffers as converted copies for the block (tied ones stay tied)."""
    saved: list[tuple[dict[str, Any], str, Any]] = []
    copies: dict[int, Any] = {}
    for sub in module.modules():
        for table, is_param in ((sub._parameters, True), (sub._buffers, False)):
            for name, value in list(table.items()):
                if value is None:
                    continue
                if id(value) not in copies:
                    made = convert(value)
                    if is_param:
                        made = torch.nn.Parameter(made, requires_grad=value.requires_grad and made.is_floating_point())
                    copies[id(value)] = made
                saved.append((table, name, value))
                table[name] = copies[id(value)]
    try:
        yield
    finally:
        for table, name, value in reversed(saved):
            table[name] = value


def _like(t: torch.Tensor, like: Any) -> torch.Tensor:
    if like is None:
        return t
    dtype = like.dtype if t.is_floating_point() and like.is_floating_point() else t.dtype
    return t.detach().to(like.device, dtype, copy=True)


def _relayout(t: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    if (like.is_contiguous() and like.storage_offset() == 0) or t.numel() == 0:
        return t
    if like.layout != torch.strided or (any(s == 0 for s in like.stride()) and like.numel() > 1):
        return t
    span = 1 + sum((n - 1) * s for n, s in zip(like.shape, like.stride()))  # noqa: B905
    base = torch.empty(like.storage_offset() + span, dtype=t.dtype, device=t.device)
    return base.as_strided(like.shape, like.stride(), like.storage_offset()).copy_(t)


def _as_outputs(obj: Any) -> Any:
    if isinstance(obj, torch.Tensor):
        if obj.layout != torch.strided:
            obj = obj.to_dense()
        return torch.view_as_real(obj.resolve_conj().resolve_neg()) if obj.is_complex() else obj
    if isinstance(obj, (bool, int, float)):
        return torch.tensor(obj)
    if isinstance(obj, (list, tuple)):
        return tuple(_as_outputs(o) for o in obj)
    if isinstance(obj, dict):
        return {k: _as_outputs(v) for k, v in obj.items()}
    return None
