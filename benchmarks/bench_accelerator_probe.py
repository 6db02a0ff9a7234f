"""What the accelerator probe (``pytest_rocm.plugin.accelerator``) costs each test of a report run.

Two figures:
1. per call of ``allocations()`` (twice per test): torch not imported, imported with CUDA/HIP not
   initialised, and initialised (on a machine with a GPU);
2. a generated suite of tests that each make a small tensor on the device (the GPU where there is
   one, else the CPU), run with ``--rocm-report`` with the probe and with it blocked
   (``-p no:rocm-report-accelerator``), alternating, as the ratio of the median CPU times.
Target: ratio <= 1.01. It prints the figures and never fails on them (timing is not a test).

    python benchmarks/bench_accelerator_probe.py [--tests 2000] [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path

SUITE = """
import torch

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

def pytest_generate_tests(metafunc):
    metafunc.parametrize("i", range({n}))

def test_small_tensor(i):
    assert torch.ones(4, device=DEVICE).sum().item() == 4
"""


def per_call_us() -> dict[str, float]:
    from pytest_rocm.plugin.accelerator import allocations

    def timed() -> float:
        n = 20000
        return timeit.timeit(allocations, number=n) / n * 1e6

    figures = {}
    saved = sys.modules.pop("torch", None)
    figures["torch not imported"] = timed()
    if saved is not None:
        sys.modules["torch"] = saved
    import torch

    figures["torch imported, runtime not initialised"] = timed()
    if torch.cuda.is_available():
        torch.ones(1, device="cuda")
        figures[f"runtime initialised, {torch.cuda.device_count()} device(s)"] = timed()
    return figures


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(root: Path, probe: bool) -> float:
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
    args += [f"--rocm-report={root / 'r.json'}", str(root / "test_suite.py")]
    if not probe:
        args += ["-p", "no:rocm-report-accelerator"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_ROCM_")}
    cpu0 = _children_cpu()
    subprocess.run(args, cwd=root, env=env, check=True, stdout=subprocess.DEVNULL)
    return _children_cpu() - cpu0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    for what, us in per_call_us().items():
        print(f"allocations(), {what}: {us:.2f} us per call ({2 * us:.2f} us per test)")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "test_suite.py").write_text(SUITE.replace("{n}", str(args.tests)))
        with_probe, without = [], []
        start = time.perf_counter()
        for _ in range(args.runs):
            with_probe.append(run_once(root, True))
            without.append(run_once(root, False))
        ratio = statistics.median(with_probe) / statistics.median(without)
        print(
            f"{args.tests} tests x {args.runs} runs ({time.perf_counter() - start:.0f} s): CPU median "
            f"{statistics.median(with_probe):.2f} s with the probe, {statistics.median(without):.2f} s without: "
            f"ratio {ratio:.3f} (target <= 1.01)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
