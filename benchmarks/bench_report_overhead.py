"""What ``--rocm-report`` costs: the same 5,000 trivial tests with and without the report.

Generates the suite of ``bench_plugin_overhead.py`` (plain, parametrized and class tests), then
times ``pytest`` on it with ``--rocm-report=FILE`` and without (the plugin loaded in both),
alternating the two so drift in machine load hits both alike, and prints the ratio of the median
wall times and of the CPU times, and the figure to judge by: the median of the CPU-time ratios of
each pair of runs made one after the other. CPU time (user + system of pytest and its children),
not wall time: on a shared machine paired wall-time ratios of identical work spanned 0.78-1.63,
the neighbours' load, not the report. Target: <= 1.05. A per-test figure is printed too: the CPU
difference divided by the number of tests (target: under 50 us per trivial test). It prints the figures and never fails on them
(timing is not a test).

A run with the report needs the environment once (it goes into the report). It is detected in the
test process once the tests imported torch (here only with ``--suite-imports-torch``), else from
torch's installed files where they tell everything (a CPU build, as here: nothing imports torch),
else in a child process at the end (the test process never imports torch for it); the CPU time
counts the child, the wall time what a user waits for. ``--junitxml`` gives both variants a junit
file (its properties need the environment too, at the end). ``--env FILE`` gives both variants a
recorded environment (``--rocm-env``), which leaves the per-test cost alone.
``--suite-imports-torch`` adds a conftest.py that imports torch, as any suite that tests torch does:
then the detection's torch import is paid by both variants and what remains is the report's own.

    python benchmarks/bench_report_overhead.py [--tests 1000,5000,20000] [--runs 5]
        [--env tests/data/envs/cpu_only.json] [--suite-imports-torch] [--junitxml]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_plugin_overhead import run_pytest, write_suite


def run_once(root: Path, with_report: bool, env_file: str | None = None, junit: bool = False) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one pytest run with or without the report (``junit``: both
    with ``--junitxml``, whose properties need the environment too)."""
    options = ["-p", "no:randomly"] + ([f"--junitxml={root / 'junit.xml'}"] if junit else [])
    if env_file:
        options.append(f"--rocm-env={Path(env_file).resolve()}")
    if with_report:
        options.append(f"--rocm-report={root / 'reports' / 'bench.json'}")
    return run_pytest(root, options)


def measure_size(tests: int, runs: int, env: str | None, imports_torch: bool, junit: bool = False) -> None:
    """Time ``runs`` alternating pairs on a suite of ``tests`` trivial tests and print the figures."""
    with tempfile.TemporaryDirectory(prefix="rocm-bench-report-") as tmp:
        root = Path(tmp)
        write_suite(root, tests)
        if imports_torch:
            (root / "conftest.py").write_text("import torch  # noqa: F401  (as a suite that tests torch does)\n")
        run_once(root, True, env, junit)  # warm: bytecode caches, file system
        run_once(root, False, env, junit)
        runs_of: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
        pairs: list[float] = []  # with / without, of two runs next to each other
        for i in range(runs):
            for flag in (True, False) if i % 2 == 0 else (False, True):
                runs_of[flag].append(run_once(root, flag, env, junit))
            pairs.append(runs_of[True][-1][1] / runs_of[False][-1][1])
    where = f", recorded environment {env}" if env else ", environment detected"
    where += ", the suite imports torch" if imports_torch else ""
    where += ", both with --junitxml" if junit else ""
    print(f"suite: {tests} trivial tests, {runs} alternating runs per variant{where}, load {_load()}")
    for what, k in (("wall time", 0), ("CPU time", 1)):
        a = statistics.median(r[k] for r in runs_of[True])
        b = statistics.median(r[k] for r in runs_of[False])
        fa, fb = min(r[k] for r in runs_of[True]), min(r[k] for r in runs_of[False])
        print(
            f"{what:>9}: with --rocm-report {a:.3f} s, without {b:.3f} s,"
            f" ratio of medians {a / b:.3f}, of the fastest runs {fa / fb:.3f}"
        )
    cpu_with = statistics.median(r[1] for r in runs_of[True])
    per_test = (cpu_with - statistics.median(r[1] for r in runs_of[False])) / tests
    print(f"per test: {per_test * 1e6:.0f} us of CPU with the report (target < 50 us)")
    low, _, high = statistics.quantiles(pairs, n=4) if len(pairs) > 1 else (pairs[0], None, pairs[0])
    print(
        f"ratio (median of {len(pairs)} paired CPU-time ratios, with / without --rocm-report):"
        f" {statistics.median(pairs):.3f}, quartiles {low:.3f}-{high:.3f}  (target <= 1.05)"
    )


def _load() -> str:
    """The 1-minute load average when the figures were taken (a shared machine's noise)."""
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except OSError:
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", default="5000", help="suite size, or sizes: 1000,5000,20000 (default 5000)")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per variant (default 5)")
    parser.add_argument("--env", help="a recorded environment for both variants (no detection)")
    parser.add_argument("--suite-imports-torch", action="store_true", help="a conftest.py that imports torch")
    parser.add_argument("--junitxml", action="store_true", help="both variants with --junitxml")
    args = parser.parse_args(argv)
    try:
        sizes = [int(n) for n in str(args.tests).split(",")]
    except ValueError:
        parser.error(f"--tests {args.tests!r}: expected a number or numbers separated by commas")
    if any(n < 1 for n in sizes):
        parser.error(f"--tests {args.tests!r}: every size must be at least 1")
    for tests in sizes:
        measure_size(tests, args.runs, args.env, args.suite_imports_torch, args.junitxml)
    return 0


if __name__ == "__main__":
    sys.exit(main())
