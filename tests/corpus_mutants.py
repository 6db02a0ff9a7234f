"""Real, public ROCm numerics bug classes, each made on purpose at its condition in the device runs
only: a pytest plugin (``-p corpus_mutants``) for the corpus suite, the break named by the variable
``CORPUS_MUTANT``.

Breaking only the device under test: parity compares the device run (``dev is`` the session's
``rocm_device``) with the float64 CPU reference and, in ``cpu-relative`` mode, with a CPU run in the
same dtype; with ``--rocm-device=cpu`` all of them run here. The plugin wraps
``pytest_rocm.parity.check._run`` so the break is active only in the run on the device object the
test was given, forward and backward (a ``TorchDispatchMode`` sees the aten ops below autograd).

None of these classes is in suites/known_issues, and the corpus has no row written for any of them:
the point is whether PyTorch's own samples reach the condition.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import pytest_rocm.parity.check as check

aten = torch.ops.aten
FACTOR = 1.05
#: ``CORPUS_MUTANT_SCOPE=dtype``: break every run in a low-precision dtype, the CPU's same-dtype
#: run included (a bug of the CPU backend itself, as the CPU baseline must catch), not only the
#: run on the device under test
SCOPE = "CORPUS_MUTANT_SCOPE"


def _column_major(t: Any) -> bool:
    return isinstance(t, torch.Tensor) and t.dim() >= 2 and t.stride(-2) == 1 and t.stride(-1) != 1 and t.shape[-1] > 1


def _dup(index: Any) -> bool:
    return isinstance(index, torch.Tensor) and index.numel() > 1 and index.unique().numel() < index.numel()


_BN = (aten.native_batch_norm.default, aten._native_batch_norm_legit.default)
_BN_EVAL = (aten._native_batch_norm_legit_no_training.default,)
_UPSAMPLE = (aten.upsample_bilinear2d.default, aten.upsample_bilinear2d.vec)


def _bn_training(f: Any, a: tuple[Any, ...]) -> bool:
    return f in _BN and len(a) > 5 and bool(a[5])


#: name -> (public report, condition(func, args) -> True where the bug fires, what it does)
#: what it does: "output" scales the first output by FACTOR, "grad_weight" the second output,
#: "running_mean" the running mean buffer after the op, "inv_var" calls the op with 1/running_var
MUTANTS: dict[str, tuple[str, Callable[[Any, tuple[Any, ...]], bool], str]] = {
    # hipBLASLt: fp32 GEMM with both operands transposed (TT) returns wrong numbers
    "gemm_tt_fp32": (
        "https://github.com/ROCm/TheRock/issues/7870",
        lambda f, a: (
            (
                (f in (aten.mm.default, aten.bmm.default) and _column_major(a[0]) and _column_major(a[1]))
                or (f == aten.addmm.default and _column_major(a[1]) and _column_major(a[2]))
            )
            and a[-1].dtype == torch.float32
        ),
        "output",
    ),
    # MIOpen: batch-norm backward dscale wrong for odd spatial sizes (147x147, 73x73, 35x35)
    "bn_backward_odd_spatial": (
        "https://github.com/ROCm/MIOpen/issues/2024",
        lambda f, a: (
            f == aten.native_batch_norm_backward.default
            and a[1].dim() == 4
            and (a[1].shape[2] * a[1].shape[3]) % 2 == 1
        ),
        "grad_weight",
    ),
    # MIOpen: spatial batch-norm backward wrong for 2-d (N, C) inputs
    "bn_backward_2d": (
        "https://github.com/ROCm/MIOpen/issues/1109",
        lambda f, a: f == aten.native_batch_norm_backward.default and a[1].dim() == 2,
        "output",
    ),
    # MIOpen: training batch norm accumulates fp error into the mean (running statistics drift)
    "bn_running_mean_drift": (
        "https://github.com/ROCm/MIOpen/pull/3900",
        lambda f, a: _bn_training(f, a) and isinstance(a[3], torch.Tensor),
        "running_mean",
    ),
    # hipDNN/MIOpen: batch-norm inference treats the inverse variance as the variance
    "bn_inference_inv_variance": (
        "https://github.com/ROCm/rocm-libraries/issues/2459",
        lambda f, a: f in _BN_EVAL or (f in _BN and len(a) > 5 and not a[5] and isinstance(a[4], torch.Tensor)),
        "inv_var",
    ),
    # ROCm: bf16 accumulation with repeated indices stops advancing (index_put/index_add/scatter_add)
    "bf16_duplicate_index_accumulate": (
        "https://github.com/pytorch/pytorch/pull/198199",
        lambda f, a: (
            (
                (f in (aten.index_add.default, aten.scatter_add.default) and _dup(a[2]))
                or (
                    f in (aten.index_put.default, aten._index_put_impl_.default)
                    and len(a) > 3
                    and bool(a[3])
                    and any(_dup(i) for i in a[1] if i is not None)
                )
            )
            and a[0].dtype == torch.bfloat16
        ),
        "output",
    ),
    # HIP: bilinear interpolation of an input whose memory is not aligned/contiguous shows artifacts
    "interpolate_unaligned": (
        "https://github.com/pytorch/pytorch/issues/187064",
        lambda f, a: f in _UPSAMPLE and (not a[0].is_contiguous() or a[0].storage_offset() != 0),
        "output",
    ),
    # MIOpen: Conv2d with a stride > 1 and a kernel larger than the stride is wrong on MI250X
    "conv_strided_large_kernel": (
        "https://github.com/pytorch/pytorch/issues/102968",
        lambda f, a: (
            f == aten.convolution.default
            and not a[6]
            and any(s > 1 for s in a[3])
            and any(k > s for k, s in zip(a[1].shape[2:], a[3], strict=False))
        ),
        "output",
    ),
}


def _scaled(out: Any, index: int) -> Any:
    if isinstance(out, torch.Tensor):
        return out * FACTOR
    items = list(out)
    items[index] = items[index] * FACTOR
    return type(out)(items) if not hasattr(out, "_fields") else type(out)(*items)


class Break(TorchDispatchMode):
    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.fired = 0

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        _, condition, effect = MUTANTS[self.name]
        try:
            hit = condition(func, args)
        except Exception:  # an op whose arguments the condition does not expect
            hit = False
        if not hit:
            return func(*args, **kwargs)
        self.fired += 1
        if effect == "inv_var":
            args = list(args)
            args[4] = 1.0 / args[4]  # running_var, in both overloads
            return func(*args, **kwargs)
        out = func(*args, **kwargs)
        if effect == "running_mean":
            args[3].mul_(FACTOR)
            return out
        return _scaled(out, 1 if effect == "grad_weight" else 0)


@pytest.fixture(autouse=True)
def break_the_device_run(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    name = os.environ.get("CORPUS_MUTANT")
    if not name or "rocm_device" not in request.fixturenames:
        return
    if name not in MUTANTS:
        raise pytest.UsageError(f"CORPUS_MUTANT={name!r} is not one of {', '.join(MUTANTS)}")
    device = request.getfixturevalue("rocm_device")
    real_run = check._run
    everywhere = os.environ.get(SCOPE) == "dtype"

    def run(fn: Any, args: Any, kwargs: Any, dev: Any, dtype: Any, *rest: Any, **more: Any) -> Any:
        # device scope: the float64 reference and the same-dtype CPU run are left alone; dtype
        # scope: every run computed in a low-precision dtype is broken (a bug of the CPU's own
        # kernels): only the float64 runs, the reference and the model yardstick, are left alone
        emulated = (len(rest) > 1 and rest[1] is not None) or more.get("round_to") is not None  # (spec, round_to)
        if (dtype == torch.float64 or emulated) if everywhere else dev is not device:
            return real_run(fn, args, kwargs, dev, dtype, *rest, **more)
        with Break(name):
            return real_run(fn, args, kwargs, dev, dtype, *rest, **more)

    monkeypatch.setattr(check, "_run", run)
