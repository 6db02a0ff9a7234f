"""Timing a callable properly (torch): warm-up, device synchronisation, N repetitions in a budget.

``measure(fn, *args, work={"flops": 2*m*n*k})`` runs ``fn(*args)`` ``warmup`` times (kernel
selection, caches, TunableOp tuning, lazy initialisation), estimates one call's time, then times
as many repetitions as fit in ``budget_s`` (at least ``min_reps``, at most ``reps``). On a GPU each
repetition is bracketed by CUDA/HIP events on the current stream and the device is synchronised
once at the end (events time the device's work, not the launch); on the CPU by
``time.perf_counter``. A call faster than ``min_sample_s`` is repeated inside one sample, so the
timer's resolution and the loop's overhead do not dominate. The result is a
``stats.PerfRecord`` with the device's peak fraction when ``data/peaks.json`` knows the device.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import Any

import torch

from pytest_rocm.perf import peaks
from pytest_rocm.perf.stats import PerfRecord, build_perf_record, check_work


def device_of(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> torch.device:
    """The device of the first tensor among the arguments; the CPU when there is none."""
    for value in (*args, *kwargs.values()):
        if isinstance(value, torch.Tensor):
            return value.device
    return torch.device("cpu")


def arch_and_name(device: torch.device) -> tuple[str | None, str | None]:
    """(``gfx942`` / ``sm_90``, the device's name) of a GPU device; (None, None) on the CPU."""
    if device.type != "cuda":
        return None, None
    props = torch.cuda.get_device_properties(device)
    gcn = getattr(props, "gcnArchName", None)
    if torch.version.hip and gcn:
        return str(gcn).split(":", 1)[0], str(props.name)
    return f"sm_{props.major}{props.minor}", str(props.name)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _event() -> Any:
    return torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]


def _time_samples(call: Callable[[], Any], device: torch.device, samples: int, inner: int) -> list[float]:
    """Seconds per call of ``samples`` samples of ``inner`` calls each."""
    if device.type == "cuda":
        with torch.cuda.device(device):
            events = [(_event(), _event()) for _ in range(samples)]
            for start, end in events:
                start.record()
                for _ in range(inner):
                    call()
                end.record()
            torch.cuda.synchronize(device)
            return [start.elapsed_time(end) / 1e3 / inner for start, end in events]
    times = []
    for _ in range(samples):
        begin = time.perf_counter()
        for _ in range(inner):
            call()
        times.append((time.perf_counter() - begin) / inner)
    return times


def measure(
    fn: Callable[..., Any],
    *args: Any,
    work: Mapping[str, float] | None = None,
    warmup: int = 3,
    reps: int = 30,
    min_reps: int = 5,
    budget_s: float = 1.0,
    min_sample_s: float = 1e-3,
    name: str | None = None,
    dtype: str | None = None,
    backend: Mapping[str, Any] | None = None,
    device: torch.device | str | None = None,
    **kwargs: Any,
) -> PerfRecord:
    """Time ``fn(*args, **kwargs)`` and return its perf record (module docstring).

    ``work``: what one call does, ``{"flops": N}`` or ``{"bytes": N}`` (throughput in GFLOP/s or
    GB/s); ``dtype``: the dtype the peak is looked up for (``bfloat16``...); ``backend``: facts
    recorded next to the figure (``perf.backend.blas_facts``...)."""
    checked = check_work(work)
    if warmup < 0 or min_reps < 1 or reps < min_reps or not budget_s > 0:
        raise ValueError(
            f"need warmup >= 0, 1 <= min_reps <= reps and budget_s > 0, got {warmup}, {min_reps}, {reps}, {budget_s}"
        )
    where = torch.device(device) if device is not None else device_of(args, kwargs)

    def call() -> Any:
        return fn(*args, **kwargs)

    for _ in range(warmup):
        call()
    _sync(where)
    # one timed call estimates the cost: how many calls make a sample, how many samples fit
    estimate = max(_time_samples(call, where, 1, 1)[0], 1e-9)
    inner = max(1, math.ceil(min_sample_s / estimate))
    samples = int(min(reps, max(min_reps, budget_s // (estimate * inner))))
    times = _time_samples(call, where, samples, inner)
    arch, device_name = arch_and_name(where)
    kind = next(iter(checked), None)
    peak = peaks.peak_of(arch, device_name, kind, dtype) if arch and kind else None
    label = f"{where} ({arch}, {device_name})" if arch else str(where)
    return build_perf_record(times, checked, peak=peak, name=name, dtype=dtype, device=label, backend=backend)
