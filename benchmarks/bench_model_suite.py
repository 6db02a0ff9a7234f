"""Serial wall time of the whole model suite on the CPU (budget: under 90 s).

    python benchmarks/bench_model_suite.py [--runs 1] [--warm]

Each run is ``python -m pytest suites/models --rocm-device=cpu -q -p no:cacheprovider`` in a
fresh process (torch and transformers imports and collection included, as a user sees it). By
default every run gets an empty inductor cache, so the ``compile`` row really compiles, as on a
fresh CI runner; ``--warm`` warms one cache first and reuses it. Besides the wall time it prints
the CPU time the run used (user + system, a figure less sensitive to other load on the machine),
the load average when it started, the slowest rows, and the time without the ``slow``
(torch.compile) row. It prints figures and never fails on them: timing is not a test. The exit
status is the suite's own (non-zero when a row failed).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUDGET_S = 90.0


@dataclass
class Run:
    wall: float
    cpu: float
    load: float
    summary: str
    returncode: int
    durations: dict[str, float]


def run_suite(cache: Path, report: Path, extra: list[str]) -> Run:
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(cache))
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "suites/models",
        "--rocm-device=cpu",
        "-q",
        "-p",
        "no:cacheprovider",
        f"--rocm-report={report}",
        *extra,
    ]
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    tail = [ln for ln in done.stdout.splitlines() if " in " in ln and ("passed" in ln or "failed" in ln)]
    summary = tail[-1].strip("= ") if tail else f"exit {done.returncode}: {done.stdout[-400:]}{done.stderr[-400:]}"
    durations: dict[str, float] = {}
    if report.exists():
        for result in json.loads(report.read_text())["results"]:
            durations[result["feature"]] = float(result.get("duration") or 0.0)
    return Run(wall, cpu, load, summary, done.returncode, durations)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1, help="how many timed runs (default 1)")
    parser.add_argument("--warm", action="store_true", help="reuse a warmed inductor cache")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")

    with tempfile.TemporaryDirectory(prefix="bench-models-") as tmp:
        base = Path(tmp)
        if args.warm:
            run_suite(base / "cache", base / "warmup.json", [])
        runs = []
        for i in range(args.runs):
            cache = base / "cache" if args.warm else base / f"cache-{i}"
            runs.append(run_suite(cache, base / f"report-{i}.json", []))

    best = min(runs, key=lambda r: r.wall)
    compile_s = sum(s for row, s in best.durations.items() if "/compile[" in row)
    cache_kind = "warm" if args.warm else "cold"
    print(f"model suite, serial, CPU, {cache_kind} inductor cache, {os.cpu_count()} cores")
    for i, run in enumerate(runs):
        print(
            f"  run {i + 1}: wall {run.wall:6.1f} s  cpu {run.cpu:6.1f} s  load avg at start "
            f"{run.load:4.1f}  [{run.summary}]"
        )
    print(
        f"  best wall {best.wall:.1f} s (budget {BUDGET_S:.0f} s: "
        f"{'within' if best.wall <= BUDGET_S else 'OVER'}); compile row {compile_s:.1f} s, "
        f"without it (-m 'not slow') about {best.wall - compile_s:.1f} s"
    )
    slowest = sorted(best.durations.items(), key=lambda kv: kv[1], reverse=True)[:5]
    print("  slowest rows: " + ", ".join(f"{row} {s:.1f} s" for row, s in slowest))
    return max(r.returncode for r in runs)


if __name__ == "__main__":
    sys.exit(main())
