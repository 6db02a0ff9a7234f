"""How many tests the plugin's own test suite has, all of them and the fast loop's (``-m "not slow"``).

    python benchmarks/bench_test_counts.py            # counts, by pytest's own collection (seconds)
    python benchmarks/bench_test_counts.py --record   # ... written to benchmarks/figures.json
    python benchmarks/bench_test_counts.py --time     # ... and the fast loop timed, -n 2 (minutes)

Collection only, unless ``--time``: nothing runs. The counts are pytest's (``N tests collected``,
``N/M tests collected (K deselected)``), with ``-p no:randomly`` so they do not depend on a seed.
``--time --record`` records the fast loop's wall time as well; the whole suite's time (several
minutes on 2 idle cores) is measured with ``time python -m pytest -n 2`` and kept in
figures.json by hand with its date.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASE = [sys.executable, "-m", "pytest", "tests", "-q", "-p", "no:randomly", "-p", "no:cacheprovider"]


def collected(*args: str) -> int:
    """pytest's count of the tests it would run with these arguments."""
    out = subprocess.run([*BASE, "--collect-only", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    found = re.search(r"(\d+)(?:/\d+)? tests? collected", out.stdout)
    if not found:
        raise SystemExit(f"bench_test_counts: no count in pytest's output: {(out.stdout + out.stderr)[-400:]}")
    return int(found.group(1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record", action="store_true", help="write the figures to benchmarks/figures.json")
    parser.add_argument("--time", action="store_true", help='also time the fast loop (-m "not slow" -n 2)')
    args = parser.parse_args()
    every, fast = collected(), collected("-m", "not slow")
    print(f"the plugin's tests: {every:,}; the fast loop (-m 'not slow'): {fast:,}")
    seconds = None
    if args.time:
        start = time.perf_counter()
        subprocess.run([*BASE, "-m", "not slow", "-n", "2"], cwd=ROOT, check=False, stdout=subprocess.DEVNULL)
        seconds = round(time.perf_counter() - start)
        print(f"the fast loop, -n 2: {seconds} s wall")
    if args.record:
        from figures import record  # benchmarks/figures.py, beside this script

        how = "python benchmarks/bench_test_counts.py --record"
        record("plugin_tests", every, what="the plugin's own tests", unit="tests", how=how)
        record("plugin_tests_fast", fast, what='the fast loop: -m "not slow"', unit="tests", how=how)
        if seconds is not None:
            record(
                "plugin_tests_fast_s",
                seconds,
                what='the fast loop, -m "not slow" -n 2, wall',
                unit="s",
                how=how + " --time",
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
