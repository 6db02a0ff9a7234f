"""How long ``rocm-compat vet`` takes on large packages.

Times the static scan (read, rules, verdict; nothing imported) of installed distributions —
torch's own (about 12,000 files, 750 MB with its 430 MB libtorch_cpu.so) and transformers
(about 2,900 Python files) by default — and of any wheels or sdists named with ``--file``
(for example one fetched with ``pip download --no-deps -d /tmp/w bitsandbytes==0.45.5``).
Each target is vetted ``--runs`` times in a fresh process (cold Python, warm disk cache) and
the median is printed. Target: well under a minute each on a 2-core machine. It prints the
figures and never fails on them (timing is not a test).

    python benchmarks/bench_vet.py [--dist torch --dist transformers] [--file X.whl] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from importlib import metadata

TARGET_SECONDS = 60.0


def vet_once(spec: str) -> tuple[float, dict]:
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_rocm.cli", "vet", spec, "--json"], capture_output=True, text=True
    )
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"bench_vet: vet {spec} exited {proc.returncode}: {proc.stderr.strip()}")
    return elapsed, json.loads(proc.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dist", action="append", help="installed distribution (default: torch, transformers)")
    parser.add_argument("--file", action="append", default=[], help="a wheel, sdist or folder")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    targets = []
    for name in args.dist or ["torch", "transformers"]:
        try:
            metadata.distribution(name)
            targets.append(name)
        except metadata.PackageNotFoundError:
            print(f"  {name}: not installed, skipped")
    targets += args.file
    print(f"{'target':<40} {'files':>7} {'class':>5} {'scan s':>7} {'total s':>8}  (median of {args.runs})")
    worst = 0.0
    for spec in targets:
        times, scans, doc = [], [], {}
        for _ in range(args.runs):
            elapsed, doc = vet_once(spec)
            times.append(elapsed)
            scans.append(doc["seconds"])
        total = statistics.median(times)
        worst = max(worst, total)
        print(
            f"{spec[-40:]:<40} {doc['files_scanned']:>7} {doc['class']:>5} "
            f"{statistics.median(scans):>7.1f} {total:>8.1f}"
        )
    verdict = "within" if worst < TARGET_SECONDS else "OVER"
    print(f"slowest {worst:.1f} s: {verdict} the {TARGET_SECONDS:.0f} s target")
    return 0


if __name__ == "__main__":
    sys.exit(main())
