"""The boundary suite's mutant figure: bug classes caught / tried, per scale profile, and the time.

    python benchmarks/bench_boundary_mutants.py                 # ci and full, every mutant
    python benchmarks/bench_boundary_mutants.py --scale ci
    python benchmarks/bench_boundary_mutants.py --mutants gemm_fp16_ftz,max_pool_drops_nan

Each mutant (tests/suites/boundary_mutants.py: a public ROCm bug class, made on purpose in the
device runs only, at its condition) runs the boundary rows of its op family in a fresh process on the
CPU (``--rocm-device=cpu``); a mutant is *caught* when at least one row fails a parity comparison.
A control run without a mutant must have no failure. ``full`` on the CPU runs the three-way rows
without the big sizes (those need a GPU's memory and time: the labels in ``BIG`` are deselected
with ``-k``), which the script says next to the figure. Prints figures; never fails on them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "suites"))
from boundary_mutants import CONFTEST, MUTANTS  # noqa: E402

#: size labels of the full profile that the CPU cannot run in reasonable time or memory
BIG = ("65536", "65537", "262144", "1048577", "16777217", "4096", "4097", "8193", "b129", "b257", "m512")
BIG += ("s127", "s64", "s128", "c320", "q1024", "kv1025", "d128", "d256")


def run(mutant: str, family: str | None, scale: str, work: Path) -> tuple[list[str], int, float]:
    """(the rows that failed a parity comparison, rows, seconds) of one run."""
    plugin = work / f"mutant_{mutant}.py"
    plugin.write_text(CONFTEST.format(name=mutant))
    report = work / f"{mutant}-{scale}.json"
    select = [f"{family}/"] if family else []
    if scale == "full":
        select += [f"not {label}" for label in BIG]
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "suites/operators/test_boundary.py",
        "--rocm-device=cpu",
        f"--rocm-scale={scale}",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "-p",
        plugin.stem,
        f"--rocm-report={report}",
    ]
    if select:
        cmd += ["-k", " and ".join(select)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(work), os.environ.get("PYTHONPATH", "")])}
    start = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    seconds = time.perf_counter() - start
    results = json.loads(report.read_text())["results"]
    failed = [r["feature"] for r in results if r["outcome"] in ("failed", "error")]
    return failed, len(results), seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", choices=("ci", "full", "both"), default="both")
    parser.add_argument("--mutants", default=",".join(MUTANTS))
    args = parser.parse_args()
    chosen = [m for m in args.mutants.split(",") if m]
    unknown = [m for m in chosen if m not in MUTANTS]
    if unknown:
        print(f"bench_boundary_mutants: unknown mutant {unknown[0]!r} (known: {', '.join(MUTANTS)})", file=sys.stderr)
        return 2
    scales = ("ci", "full") if args.scale == "both" else (args.scale,)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for scale in scales:
            failed, rows, seconds = run("none", None, scale, work)
            note = " (CPU-feasible three-way rows: big sizes deselected)" if scale == "full" else ""
            print(f"[{scale}] control, no mutant: {len(failed)} of {rows} rows fail, {seconds:.0f} s{note}", flush=True)
            for feature in failed:
                print(f"    control failure: {feature}", flush=True)
            caught = 0
            for mutant in chosen:
                family, source = MUTANTS[mutant]
                failed, rows, seconds = run(mutant, family, scale, work)
                caught += bool(failed)
                verdict = "caught" if failed else "MISSED"
                line = f"[{scale}] {mutant}: {verdict}, {len(failed)}/{rows} {family} rows fail, {seconds:.0f} s  ({source})"
                print(line, flush=True)
            print(f"[{scale}] caught {caught} / {len(chosen)} bug classes", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
