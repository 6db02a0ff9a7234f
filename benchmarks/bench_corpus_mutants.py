"""How many public ROCm bug classes the corpus suite catches: caught / tried, per profile.

    python benchmarks/bench_corpus_mutants.py                  # ci profile, every class
    python benchmarks/bench_corpus_mutants.py --scale full     # full, rows of each class's ops (-k)
    python benchmarks/bench_corpus_mutants.py --only gemm_tt_fp32,bn_backward_2d

Each class of tests/corpus_mutants.py breaks the device run at its condition
(``CORPUS_MUTANT=<name>``). The corpus runs once clean (every row must pass or skip) and once per
class, each in a fresh ``python -m pytest suites/corpus --rocm-device=cpu`` process; a class is
caught when at least one row fails that passed clean. ``ci`` runs the whole ci corpus per class.
``full`` on a CPU cannot run the whole corpus per class (~57,000 OpInfo rows): it runs every full
row of the entries of the class's op family (``PYTEST_ROCM_CORPUS_OPS``: entry names only, never
the condition itself). Prints figures; never fails on them.
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
sys.path.insert(0, str(ROOT / "tests"))
from corpus_mutants import MUTANTS  # noqa: E402

_BN = "nn.functional.batch_norm,nn.BatchNorm*"
#: full profile: the entries of each class's op family (names of ops and modules, not conditions)
FAMILY_OPS = {
    "gemm_tt_fp32": "matmul,mm,addmm,bmm,baddbmm,nn.functional.linear,nn.Linear,nn.MultiheadAttention",
    "bn_backward_odd_spatial": _BN,
    "bn_backward_2d": _BN,
    "bn_running_mean_drift": _BN,
    "bn_inference_inv_variance": _BN,
    "bf16_duplicate_index_accumulate": "index_add,index_put,scatter_add,nn.functional.embedding,nn.Embedding",
    "interpolate_unaligned": "nn.functional.interpolate,nn.functional.upsample*,nn.Upsample*",
    "conv_strided_large_kernel": "nn.functional.conv*,nn.Conv*,nn.ConvTranspose*",
}


def run(scale: str, mutant: str | None, ops: str | None, tmp: Path) -> tuple[dict[str, str], float]:
    report = tmp / f"{mutant or 'clean'}-{scale}-{abs(hash(ops))}.json"
    cmd = [sys.executable, "-m", "pytest", "suites/corpus", "--rocm-device=cpu", f"--rocm-scale={scale}", "-q"]
    cmd += ["-p", "no:cacheprovider", "-p", "no:randomly", "-p", "corpus_mutants", f"--rocm-report={report}"]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tests")}
    env.pop("CORPUS_MUTANT", None)
    env.pop("PYTEST_ROCM_CORPUS_OPS", None)
    if ops:
        env["PYTEST_ROCM_CORPUS_OPS"] = ops
    if mutant:
        env["CORPUS_MUTANT"] = mutant
    start = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - start
    if not report.exists():
        return {}, wall
    return {r["feature"]: r["outcome"] for r in json.loads(report.read_text())["results"]}, wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", choices=("ci", "full"), default="ci")
    parser.add_argument("--only", default="", help="comma-separated classes (default: all)")
    args = parser.parse_args()
    names = [n for n in args.only.split(",") if n] or list(MUTANTS)
    caught = 0
    with tempfile.TemporaryDirectory(prefix="corpus-mutants-") as tmp:
        clean_by_k: dict[str | None, dict[str, str]] = {}
        for name in names:
            keyword = FAMILY_OPS[name] if args.scale == "full" else None
            if keyword not in clean_by_k:
                clean_by_k[keyword], wall = run(args.scale, None, keyword, Path(tmp))
                red = sorted(f for f, o in clean_by_k[keyword].items() if o not in ("passed", "skipped"))
                print(f"clean {args.scale}{f' ({keyword})' if keyword else ''}: {len(clean_by_k[keyword])} rows, "
                      f"{len(red)} not passed/skipped, {wall:.0f} s" + (f": {red[:5]}" if red else ""))  # fmt: skip
            clean = clean_by_k[keyword]
            broken, wall = run(args.scale, name, keyword, Path(tmp))
            failed = sorted(f for f, o in broken.items() if o == "failed" and clean.get(f) == "passed")
            caught += bool(failed)
            print(f"  {name:33s} {'CAUGHT' if failed else 'missed'}  {len(failed):4d} rows  {wall:5.0f} s  "
                  f"{MUTANTS[name][0]}" + (f"\n      e.g. {', '.join(failed[:3])}" if failed else ""))  # fmt: skip
    print(f"caught {caught} / {len(names)} in {args.scale}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
