"""A standalone reproducer of one failed parity check, written by ``rocm-compat repro``.

It needs only torch. It rebuilds the inputs exactly (shape, dtype, strides, storage offset and
the saved values; a corpus row's sample from torch's own OpInfo/ModuleInfo database, by op,
variant, dtype and sample index), runs the op on the device in each failing dtype and on the CPU
in float64, prints the figures, and judges them with the check's own criterion and tolerance:
  exit 1: the failure reproduces;  exit 0: it does not;
  exit 2: the script cannot run here (no such device, no such op in this torch, the op raised);
  exit 3: not known (the values were not recorded: these inputs are stand-ins, and they passed).
Run: python THIS_FILE [--device cuda|cpu]

Why this module is long: it is one standalone script (it may import nothing but torch), and each
criterion it judges by (elementwise, cpu-relative, the model yardstick) is written out in it.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import math
import sys
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_map

# Everything below the line is data written by rocm-compat repro (Python literals only).
SPEC: dict[str, Any] = {}  # rocm-compat repro: SPEC

_COMPLEX = {torch.float64: torch.complex128, torch.float32: torch.complex64, torch.float16: torch.complex32}


def resolve(name: str) -> Any:
    """The op: attribute lookups from ``torch`` (``torch.nn.functional.conv2d``, ``torch.ops.aten.mm.default``)."""
    obj: Any = torch
    for part in name.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


def storage(spec: dict[str, Any], index: int) -> tuple[torch.Tensor, bool]:
    """The tensor's storage from its offset on, in its recorded dtype (True: stand-in values)."""
    dtype = getattr(torch, spec["dtype"])
    shape, stride, offset = spec["shape"], spec["stride"], spec["storage_offset"]
    numel = math.prod(shape)
    span = 0 if numel == 0 else 1 + sum((n - 1) * s for n, s in zip(shape, stride))  # noqa: B905 - Python 3.9 has no strict=
    values = spec["values"]
    if values is not None:
        if values["byteorder"] != sys.byteorder:
            sys.exit(f"the values were saved {values['byteorder']}-endian; this machine is {sys.byteorder}-endian")
        raw = bytearray(base64.b64decode(values["data"]))
        flat = torch.frombuffer(raw, dtype=torch.uint8).view(dtype) if raw else torch.empty(0, dtype=dtype)
        stand_in = False
    else:
        gen = torch.Generator().manual_seed(index)
        if dtype.is_floating_point or dtype.is_complex:
            flat = torch.randn(span, generator=gen, dtype=torch.float64).to(dtype)
        elif dtype == torch.bool:
            flat = torch.randint(0, 2, (span,), generator=gen).bool()
        else:
            flat = torch.randint(0, 8, (span,), generator=gen).to(dtype)
        stand_in = True
    return torch.cat([torch.zeros(offset, dtype=dtype), flat]), stand_in


def run_dtype(dtype: torch.dtype, run: torch.dtype) -> torch.dtype:
    """A floating input runs in the dtype under test, a complex one in its complex kin, others as they are."""
    if dtype.is_complex:
        return _COMPLEX[run]
    return run if dtype.is_floating_point else dtype


def inputs(tensors: list[torch.Tensor], device: str, dtype: torch.dtype, round_to: Any = None) -> list[torch.Tensor]:
    """Each input on ``device`` in the run's dtype, in its recorded strides and storage offset
    (``round_to``: the model criterion's yardstick, rounded to that dtype and held in float64)."""
    out = []
    for spec, base in zip(SPEC["tensors"], tensors):  # noqa: B905 - one storage per spec
        if round_to is not None:
            base = base.to(device, run_dtype(base.dtype, round_to), copy=True).to(run_dtype(base.dtype, dtype))
        else:
            base = base.to(device, run_dtype(base.dtype, dtype), copy=True)
        out.append(base.as_strided(spec["shape"], spec["stride"], spec["storage_offset"]))
    return out


class RoundTo(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """The model criterion's yardstick: every float64 result of every op rounded to ``dtype`` (an op
    that writes its arguments: what it wrote, where it lies), as the check computed it."""

    def __init__(self, dtype: torch.dtype) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.dtype = dtype

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if getattr(func, "is_view", False):
            return out
        schema = func._schema
        unannotated = (3, 4) if func is torch.ops.aten.native_batch_norm.default else ()
        if not schema.is_mutable and not unannotated:
            return tree_map(self.rounded, out)
        for i, arg in enumerate(schema.arguments):
            if (arg.alias_info is not None and arg.alias_info.is_write) or i in unannotated:
                tree_map(self.round_in_place, args[i] if i < len(args) else kwargs.get(arg.name))
        if not isinstance(out, tuple):
            return out if schema.returns[:1] and schema.returns[0].alias_info is not None else self.rounded(out)
        returns = schema.returns
        return tuple(
            o if i < len(returns) and returns[i].alias_info is not None else tree_map(self.rounded, o)
            for i, o in enumerate(out)
        )

    def rounded(self, t: Any) -> Any:
        return t.to(self.dtype).to(torch.float64) if isinstance(t, torch.Tensor) and t.dtype == torch.float64 else t

    def round_in_place(self, t: Any) -> Any:
        if isinstance(t, torch.Tensor) and t.dtype == torch.float64:
            with torch.no_grad():
                t.copy_(t.to(self.dtype))
        return t


def build(obj: Any, given: list[torch.Tensor], values: list[Any], device: str, dtype: torch.dtype) -> Any:
    """A recorded argument: an input, an earlier op's output, or data (the run's device and dtype)."""
    if isinstance(obj, dict) and ("tensor" in obj or "input" in obj):
        return given[obj["tensor"] if "tensor" in obj else obj["input"]]
    if isinstance(obj, dict) and "value" in obj:
        step, k = obj["value"]
        return values[step] if k < 0 else values[step][k]
    if isinstance(obj, dict) and "tuple" in obj:
        return tuple(build(o, given, values, device, dtype) for o in obj["tuple"])
    if isinstance(obj, dict) and "list" in obj:
        return [build(o, given, values, device, dtype) for o in obj["list"]]
    if isinstance(obj, dict) and "dtype" in obj:
        return dtype if obj["dtype"] == "run" else getattr(torch, obj["dtype"])
    if isinstance(obj, dict) and "device" in obj:
        return torch.device(device)
    if isinstance(obj, dict) and "memory_format" in obj:
        return getattr(torch, obj["memory_format"])
    if isinstance(obj, dict) and "layout" in obj:
        return torch.strided
    if isinstance(obj, dict) and "float" in obj:
        return float(obj["float"])
    return obj


def leaves(obj: Any, path: str) -> list[tuple[str, Any]]:
    if obj is None or isinstance(obj, torch.Tensor):
        return [(path, obj)]
    if isinstance(obj, (list, tuple)):
        return [leaf for i, o in enumerate(obj) for leaf in leaves(o, f"{path}[{i}]")]
    if isinstance(obj, dict):
        return [leaf for k in sorted(obj, key=repr) for leaf in leaves(obj[k], f"{path}[{k!r}]")]
    raise TypeError(f"the op returned a {type(obj).__name__}: not tensors")


def call(given: list[torch.Tensor], device: str, dtype: torch.dtype, round_to: Any = None) -> tuple[Any, list[Any]]:
    """The op on these inputs, or the recorded program of aten ops, step by step (and no module
    parameters: a corpus row's runner returns its module's)."""
    return recorded_call(given, device, dtype), []


def recorded_call(given: list[torch.Tensor], device: str, dtype: torch.dtype) -> Any:
    if "program" not in SPEC:
        args = [build(a, given, [], device, dtype) for a in SPEC["args"]]
        kwargs = {k: build(v, given, [], device, dtype) for k, v in SPEC["kwargs"].items()}
        return resolve(SPEC["op"])(*args, **kwargs)
    values: list[Any] = []
    for step in SPEC["program"]["steps"]:
        args = [build(a, given, values, device, dtype) for a in step["args"]]
        kwargs = {k: build(v, given, values, device, dtype) for k, v in step["kwargs"].items()}
        values.append(resolve(step["op"])(*args, **kwargs))
    return build(SPEC["program"]["result"], given, values, device, dtype)


def outputs(
    tensors: list[torch.Tensor], device: str, dtype: torch.dtype, runner: Any = call, round_to: Any = None
) -> list[tuple[str, Any]]:
    """The outputs (complex ones as real pairs), and with ``grad`` the gradients of the check's own
    fixed random projection of them: ``sum(out_i * w_i)``, ``w_i`` from a generator seeded ``seed + i``,
    with respect to the floating inputs and then the module's parameters (a ModuleInfo row).
    ``round_to``: the model criterion's yardstick run (float64, every result rounded to that dtype)."""
    given = inputs(tensors, device, dtype, round_to)
    leaves_in = []
    if SPEC["grad"]:
        for i, t in enumerate(given):
            if t.is_floating_point():
                leaves_in.append(t.requires_grad_(True))
                given[i] = t.clone()  # a non-leaf, so an in-place op works under autograd too
    with torch.set_grad_enabled(SPEC["grad"]), RoundTo(round_to) if round_to is not None else contextlib.nullcontext():
        result, params = runner(given, device, dtype, round_to)
        found = leaves(result, "out")
        grads: list[tuple[str, Any]] = []
        if SPEC["grad"]:
            loss = None
            for i, (_, t) in enumerate(found):
                if t is None or not t.is_floating_point() or not t.requires_grad:
                    continue
                gen = torch.Generator().manual_seed(SPEC["seed"] + i)
                acc = torch.float64 if t.dtype == torch.float64 else torch.float32
                w = torch.randn(t.shape, generator=gen, dtype=torch.float64).to(t.device, acc)
                term = (t.to(acc) * w).sum()
                loss = term if loss is None else loss + term
            if loss is None:
                raise TypeError("grad: no floating output depends on a floating input")
            got = torch.autograd.grad(loss, leaves_in + [p for _, p in params], allow_unused=True)
            names = [f"grad[{i}]" for i in range(len(leaves_in))] + [f"grad[{name}]" for name, _ in params]
            grads = list(zip(names, got))  # noqa: B905 - one gradient per name
    found = [(p, None if t is None else t.detach()) for p, t in found] + grads
    return [(p, None if t is None else torch.view_as_real(t.resolve_conj()) if t.is_complex() else t) for p, t in found]


def max_error(got: torch.Tensor, ref: torch.Tensor) -> float:
    d = (got.detach().cpu().to(torch.float64) - ref).abs()
    d = torch.where(torch.isfinite(d), d, 0.0)
    return float(d.max()) if d.numel() else 0.0


def judge(
    got: torch.Tensor, ref: torch.Tensor, tol: dict[str, Any], floor: float, yard: Any = None
) -> tuple[bool, str]:
    """(failed, figures): the check's criterion (elementwise; exact for integer outputs; ``yard``:
    the model criterion's yardstick output, judged by its normwise and max error)."""
    g = got.detach().cpu()
    if g.shape != ref.shape or g.is_floating_point() != ref.is_floating_point():
        return True, f"structure: got {tuple(g.shape)} {g.dtype}, reference {tuple(ref.shape)} {ref.dtype}"
    if not ref.is_floating_point():
        bad = int((g != ref).sum())
        return bad > 0, f"exact: {bad}/{ref.numel()} differ"
    g = g.to(torch.float64)
    d = (g - ref).abs()
    finite = torch.isfinite(ref)
    same = (g == ref) | (torch.isnan(g) & torch.isnan(ref))
    d = torch.where(finite, d, torch.where(same, 0.0, math.inf))
    if ref.numel() == 0:
        return False, "empty output"
    max_abs = float(d.max())
    if not math.isfinite(max_abs):
        bad = int((~torch.isfinite(d)).sum())
        return True, f"non-finite: {bad}/{ref.numel()} elements where output and reference disagree on inf/nan"
    ref_abs = torch.where(finite, ref.abs(), 0.0)
    norm = float(torch.linalg.vector_norm(ref_abs))
    rms = norm / math.sqrt(ref.numel())
    normwise = float(torch.linalg.vector_norm(d)) / norm if norm > 0 else (0.0 if max_abs == 0 else math.inf)
    max_rel = float((d / ref.abs()).nan_to_num(nan=0.0, posinf=0.0).max())
    figures = f"max_abs {max_abs:.3g}  max_rel {max_rel:.3g}  normwise {normwise:.3g}"
    if yard is not None:
        return judge_model(g, ref, d, yard, tol, figures, normwise, norm, rms)
    slack = tol["atol"] + tol["normwise"] * rms
    excess = d - tol["rtol"] * ref.abs()
    bad = excess > slack
    if floor > 0:
        bad &= d > floor
    n_bad = int(bad.sum())
    if not n_bad:
        return False, f"{figures}; within tolerance (rtol {tol['rtol']:.3g}, atol {tol['atol']:.3g})"
    ratio = torch.where(bad, (excess - slack) / (ref.abs() * tol["rtol"] + slack), -1.0)
    flat = int(ratio.reshape(-1).argmax())
    bound = max(slack + tol["rtol"] * float(ref.abs().reshape(-1)[flat]), floor)
    return True, worst(g, ref, d, flat, figures, bound, n_bad)


def worst(g: torch.Tensor, ref: torch.Tensor, d: torch.Tensor, flat: int, figures: str, bound: float, n: int) -> str:
    err, got_v, ref_v = float(d.reshape(-1)[flat]), float(g.reshape(-1)[flat]), float(ref.reshape(-1)[flat])
    return (
        f"{figures}; elementwise |err| {err:.3g} > {bound:.3g}, {n}/{ref.numel()} off "
        f"(worst: got {got_v:.6g}, expected {ref_v:.6g})"
    )


def judge_model(
    g: torch.Tensor,
    ref: torch.Tensor,
    d: torch.Tensor,
    yard: torch.Tensor,
    tol: dict[str, Any],
    figures: str,
    normwise: float,
    norm: float,
    rms: float,
) -> tuple[bool, str]:
    """``mode="model"``: normwise <= k_n x the yardstick's + acc, and no element beyond
    k_e x the yardstick's max error + atol + acc x rms(reference)."""
    yd = (yard.detach().cpu().to(torch.float64) - ref).abs()
    yd = torch.where(torch.isfinite(yd), yd, 0.0)
    y_max = float(yd.max())
    y_norm = float(torch.linalg.vector_norm(yd)) / norm if norm > 0 else (0.0 if y_max == 0 else math.inf)
    acc = tol["accumulation"]
    bound_norm = tol["normwise_factor"] * y_norm + acc
    bound_elem = tol["cpu_factor"] * y_max + tol["atol"] + acc * rms
    bad = d > bound_elem
    n_bad = int(bad.sum())
    if n_bad:
        return True, worst(g, ref, d, int(d.reshape(-1).argmax()), figures, bound_elem, n_bad)
    if normwise > bound_norm:
        return True, (
            f"{figures}; normwise error {normwise:.3g} > {tol['normwise_factor']:g}x the yardstick's {y_norm:.3g}"
            f" + {acc:.2g}"
        )
    return False, f"{figures}; within the model yardstick (normwise <= {bound_norm:.3g}, |err| <= {bound_elem:.3g})"


def main() -> int:
    parser = argparse.ArgumentParser(description=SPEC["title"])
    parser.add_argument("--device", default=SPEC["device"], help=f"where the op runs (default {SPEC['device']})")
    device = parser.parse_args().device
    print(f"{SPEC['title']}\ntorch {torch.__version__}, HIP {torch.version.hip}, CUDA {torch.version.cuda}")
    if device != "cpu" and not torch.cuda.is_available():
        print(
            f"cannot run: no {device} device here (torch.cuda.is_available() is False); --device cpu checks the script"
        )
        return 2
    if device != "cpu":
        print(f"device: {torch.cuda.get_device_name(device)}")
    runner: Any = call
    # a corpus row: its sample rebuilt from torch's database (the corpus part below); None: from
    # the recorded values and ops instead (another torch, and every value was saved)
    rebuilt = corpus_runner(SPEC) if "corpus" in SPEC else None  # type: ignore[name-defined]  # noqa: F821
    if isinstance(rebuilt, str):
        print(rebuilt)
        return 2
    if rebuilt is not None:
        tensors, runner = rebuilt
        stand_in = False
    else:
        for name in [SPEC["op"]] + [step["op"] for step in SPEC.get("program", {}).get("steps", [])]:
            try:
                resolve(name)
            except (AttributeError, RuntimeError):
                print(f"cannot run: this torch has no {name}")
                return 2
        built = [storage(spec, i) for i, spec in enumerate(SPEC["tensors"])]
        tensors = [t for t, _ in built]
        stand_in = any(s for _, s in built)
    if stand_in:
        print("values not recorded for some inputs: they are random stand-ins, not the row's values")
    refs = outputs(tensors, "cpu", torch.float64, runner)
    failed, judged = False, 0
    for name in SPEC["dtypes"]:
        dtype, tol = getattr(torch, name), SPEC["tolerances"][name]
        print(f"{name}: the check recorded: {SPEC['recorded'].get(name, '?')}")
        got = outputs(tensors, device, dtype, runner)
        cpu = None
        if SPEC["mode"] == "cpu-relative":
            cpu = outputs(tensors, "cpu", dtype, runner)
        elif SPEC["mode"] == "model" and name != "float64":  # float64 has no yardstick: judged as absolute
            cpu = outputs(tensors, "cpu", torch.float64, runner, round_to=dtype)
        if [p for p, _ in got] != [p for p, _ in refs]:
            print(f"  {name} on {device}: FAILS: outputs {[p for p, _ in got]}, reference {[p for p, _ in refs]}")
            failed = True
            continue
        for i, ((path, ref), (_, value)) in enumerate(zip(refs, got)):  # noqa: B905 - same length, checked
            if ref is None or value is None:
                continue
            ref = ref.detach().to(torch.float64) if ref.is_floating_point() else ref.detach()
            if SPEC["keep_overflow"] and ref.is_floating_point() and value.is_floating_point():
                rounded = ref.to(value.dtype).to(torch.float64)  # the dtype's overflow is what a right kernel returns
                ref = torch.where(torch.isinf(rounded) & torch.isfinite(ref), rounded, ref)
            floor, yard = 0.0, None
            if cpu is not None and cpu[i][1] is not None and ref.is_floating_point():
                if SPEC["mode"] == "model":
                    yard = cpu[i][1]
                else:
                    floor = tol.get("cpu_factor", 2.0) * max_error(cpu[i][1], ref) + tol["atol"]
            elif cpu is not None and cpu[i][1] is not None:
                ref = cpu[i][1].detach()  # integers: against the same-dtype CPU run, as the check did
            bad, figures = judge(value, ref, tol, floor, yard)
            failed, judged = failed or bad, judged + 1
            print(f"  {name} {path} on {device}: {'FAILS' if bad else 'passes'}: {figures}")
    if failed:
        print("the failure reproduces (exit 1)")
        return 1
    if not judged:
        print("cannot run: the op returned no tensor to compare (exit 2)")
        return 2
    if stand_in:
        print("not known: it passed, but on stand-in values (exit 3)")
        return 3
    print("the failure does not reproduce here (exit 0)")
    return 0


# rocm-compat repro: CORPUS


def guarded() -> int:
    """main(), where an error of the op or of this torch is "cannot run" (2), never a crash's 1,
    which would read as "the failure reproduces"."""
    try:
        return main()
    except Exception as exc:  # the op's own error, whatever its class
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        print(f"cannot run: {type(exc).__name__}: {first}")
        return 2


if __name__ == "__main__":
    sys.exit(guarded())
