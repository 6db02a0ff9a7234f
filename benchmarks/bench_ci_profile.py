"""Time of every bundled suite in one scale profile, serially, on the CPU: per suite and in total.

    python benchmarks/bench_ci_profile.py                       # ci profile, all suites (budget 300 s)
    python benchmarks/bench_ci_profile.py --scale full -k sdpa  # full profile, -k passed to pytest
    python benchmarks/bench_ci_profile.py --suites operators,models
    python benchmarks/bench_ci_profile.py --memory              # largest full rows, estimated from shapes
    python benchmarks/bench_ci_profile.py --collect-only        # items per suite, nothing run (seconds)
    python benchmarks/bench_ci_profile.py --record              # ... and write the totals to figures.json

Each suite is ``python -m pytest suites/<suite> --rocm-device=cpu --rocm-scale=<scale> -q -p
no:cacheprovider --rocm-report=...`` in a fresh process (torch import and collection included, as a
user sees it), one after the other. Printed per suite: wall time, CPU time (user + system of the
process and its children: less sensitive to a busy machine than wall time), peak resident memory,
pytest's summary line and the slowest rows. Suites are the folders under suites/ that hold tests,
so a suite added later is timed too (the corpus suite among them); the last lines give each
suite's share of the total. ``--record`` writes the totals of an unfiltered run of every suite
(items; with a run, CPU and wall seconds) into ``benchmarks/figures.json``, which the docs quote
(``benchmarks/figures.py``). The ci budget is 5 minutes (300 s) serial on 2 cores, all suites;
the verdict line reads wall time, which a busy machine inflates: read the CPU time beside it. The
script prints figures and never fails on them (timing is not a test). ``full`` on a CPU is slow (minutes per
SDPA or SDXL row): select rows with ``-k``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SUITES = ROOT / "suites"
BUDGET_S = {"ci": 300.0}
GIB = 1 << 30


def suites() -> list[str]:
    """Folders under suites/ with test files, operators/libraries/models first."""
    found = sorted(p.name for p in SUITES.iterdir() if p.is_dir() and any(p.glob("test_*.py")))
    first = [s for s in ("operators", "libraries", "models") if s in found]
    return first + [s for s in found if s not in first]


def run_suite(suite: str, scale: str, extra: list[str], report: Path, log: Path) -> dict[str, Any]:
    """Run one suite in a child process; wall, CPU seconds, peak RSS, summary, slowest rows."""
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        f"suites/{suite}",
        "--rocm-device=cpu",
        f"--rocm-scale={scale}",
        "-q",
        "-p",
        "no:cacheprovider",
        f"--rocm-report={report}",
        *extra,
    ]
    start = time.perf_counter()
    with open(log, "w", encoding="utf-8") as out:
        child = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(child.pid, 0)  # this child's own resource usage
        child.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    text = log.read_text(encoding="utf-8", errors="replace")
    lines = [ln for ln in text.splitlines() if re.search(r"\d+ (passed|failed|skipped|deselected|error)", ln)]
    summary = lines[-1].strip("= ") if lines else f"exit {child.returncode}: {text[-300:]}"
    failures = [ln for ln in text.splitlines() if ln.startswith(("FAILED", "ERROR"))]
    slowest: list[tuple[float, str]] = []
    shares: dict[str, tuple[int, float]] = {}
    if report.exists():
        results = json.loads(report.read_text()).get("results", [])
        slowest = sorted(((r.get("duration") or 0.0, r["feature"]) for r in results), reverse=True)[:3]
        shares = row_shares(results)
    return {
        "wall": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "rss": usage.ru_maxrss * 1024,  # KiB on Linux
        "summary": summary,
        "failures": failures,
        "slowest": slowest,
        "shares": shares,
    }


#: generated rows, timed apart from the hand-written ones (their row names start so)
GENERATED = ("boundary/", "opinfo/", "moduleinfo/")


def row_shares(results: list[dict[str, Any]]) -> dict[str, tuple[int, float]]:
    """(rows, seconds of test time) per generated family of rows (``boundary/``...), the rest apart."""
    shares: dict[str, tuple[int, float]] = {}
    for r in results:
        key = next((g for g in GENERATED if str(r.get("feature", "")).startswith(g)), "hand-written")
        rows, seconds = shares.get(key, (0, 0.0))
        shares[key] = (rows + 1, seconds + float(r.get("duration") or 0.0))
    return shares


# -- memory of the full rows, estimated from their shapes -----------------------------------------
def _numel(*shape: int) -> int:
    return math.prod(shape)


def row_bytes(family: str, shape: Any) -> int:
    """Rough peak of one full row on the CPU-as-device: the float32 inputs, the float64 reference's
    copies (input, the clone autograd sees, gradient: 3 x 8 bytes per element) and output, and the
    device run's (3 x 4 bytes per element, fp32 being the widest), plus the attention matrices the
    math backend materializes (scores, probabilities and their gradients: 4 x S_q x S_k, fp32)."""
    if family == "ATTENTION":
        a = shape
        qkv = _numel(a.batch, a.heads, a.seq_q, a.head_dim) + 2 * _numel(a.batch, a.kv_heads, a.seq_k, a.head_dim)
        if a.gqa == "repeat":
            qkv += 2 * _numel(a.batch, a.heads, a.seq_k, a.head_dim)
        ins, out = qkv, _numel(a.batch, a.heads, a.seq_q, a.head_dim)
        extra = 4 * _numel(a.batch, a.heads, a.seq_q, a.seq_k) * 4
    elif family == "GEMM":
        g, b = shape, max(shape.batch, 1)
        ins = b * (g.m * g.k * (3 if g.layout == "a_sliced" else 2 if g.layout == "a_step2" else 1) + g.k * g.n)
        out, extra = b * g.m * g.n, 0
        if not g.grad:
            return ins * 4 + (ins + out) * 8 + (ins + out) * 4
    elif family == "CONV":
        c = shape
        ins = _numel(c.batch, c.in_ch, c.size, c.size) + _numel(c.out_ch, c.in_ch, c.kernel, c.kernel)
        out, extra = _numel(c.batch, c.out_ch, c.size // c.stride, c.size // c.stride), 0
    elif family == "NORM":
        n = shape
        ins = _numel(n.rows, n.features, *((n.spatial, n.spatial) if n.spatial else ()))
        out, extra = ins, 0
    elif family == "SOFTMAX":
        ins = out = shape.rows * shape.cols
        extra = 0
    elif family == "REDUCTION":
        ins, out, extra = shape.numel, shape.numel if shape.op == "cumsum" else 1, 0
    elif family == "EMBEDDING":
        ins, out, extra = shape.vocab * shape.dim, shape.tokens * shape.dim, 0
    else:
        return 0
    return ins * 4 + (3 * ins + out) * 8 + (3 * ins + out) * 4 + extra


def memory_table(top: int = 8) -> list[tuple[int, str]]:
    sys.path.insert(0, str(SUITES / "operators"))
    import shapes  # the suite's shape tables (the folder is not a package)

    rows = []
    for family in ("ATTENTION", "GEMM", "CONV", "NORM", "SOFTMAX", "REDUCTION", "EMBEDDING"):
        for case, (_, full) in getattr(shapes, family).items():
            if full is not None:
                rows.append((row_bytes(family, full), f"{family.lower()}: {case}"))
    return sorted(rows, reverse=True)[:top]


def collect_suite(suite: str, scale: str, extra: list[str]) -> int:
    """How many items one suite has in a profile: pytest's own count, nothing run."""
    cmd = [sys.executable, "-m", "pytest", f"suites/{suite}", "--rocm-device=cpu", f"--rocm-scale={scale}"]
    cmd += ["--collect-only", "-q", "-p", "no:cacheprovider", *extra]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False).stdout
    found = re.search(r"(\d+)(?:/\d+)? tests? (?:collected|selected)", out)
    if not found:
        raise SystemExit(f"bench_ci_profile: no count in pytest's output for {suite}: {out[-300:]}")
    return int(found.group(1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", choices=("ci", "full"), default="ci")
    parser.add_argument("--suites", default="", help="comma-separated suites (default: all under suites/)")
    parser.add_argument("-k", dest="keyword", default=None, help="passed to pytest -k (select rows)")
    parser.add_argument("--memory", action="store_true", help="print the largest full rows' memory estimate and exit")
    parser.add_argument("--collect-only", action="store_true", help="count each suite's items, run nothing")
    parser.add_argument("--record", action="store_true", help="write the totals to benchmarks/figures.json")
    args = parser.parse_args()

    if args.memory:
        print("largest rows of the full profile, estimated peak memory (CPU as the device):")
        for size, name in memory_table():
            print(f"  {size / GIB:6.1f} GiB  {name}")
        return 0

    chosen = [s for s in args.suites.split(",") if s] or suites()
    unknown = [s for s in chosen if not (SUITES / s).is_dir()]
    if unknown:
        print(f"bench_ci_profile: no suite {', '.join(unknown)} under {SUITES}", file=sys.stderr)
        return 2
    extra = ["-k", args.keyword] if args.keyword else []
    whole = not extra and not args.suites  # only an unfiltered run of every suite is the profile's figure
    if args.record and not whole:
        print(
            "bench_ci_profile: --record needs every suite and no -k (a figure of a subset is not the profile's)",
            file=sys.stderr,
        )
        return 2
    if args.collect_only:
        counts = {suite: collect_suite(suite, args.scale, extra) for suite in chosen}
        for suite, n in counts.items():
            print(f"  {suite:13s} {n:6,d} items")
        print(f"  {'total':13s} {sum(counts.values()):6,d} items ({args.scale} profile)")
        if args.record:
            _record_items(args.scale, sum(counts.values()))
        return 0
    print(
        f"{args.scale} profile, --rocm-device=cpu, serial, {os.cpu_count()} CPUs"
        + (f", -k {args.keyword!r}" if extra else "")
    )
    total_wall = total_cpu = 0.0
    walls: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-profile-") as tmp:
        for suite in chosen:
            res = run_suite(suite, args.scale, extra, Path(tmp) / f"{suite}.json", Path(tmp) / f"{suite}.log")
            total_wall += res["wall"]
            walls[suite] = res["wall"]
            total_cpu += res["cpu"]
            print(
                f"  {suite:13s} wall {res['wall']:6.1f} s  cpu {res['cpu']:6.1f} s  "
                f"peak {res['rss'] / GIB:5.2f} GiB  {res['summary']}"
            )
            for line in res["failures"][:10]:
                print(f"      {line}")
            slow = ", ".join(f"{feature} {seconds:.1f}s" for seconds, feature in res["slowest"])
            if slow:
                print(f"      slowest: {slow}")
            if len(res["shares"]) > 1:
                parts = [f"{k} {n} rows {t:.1f} s" for k, (n, t) in sorted(res["shares"].items())]
                print(f"      test time by rows: {', '.join(parts)}")
    budget = BUDGET_S.get(args.scale)
    verdict = f" ({'within' if total_wall <= budget else 'OVER'} the {budget:.0f} s budget)" if budget else ""
    print(f"  {'total':13s} wall {total_wall:6.1f} s  cpu {total_cpu:6.1f} s{verdict}")
    if total_wall > 0:
        print("  share: " + ", ".join(f"{s} {100 * w / total_wall:.0f} %" for s, w in walls.items()))
    if args.record:
        from figures import record

        how = f"python benchmarks/bench_ci_profile.py --scale {args.scale} --record"
        what = f"every bundled suite, {args.scale} profile, serial on the CPU"
        record(f"suites_{args.scale}_cpu_s", round(total_cpu), what=f"{what}: CPU time", unit="s", how=how)
        record(f"suites_{args.scale}_wall_s", round(total_wall), what=f"{what}: wall time", unit="s", how=how)
    return 0


def _record_items(scale: str, items: int) -> None:
    from figures import record  # benchmarks/figures.py, beside this script

    how = f"python benchmarks/bench_ci_profile.py --scale {scale} --collect-only --record"
    record(f"suites_{scale}_items", items, what=f"items of every bundled suite, {scale} profile", unit="items", how=how)


if __name__ == "__main__":
    sys.exit(main())
