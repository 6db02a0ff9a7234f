"""What reading reports costs: two generated 10,000-row reports to an HTML table, CPU seconds.

The loader validates every record (report/1); records of the plain shape take a fast path, the
envelope and the rest the schema compiled to Python predicates (``env.fastschema``), and only an
invalid document meets jsonschema (whose descent alone took 4.5 s of CPU for these two reports,
and whose import 0.4 G instructions). Prints the CPU time of ``rocm-compat table A B -o t.html``
(``--diff``: ``rocm-compat diff A B``) in a child process, the median of ``--runs``. Target: under
0.5 s of CPU. It never fails on the figure.

Where the time goes (3.34 G instructions in all; docs/benchmarks.md has the figures): the HTML page
~40 % (``table/html.py _rows_table``, the cells' figures, ``table/grid.py feature_rows``), parsing
and checking the reports ~22 % (JSON with its duplicate-key hook, ``report/checks.py
plainly_valid``), building the table ~18 % (``table/model.py build_table``: ``_merge`` per record),
the interpreter and imports ~11 %, freeing it all the rest. The cyclic collector stays off from the
first report parsed to the last object freed (``cli/table.py``): none of it forms cycles.

    python benchmarks/bench_table_load.py [--rows 10000] [--runs 3] [--diff]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ENV = Path(__file__).resolve().parents[1] / "tests" / "data" / "envs" / "cpu_only.json"


def report(label: str, rows: int, failing: bool) -> dict[str, object]:
    results = [
        {
            "nodeid": f"suites/operators/test_x.py::test_op[{i}-float32]",
            "feature": f"operators/op{i % 500}[float32-{i}]",
            "suite": "operators",
            "outcome": "failed" if failing and i % 97 == 0 else "passed",
            "reason": None,
            "duration": 0.01,
            "parity": [
                {
                    "dtype": "float16",
                    "max_abs": 1e-3,
                    "max_rel": 1e-3,
                    "normwise": 1e-4,
                    "rtol": 1e-3,
                    "atol": 1e-5,
                    "ok": True,
                }
            ],
            "info": {},
        }
        for i in range(rows)
    ]
    env = json.loads(ENV.read_text())
    return {"schema": "pytest-rocm/report/1", "label": label, "environment": env, "results": results}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--diff", action="store_true", help="time `rocm-compat diff A B` instead")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        a, b = Path(tmp) / "a.json", Path(tmp) / "b.json"
        a.write_text(json.dumps(report("base", args.rows, False)))
        b.write_text(json.dumps(report("candidate", args.rows, True)))
        cpu = []
        for _ in range(args.runs):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            command = [sys.executable, "-m", "pytest_rocm.cli"]
            command += (
                ["diff", str(a), str(b)] if args.diff else ["table", str(a), str(b), "-o", str(Path(tmp) / "t.html")]
            )
            subprocess.run(command, check=not args.diff, capture_output=True)  # diff: exit 1, b regressed
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    what = "diffed" if args.diff else "to HTML"
    print(
        f"two {args.rows}-row reports {what}: {statistics.median(cpu):.2f} s of CPU (median of {args.runs}; target < 0.5 s)"
    )


if __name__ == "__main__":
    main()
