"""Wall time of the whole operator suite on the CPU: serial and with ``-n 2`` (pytest-xdist).

    python benchmarks/bench_operator_suite.py [--runs 1] [--cold] [--workers 2]

Each run is ``python -m pytest suites/operators --rocm-device=cpu -q -p no:cacheprovider`` in a
fresh process (torch import and collection included, as a user sees it). ``--cold`` gives every run
an empty inductor cache, so torch.compile really compiles (the first run on a machine); otherwise
the cache in a temporary folder is warmed once first. Also prints the time of the ``compile``
tests alone (from the report's per-test durations). Budget: serial under 180 s on 2 cores.
It prints figures and never fails on them (timing is not a test).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUDGET_S = 180.0


def run_suite(extra: list[str], cache: Path, report: Path) -> tuple[float, str, float]:
    """(wall seconds, pytest's summary line, seconds spent in compile tests)."""
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(cache))
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "suites/operators",
        "--rocm-device=cpu",
        "-q",
        "-p",
        "no:cacheprovider",
        f"--rocm-report={report}",
        *extra,
    ]
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    lines = [ln for ln in done.stdout.splitlines() if re.search(r"\d+ (passed|failed)", ln)]
    summary = lines[-1].strip("= ") if lines else f"exit {done.returncode}: {done.stdout[-300:]}"
    for line in done.stdout.splitlines():  # a timing of a failing suite is worth less: say what failed
        if line.startswith(("FAILED", "ERROR")):
            summary += "\n      " + line
    compile_s = 0.0
    if report.exists():
        results = json.loads(report.read_text()).get("results", [])
        compile_s = sum(
            r.get("duration") or 0.0 for r in results if str(r.get("feature", "")).startswith("operators/compile")
        )
    return wall, summary, compile_s


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1, help="runs per configuration (median shown)")
    parser.add_argument("--workers", type=int, default=2, help="xdist workers of the parallel run")
    parser.add_argument("--cold", action="store_true", help="empty inductor cache for every run")
    args = parser.parse_args()
    if args.runs < 1 or args.workers < 1:
        print("bench_operator_suite: --runs and --workers must be >= 1", file=sys.stderr)
        return 2

    configs = {"serial": [], f"-n {args.workers}": ["-n", str(args.workers)]}
    with tempfile.TemporaryDirectory(prefix="bench-ops-") as tmp:
        shared_cache = Path(tmp) / "inductor"
        if not args.cold:
            run_suite(["-m", "compile"], shared_cache, Path(tmp) / "warm.json")
        print(
            f"operator suite, --rocm-device=cpu, {os.cpu_count()} CPUs, "
            f"inductor cache {'cold' if args.cold else 'warm'}"
        )
        for label, extra in configs.items():
            walls, compiles, summary = [], [], ""
            for i in range(args.runs):
                # no spaces in the path: inductor passes it to the C++ compiler unquoted
                cache = Path(tmp) / f"cold-{label.replace(' ', '')}-{i}" if args.cold else shared_cache
                cache.mkdir(parents=True, exist_ok=True)
                wall, summary, compile_s = run_suite(extra, cache, Path(tmp) / f"{label.replace(' ', '')}-{i}.json")
                walls.append(wall)
                compiles.append(compile_s)
            wall = statistics.median(walls)
            verdict = "within" if wall <= BUDGET_S else "OVER"
            print(
                f"  {label:7s} wall {wall:6.1f} s ({verdict} the {BUDGET_S:.0f} s budget); "
                f"compile tests {statistics.median(compiles):5.1f} s; {summary}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
