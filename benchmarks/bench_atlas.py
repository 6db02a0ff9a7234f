"""What a fleet's atlas costs: ``rocm-compat atlas`` over N generated reports of M rows each.

The reports are a fleet's year: machines of four gfx (their environments from tests/data/envs:
real recorded ones), weekly runs on the combinations of the time (torch 2.6 to 2.13), every row with
a parity record, and outcomes that mostly hold from run to run but break and get fixed now and then
(so the histories have something to say). Prints the wall time of the atlas, the time of reading and
validating the same reports alone (the baseline, measured in the same run: the atlas' own work is the
ratio), the site's size and its largest page. Never fails on a figure.

    python benchmarks/bench_atlas.py [--reports 1000] [--rows 1000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ENVS = ROOT / "tests" / "data" / "envs"
#: (environment file, gfx of its device under test): four kinds of machine
MACHINES = [("mi300x_8", "gfx942"), ("mi210_4", "gfx90a"), ("rx7900xtx_rocm6", "gfx1100"), ("rx6800xt_igpu", "gfx1030")]
COMBINATIONS = [("2.6.0", "6.2.4"), ("2.7.1", "6.3"), ("2.8.0", "6.4"), ("2.10.0", "7.1"), ("2.13.0", "7.2")]
OUTCOMES = ["passed"] * 90 + ["failed"] * 4 + ["skipped"] * 3 + ["not-installed", "crashed", "xfailed"]
SUITES = ["operators", "models", "libraries"]


def feature(i: int) -> tuple[str, str]:
    suite = SUITES[i % 3]
    if suite == "libraries":
        library = ["bitsandbytes", "flash_attn", "triton", "xformers"][i % 4]
        return suite, f"libraries/accelerated-port/{library}/case{i}[bfloat16]"
    return suite, f"{suite}/op{i}[{'float16' if i % 2 else 'bfloat16'}]"


def generate(folder: Path, reports: int, rows: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    envs = {name: json.loads((ENVS / f"{name}.json").read_text()) for name, _ in MACHINES}
    # every machine kind has a few hosts; each row's outcome per (gfx) drifts slowly over time
    state = {(gfx, i): rng.choice(OUTCOMES) for _, gfx in MACHINES for i in range(rows)}
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    for n in range(reports):
        name, gfx = MACHINES[n % len(MACHINES)]
        host = f"node{n % 7:02d}"
        torch, rocm = COMBINATIONS[(n * len(COMBINATIONS)) // reports]
        env = json.loads(json.dumps(envs[name]))
        env["torch"], env["rocm"] = f"{torch}+rocm{rocm}", rocm
        results: list[dict[str, Any]] = []
        for i in range(rows):
            if rng.random() < 0.01:  # a row breaks or is fixed now and then
                state[(gfx, i)] = rng.choice(OUTCOMES)
            suite, feat = feature(i)
            outcome = state[(gfx, i)]
            results.append(
                {
                    "nodeid": f"suites/{suite}/test_x.py::test_{i}",
                    "feature": feat,
                    "suite": suite,
                    "outcome": outcome,
                    "reason": None if outcome == "passed" else f"AssertionError: row {i} on {gfx}",
                    "duration": 0.01,
                    "parity": [{"dtype": "bfloat16", "max_abs": 1e-3, "max_rel": 1e-3, "normwise": 1e-4,
                                "rtol": 1.6e-2, "atol": 1e-5, "ok": True}],
                    "info": {},
                }
            )  # fmt: skip
        created = (start + timedelta(hours=8 * n)).isoformat(timespec="seconds")
        document = {
            "schema": "pytest-rocm/report/1",
            "label": f"rocm torch{torch} rocm{rocm} {gfx}",
            "created": created,
            "environment": env,
            "device": "cuda:0",
            "machine": {"id": _machine_id(env), "host": host},
            "tool": {"name": "pytest-rocm", "version": "0.1.0"},
            "results": results,
        }
        day = folder / created[:10]
        day.mkdir(exist_ok=True)
        (day / f"{n:05d}.json").write_text(json.dumps(document))


def _machine_id(env: dict[str, Any]) -> str:
    sys.path.insert(0, str(ROOT))
    from pytest_rocm.report.fleet import machine_id

    return machine_id(env)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=int, default=1000)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--keep", type=Path, default=None, help="write the reports and the site here, and keep them")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from pytest_rocm import cli
    from pytest_rocm.atlas.collect import iter_reports

    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-atlas-"))
    reports, site = work / "reports", work / "site"
    reports.mkdir(parents=True, exist_ok=True)
    try:
        t = time.perf_counter()
        generate(reports, args.reports, args.rows)
        size_in = sum(p.stat().st_size for p in reports.rglob("*.json"))
        print(
            f"generated {args.reports} reports x {args.rows} rows ({size_in / 1e6:.0f} MB) in {time.perf_counter() - t:.1f} s"
        )
        t = time.perf_counter()
        count = sum(1 for _ in iter_reports([reports], []))  # one report at a time, as the atlas reads them
        read_s = time.perf_counter() - t
        assert count == args.reports, count
        t = time.perf_counter()
        status = cli.main(["atlas", str(reports), "-o", str(site)])
        atlas_s = time.perf_counter() - t
        files = [p for p in site.rglob("*") if p.is_file()]
        largest = max(files, key=lambda p: p.stat().st_size)
        total = sum(p.stat().st_size for p in files)
        print(f"baseline: read and validate the reports alone: {read_s:.1f} s")
        print(f"atlas: {atlas_s:.1f} s wall (exit {status}), {atlas_s / read_s:.2f}x the baseline")
        print(
            f"site: {len(files)} files, {total / 1e6:.1f} MB; largest {largest.relative_to(site)} {largest.stat().st_size / 1e6:.1f} MB"
        )
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
