"""What ``--rocm-report`` costs per test, counted in instructions (valgrind): a figure load cannot move.

On a shared 2-core machine the CPU time of identical pytest runs moves by 5-10 % with the
neighbours' load (caches, frequency), more than the report's whole cost; the number of
instructions a run executes does not (runs repeat to 0.01 %). This runs pytest under
``valgrind --tool=callgrind`` on two sizes of the trivial suite of ``bench_plugin_overhead.py``,
with and without ``--rocm-report`` (both with a recorded ``--rocm-env``, so no detection), and
prints the report's instructions per test (the slope between the two sizes, so start-up and the
final write drop out) and per run (the constant). To turn instructions into time it also times the
larger suite without valgrind and prints the per-test cost at that run's instructions per CPU
second (an estimate: the report's code runs cache-cold between two tests). Target: under 50 us of
CPU per trivial test. Slow (valgrind runs ~50x slower): minutes. It never fails on the figure.

    python benchmarks/bench_report_instructions.py [--tests 200,800] [--env tests/data/envs/cpu_only.json]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_plugin_overhead import run_pytest, write_suite

ROOT = Path(__file__).resolve().parents[1]
#: callgrind's total: "==123== Collected : 8808095147"
_COLLECTED = re.compile(r"Collected\s*:\s*([0-9]+)")


def instructions(root: Path, options: list[str]) -> int:
    """Instructions one ``pytest -q OPTIONS`` run in ``root`` executes (its children not counted)."""
    out = Path(root) / "callgrind.out"
    args = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, "-m", "pytest"]
    args += ["-q", "-p", "no:cacheprovider", "-p", "no:randomly", *options]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_ROCM_")}
    done = subprocess.run(args, cwd=root, env=env, capture_output=True, text=True)
    found = _COLLECTED.findall(done.stderr)
    if done.returncode != 0 or not found:
        raise SystemExit(
            f"pytest under valgrind failed ({done.returncode}):\n{done.stdout[-1500:]}{done.stderr[-1500:]}"
        )
    out.unlink(missing_ok=True)
    return int(found[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", default="200,800", help="two suite sizes (default 200,800)")
    parser.add_argument("--env", default=str(ROOT / "tests" / "data" / "envs" / "cpu_only.json"))
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        print("bench_report_instructions.py: valgrind is not installed here", file=sys.stderr)
        return 2
    try:
        small, large = sorted(int(n) for n in args.tests.split(","))
    except ValueError:
        parser.error(f"--tests {args.tests!r}: expected two sizes, such as 200,800")
    if not 0 < small < large:
        parser.error(f"--tests {args.tests!r}: expected two different sizes above 0")
    env_option = f"--rocm-env={Path(args.env).resolve()}"
    # for every run, the warm-up's too: one hash seed (a random one changes dict and set orders, and
    # with them the code paths pytest takes, by more than the report costs: 198k and 270k per test
    # were counted for the same code), and bytecode caches (the warm-up writes them, so no counted
    # run compiles what another did not)
    os.environ["PYTHONHASHSEED"] = "0"
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    counted: dict[tuple[int, bool], int] = {}
    cpu_per_instruction = 0.0
    for tests in (small, large):
        with tempfile.TemporaryDirectory(prefix="rocm-bench-instr-") as tmp:
            root = Path(tmp)
            write_suite(root, tests)
            report = f"--rocm-report={root / 'r.json'}"
            run_pytest(root, [env_option, report])  # warm: bytecode caches
            for with_report in (True, False):
                options = [env_option, report] if with_report else [env_option]
                counted[tests, with_report] = instructions(root, options)
            if tests == large:
                cpu = min(run_pytest(root, [env_option, report])[1] for _ in range(3))
                cpu_per_instruction = cpu / counted[large, True]
    extra = {n: counted[n, True] - counted[n, False] for n in (small, large)}
    per_test = (extra[large] - extra[small]) / (large - small)
    constant = extra[small] - per_test * small
    print(f"suite: {small} and {large} trivial tests, recorded environment, load {os.getloadavg()[0]:.1f}")
    for n in (small, large):
        print(
            f"  {n:>6} tests: {counted[n, True]:,} instructions with --rocm-report, {counted[n, False]:,} without"
            f" (+{extra[n]:,}, x{counted[n, True] / counted[n, False]:.4f})"
        )
    print(f"per test: {per_test:,.0f} instructions; per run: {constant:,.0f}")
    print(
        f"  at this machine's {1 / cpu_per_instruction / 1e9:.2f} G instructions per CPU second (the {large}-test run):"
        f" {per_test * cpu_per_instruction * 1e6:.1f} us per test (target < 50 us)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
