"""Overhead of assert_parity against the hand-written check it replaces.

Hand-written: run fn on a float64 CPU copy (the reference) and on a float32 copy on the device,
then ``torch.testing.assert_close(out.double(), ref, rtol, atol)``. assert_parity does the same
runs and computes max_abs, max_rel, normwise error, n_bad and the worst element on top. Prints the
ratio for a 1M-element output (target <= 1.2); it does not assert, timings vary by machine.

    python benchmarks/bench_parity_overhead.py [--numel 1000000] [--repeat 30]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from functools import partial

import torch

from pytest_rocm.parity.check import assert_parity


def hand_written(fn: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, device: torch.device) -> None:
    ref = fn(x.to("cpu", torch.float64, copy=True))
    out = fn(x.to(device, torch.float32, copy=True))
    torch.testing.assert_close(out.to("cpu", torch.float64), ref, rtol=1.3e-6, atol=1e-5)


def with_parity(fn: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, device: torch.device) -> None:
    assert_parity(fn, x, dtypes=("float32",), device=device)


def interleaved(runs: list[Callable[[], None]], repeat: int) -> list[list[float]]:
    """Alternate the contenders so that load from elsewhere on the machine hits both alike."""
    times: list[list[float]] = [[] for _ in runs]
    for _ in range(repeat):
        for run, bucket in zip(runs, times, strict=False):
            start = time.perf_counter()
            run()
            bucket.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--numel", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    x = torch.randn(args.numel, generator=torch.Generator().manual_seed(0))
    for label, fn in (("relu", torch.relu), ("x*2+1", lambda t: t * 2 + 1)):
        for run in (hand_written, with_parity):  # warm-up
            run(fn, x, device)
        hand, par = interleaved(
            [partial(hand_written, fn, x, device), partial(with_parity, fn, x, device)], args.repeat
        )
        print(
            f"{label:8s} numel={args.numel} device={device}: assert_close {min(hand) * 1e3:.2f} ms, "
            f"assert_parity {min(par) * 1e3:.2f} ms (best of {args.repeat}); "
            f"ratio {min(par) / min(hand):.2f} "
            f"(median {statistics.median(par) / statistics.median(hand):.2f}; target <= 1.2)"
        )


if __name__ == "__main__":
    main()
