"""perf.measure against the anchors: torch.utils.benchmark.Timer and pytest-benchmark, same ops.

Each op is timed, in rotating order within every round (so drift on a shared machine hits all of
them alike), by ``measure`` at the ``ci`` and the ``full`` budget, by
``Timer.blocked_autorange`` and, when pytest-benchmark is installed, by pytest-benchmark (one
pytest run per op and round, its median read from ``--benchmark-json``). It prints, per op and
thread count, each method's median over the rounds, its ratio to ``blocked_autorange`` and the
spread of the method's own figures across rounds. Timing is not a test: it never fails.

    pip install -e ".[bench]"   # pytest-benchmark, else its column is left out
    python benchmarks/bench_perf_vs_anchors.py [--rounds 5] [--threads 1,2] [--no-pytest-benchmark]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable
from pathlib import Path

import torch
from torch.utils.benchmark import Timer

from pytest_rocm.perf.measure import measure
from pytest_rocm.plugin.perf import BUDGETS

#: name -> (setup code building the inputs, the statement timed)
OPS: dict[str, tuple[str, str]] = {
    "mm64": ("a = torch.randn(64, 64); b = torch.randn(64, 64)", "torch.mm(a, b)"),
    "mm512": ("a = torch.randn(512, 512); b = torch.randn(512, 512)", "torch.mm(a, b)"),
    "add4M": ("a = torch.randn(1 << 22); b = torch.randn(1 << 22)", "torch.add(a, b)"),
    "softmax": ("a = torch.randn(256, 1024)", "torch.softmax(a, -1)"),
}


def _inputs(setup: str) -> dict[str, object]:
    scope: dict[str, object] = {"torch": torch}
    exec(setup, scope)
    return scope


def by_measure(profile: str) -> Callable[[str, str], float]:
    def run(setup: str, stmt: str) -> float:
        call = eval(f"lambda: {stmt}", _inputs(setup))  # compiled once: no eval per call
        return float(measure(call, **BUDGETS[profile])["median_s"])

    return run


def by_timer(setup: str, stmt: str) -> float:
    return float(
        Timer(stmt=stmt, setup=setup, globals={"torch": torch}, num_threads=torch.get_num_threads())
        .blocked_autorange(min_run_time=0.5)
        .median
    )


def by_pytest_benchmark(setup: str, stmt: str) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        test = Path(tmp) / "test_op.py"
        test.write_text(
            textwrap.dedent(
                f"""
                import torch
                torch.set_num_threads({torch.get_num_threads()})
                {setup}

                def test_op(benchmark):
                    benchmark(lambda: {stmt})
                """
            )
        )
        out = Path(tmp) / "bench.json"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:rocm",
                "-p",
                "no:randomly",
                str(test),
                f"--benchmark-json={out}",
            ],
            check=True,
            capture_output=True,
            cwd=tmp,
        )
        return float(json.loads(out.read_text())["benchmarks"][0]["stats"]["median"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--no-pytest-benchmark", action="store_true")
    args = parser.parse_args()
    methods: dict[str, Callable[[str, str], float]] = {
        "measure ci": by_measure("ci"),
        "measure full": by_measure("full"),
        "blocked_autorange": by_timer,
    }
    if not args.no_pytest_benchmark:
        if importlib.util.find_spec("pytest_benchmark"):
            methods["pytest-benchmark"] = by_pytest_benchmark
        else:  # said, not silently left out: the figures would look complete without it
            print("pytest-benchmark is not installed: its column is left out (pip install -e '.[bench]')")
    for threads in (int(t) for t in args.threads.split(",")):
        torch.set_num_threads(threads)
        print(f"threads={threads}")
        for op, (setup, stmt) in OPS.items():
            figures: dict[str, list[float]] = {name: [] for name in methods}
            names = list(methods)
            for i in range(args.rounds):
                for name in names[i % len(names) :] + names[: i % len(names)]:
                    figures[name].append(methods[name](setup, stmt))
            anchor = statistics.median(figures["blocked_autorange"])
            cells = []
            for name, values in figures.items():
                median = statistics.median(values)
                spread = (max(values) - min(values)) / median if median else 0.0
                cells.append(f"{name} {median * 1e6:9.1f} us x{median / anchor:5.2f} (rounds spread {spread:4.2f})")
            print(f"  {op:8s} " + " | ".join(cells))


if __name__ == "__main__":
    main()
