"""What pytest-rocm costs a suite that does not use it.

Generates a suite of 5,000 tests without GPU marks (plain functions, parametrized ones, a class,
some ordinary pytest marks), then times ``pytest`` on it with the plugin and with ``-p no:rocm``,
alternating the two so drift in machine load hits both alike, and prints the ratio of the median
CPU times (user + system of the pytest process; wall time is printed too, but on a shared
machine it measures the neighbours as much as pytest).
Target: <= 1.01. It prints the figure and never fails on it (timing is not a test).

    python benchmarks/bench_plugin_overhead.py [--tests 5000] [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FILES = 50


def write_suite(root: Path, total: int) -> int:
    """``total`` tests (exactly) over up to FILES modules, none using pytest-rocm; returns the count.

    Each module mixes a parametrized function, a class, one marked test and plain functions, in
    that order of priority, so a small suite is small (it once never went below 1,550)."""
    files = max(1, min(FILES, total // 31 or 1))
    written = 0
    for f in range(files):
        count = total // files + (1 if f < total % files else 0)
        lines = ["import pytest", ""]
        param = min(20, count)
        if param:
            lines += [
                f"@pytest.mark.parametrize('x', range({param}))",
                "def test_param(x):",
                "    assert x * 2 >= x",
                "",
            ]
        methods = min(10, count - param)
        if methods:
            lines += ["class TestGroup:"]
            for i in range(methods):
                lines += [f"    def test_m{i}(self):", f"        assert {i} + 1 == {i + 1}"]
            lines.append("")
        marked = min(1, count - param - methods)
        if marked:
            lines += ["@pytest.mark.slow", "def test_marked():", "    assert True", ""]
        for i in range(count - param - methods - marked):
            lines += [f"def test_plain_{i}():", f"    assert {i} == {i}", ""]
        (root / f"test_gen_{f:02d}.py").write_text("\n".join(lines))
        written += count
    (root / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: a slow test\n")
    return written


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_pytest(root: Path, options: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one ``pytest -q OPTIONS`` run in ``root``, a fresh interpreter
    without the PYTEST_ROCM_ variables of the caller (shared with bench_report_overhead.py)."""
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *options]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_ROCM_")}
    cpu0, start = _children_cpu(), time.perf_counter()
    done = subprocess.run(args, cwd=root, env=env, capture_output=True, text=True)
    elapsed, cpu = time.perf_counter() - start, _children_cpu() - cpu0
    if done.returncode != 0:
        raise SystemExit(f"pytest failed ({done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return elapsed, cpu


def run_once(root: Path, with_plugin: bool) -> tuple[float, float]:
    """One run with the plugin, or without it (``-p no:rocm``)."""
    return run_pytest(root, [] if with_plugin else ["-p", "no:rocm"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=5000, help="suite size (default 5000)")
    parser.add_argument("--runs", type=int, default=7, help="timed runs per variant (default 7)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="rocm-bench-") as tmp:
        root = Path(tmp)
        write_suite(root, args.tests)
        run_once(root, True)  # warm: bytecode caches, file system
        run_once(root, False)
        runs: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
        for i in range(args.runs):
            # alternate which goes first so a trend in machine load does not favour one side
            for flag in (True, False) if i % 2 == 0 else (False, True):
                runs[flag].append(run_once(root, flag))
    print(f"suite: {args.tests} tests without GPU marks, {args.runs} alternating runs per variant")
    for what, k in (("CPU time", 1), ("wall time", 0)):
        a = statistics.median(r[k] for r in runs[True])
        b = statistics.median(r[k] for r in runs[False])
        print(f"{what:>9}: with pytest-rocm {a:.3f} s, with -p no:rocm {b:.3f} s, ratio {a / b:.3f}")
    # CPU time is the figure to judge: wall time also counts whatever else the machine is doing
    a = statistics.median(r[1] for r in runs[True])
    b = statistics.median(r[1] for r in runs[False])
    print(f"ratio (median CPU time with / without): {a / b:.3f}  (target <= 1.01)")
    # noise only ever adds time, so the fastest runs are the least disturbed estimate
    fa, fb = min(r[1] for r in runs[True]), min(r[1] for r in runs[False])
    print(f"ratio of the fastest runs' CPU time:     {fa / fb:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
