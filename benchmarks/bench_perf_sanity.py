"""Are the perf figures sane? ``pytest_rocm.perf.measure`` against the same work timed by hand.

1. GEMM: ``torch.mm`` of N x N float32 matrices through ``measure`` and through a plain
   ``perf_counter`` loop (warm-up, then the median of the repetitions): the two GFLOP/s should agree
   (ratio near 1), and both stay below what the cores can do (printed: cores x a generous 64
   FP32 FLOP/cycle x the clock from /proc/cpuinfo, an AVX-512 FMA upper bound).
2. Bandwidth: ``torch.add(a, b, out=c)`` over arrays far larger than the caches (3 passes over
   memory) through ``measure``, next to this machine's copy bandwidth measured with ``numpy.copyto``
   (2 passes; a STREAM-copy-like figure): the add's GB/s must not exceed it by much (it cannot
   beat the memory).

It prints the figures and never fails on them (timing is not a test). On a GPU (``--device cuda``)
the same comparisons run with CUDA/HIP events, and the peak from data/peaks.json is printed.

    python benchmarks/bench_perf_sanity.py [--n 1024] [--numel 33554432] [--device cpu] [--dtype float32]
    python benchmarks/bench_perf_sanity.py --device cuda --n 8192 --dtype bfloat16   # on a GPU
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np
import torch

from pytest_rocm.perf.measure import measure


def _by_hand(fn, reps: int, device: torch.device) -> float:  # type: ignore[no-untyped-def]
    for _ in range(3):
        fn()
    times = []
    for _ in range(reps):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        start = time.perf_counter()
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _cpu_bound() -> str:
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            mhz = max(float(line.split(":")[1]) for line in cpuinfo if line.startswith("cpu MHz"))
    except (OSError, ValueError):
        return "unknown clock"
    cores = os.cpu_count() or 1
    return f"{cores * 64 * mhz / 1e3:.0f} GFLOP/s ({cores} cores x 64 FLOP/cycle x {mhz:.0f} MHz)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1024, help="GEMM size (default 1024)")
    parser.add_argument("--numel", type=int, default=1 << 25, help="elements per array for the bandwidth (default 32M)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--dtype", default="float32", help="GEMM dtype (bfloat16 on a GPU: %% of peak)")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, device {device}")

    n = args.n
    dtype = getattr(torch, args.dtype)
    a, b = torch.randn(n, n, device=device, dtype=dtype), torch.randn(n, n, device=device, dtype=dtype)
    flops = 2 * n**3
    record = measure(torch.mm, a, b, work={"flops": flops}, dtype=args.dtype, reps=args.reps, budget_s=3.0)
    hand = flops / _by_hand(lambda: torch.mm(a, b), args.reps, device) / 1e9
    print(
        f"GEMM {n}^3 {args.dtype}: measure {record['throughput']:.1f} GFLOP/s (spread ±{record['spread']:.0%},"
        f" {record['reps']} reps), by hand {hand:.1f} GFLOP/s, ratio {record['throughput'] / hand:.2f}"
    )
    if device.type == "cpu":
        print(f"  upper bound of this CPU: {_cpu_bound()}")
    else:
        print(f"  peak fraction: {record['peak_fraction']} ({record['device']})")

    numel = args.numel
    x, y = torch.randn(numel, device=device), torch.randn(numel, device=device)
    out = torch.empty_like(x)
    add = measure(torch.add, x, y, out=out, work={"bytes": 3 * numel * 4}, reps=args.reps, budget_s=3.0)
    print(
        f"add of {numel * 4 / 2**20:.0f} MiB arrays: measure {add['throughput']:.2f} GB/s (spread ±{add['spread']:.0%})"
    )
    if device.type == "cpu":
        src, dst = np.ones(numel, dtype=np.float32), np.empty(numel, dtype=np.float32)
        numpy_gbs = 2 * numel * 4 / _by_hand(lambda: np.copyto(dst, src), args.reps, device) / 1e9
        torch_gbs = 2 * numel * 4 / _by_hand(lambda: out.copy_(x), args.reps, device) / 1e9
        best = max(numpy_gbs, torch_gbs)
        print(
            f"  this machine's copy bandwidth, timed by hand (2 passes): numpy.copyto (1 thread) {numpy_gbs:.2f} GB/s,"
            f" torch copy_ ({torch.get_num_threads()} threads) {torch_gbs:.2f} GB/s;"
            f" add / best copy: {add['throughput'] / best:.2f} (must not be well above 1)"
        )
    else:
        print(f"  peak fraction: {add['peak_fraction']} ({add['device']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
