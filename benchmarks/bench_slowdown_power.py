"""Can the slowdown gate see a real slowdown, and does it stay quiet when nothing changed?

For each scale profile's budget (``ci``, ``full``: ``pytest_rocm.plugin.perf.BUDGETS``), many pairs
of measurements of one GEMM row through ``perf.measure`` are compared by the gate's own rule
(``report.perf.slowdown_of`` with ``--max-slowdown``):

- unchanged: the same row measured twice: a flagged slowdown (not marked noisy) is a false alarm;
- 1.3x and 2x: the row's candidate does 1.3 / 2 times the work (a longer K) under the same declared
  work, so its throughput drops by that factor: a flagged slowdown is a detection.

Variants are rotated within each pair so drift on a shared machine hits them alike. It prints, per
profile: false-alarm rate, detection rate at 1.3x and 2x, how often the row's recorded spread was
too wide to judge a 2x change (``spread >= 1``), and the seconds one measurement took. Timing is
not a test: it never fails.

    python benchmarks/bench_slowdown_power.py [--pairs 20] [--n 96] [--threads 1] [--profiles ci,full]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from pytest_rocm.perf.measure import measure
from pytest_rocm.plugin.perf import BUDGETS
from pytest_rocm.report.perf import slowdown_of


def _gemm(n: int, factor: float) -> tuple[torch.Tensor, torch.Tensor]:
    k = round(n * factor)
    return torch.randn(n, k), torch.randn(k, n)


def _measure(pair: tuple[torch.Tensor, torch.Tensor], n: int, budget: dict[str, float]) -> tuple[dict, float]:  # type: ignore[type-arg]
    a, b = pair
    start = time.perf_counter()
    record = measure(torch.mm, a, b, work={"flops": 2.0 * n * n * n}, **budget)
    return dict(record), time.perf_counter() - start


def run(profile: str, pairs: int, n: int, max_slowdown: float) -> None:
    budget = dict(BUDGETS[profile])
    inputs = {name: _gemm(n, f) for name, f in (("base", 1.0), ("1.3x", 1.3), ("2x", 2.0))}
    flagged = {"unchanged": 0, "1.3x": 0, "2x": 0}
    too_wide = 0
    seconds: list[float] = []
    for i in range(pairs):
        order = ["unchanged", "1.3x", "2x"]
        order = order[i % 3 :] + order[: i % 3]
        for variant in order:
            base, t_base = _measure(inputs["base"], n, budget)
            candidate, t_cand = _measure(inputs["base" if variant == "unchanged" else variant], n, budget)
            seconds += [t_base, t_cand]
            too_wide += sum(1 for r in (base, candidate) if float(r.get("spread") or 0) >= 1.0)
            found = slowdown_of("gemm", base, candidate, max_slowdown)
            if found is not None and not found.noisy:
                flagged[variant] += 1
    total = 2 * 3 * pairs
    print(
        f"{profile:5s} budget={budget}  pairs={pairs}  n={n}  threads={torch.get_num_threads()}\n"
        f"      false alarms {flagged['unchanged']}/{pairs}  detected 1.3x {flagged['1.3x']}/{pairs}  "
        f"detected 2x {flagged['2x']}/{pairs}  spread too wide to judge 2x: {too_wide}/{total}  "
        f"s per measurement: median {statistics.median(seconds):.3f}, max {max(seconds):.3f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument("--n", type=int, default=96, help="GEMM size (n x n x n); small: the ci rows are small")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--profiles", default="ci,full")
    parser.add_argument("--max-slowdown", type=float, default=1.25)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    for profile in args.profiles.split(","):
        run(profile.strip(), args.pairs, args.n, args.max_slowdown)


if __name__ == "__main__":
    main()
