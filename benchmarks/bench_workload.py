"""What a workload capture costs and how long its replay takes.

Capture: the tiny Llama training step of ``docs/examples/train_tiny_llama.py`` (2 layers, forward,
backward, AdamW), run in one process with and without ``pytest_rocm.capture()``, alternating the
two so drift in machine load hits both alike, on one thread and by the process's CPU time (a
shared machine's load is not counted); the figure to judge by is the median of the ratios of
each pair (capture / plain). Beside it, the same ratio for a dispatch mode that records nothing:
torch's own cost of handing every op to Python, which no recorder can go below. The same for the command line: ``python
train.py`` against ``rocm-compat capture -o FILE -- python train.py`` (both pay the interpreter,
torch and transformers start-up, which the in-process figure leaves out).

Replay: the capture's signatures (a few hundred) replayed with ``pytest --rocm-workload`` on the
CPU under ``-n 2`` (two cores), and in-process without pytest (the replay's own cost). It prints
the figures and never fails on them (timing is not a test).

    python benchmarks/bench_workload.py [--steps 3] [--runs 5] [--skip-cli]
"""

from __future__ import annotations

import argparse
import json
import runpy
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "docs" / "examples" / "train_tiny_llama.py"


def training_step(steps: int) -> Any:
    """The example's model and a function running ``steps`` training steps on it."""
    tiny_llama = runpy.run_path(str(SCRIPT))["tiny_llama"]  # not as __main__: defines, runs nothing
    model, optimizer, tokens = tiny_llama()

    def run() -> None:
        for _ in range(steps):
            model(input_ids=tokens, labels=tokens).loss.backward()
            optimizer.step()
            optimizer.zero_grad()

    return run


def in_process(steps: int, runs: int, path: Path) -> tuple[list[float], list[float], int, int]:
    """(capture/plain ratios, bare-mode/plain ratios, signatures, op calls per run). The bare mode
    is a ``TorchDispatchMode`` that only calls the op: what entering Python for every op costs,
    before the recorder does anything (the part of the overhead that is torch's, not ours)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    import pytest_rocm

    class Bare(TorchDispatchMode):  # type: ignore[misc]
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            return func(*args, **(kwargs or {}))

    import torch

    torch.set_num_threads(1)  # CPU time of one thread: what other processes' load disturbs least
    run = training_step(steps)
    run()  # warm-up: first-call costs belong to neither variant
    ratios, bare, signatures, calls = [], [], 0, 0
    extra: list[float] = []  # CPU seconds the capture added per op call
    clock = time.process_time  # CPU time of this process: a shared machine's load is not ours
    for _ in range(runs):
        start = clock()
        run()
        plain = clock() - start
        start = clock()
        with Bare():
            run()
        bare.append((clock() - start) / plain)
        start = clock()
        with pytest_rocm.capture(path) as cap:
            run()
        captured = clock() - start
        ratios.append(captured / plain)
        signatures, calls = len(cap.signatures), cap.recorder.calls
        extra.append((captured - plain) / max(1, calls))
    print(
        f"  plain: {plain / max(1, calls) * 1e6:.1f} us of CPU per op call; the capture adds a median "
        f"{statistics.median(extra) * 1e6:.1f} us per call (the first step pays each new signature once)"
    )
    return ratios, bare, signatures, calls


def timed(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3, help="training steps per timed run (default 3)")
    parser.add_argument("--runs", type=int, default=5, help="timed pairs (default 5)")
    parser.add_argument("--skip-cli", action="store_true", help="leave out the command-line pairs")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        capture_file = work / "llama-ops.json"
        ratios, bare, count, calls = in_process(args.steps, args.runs, capture_file)
        print(
            f"capture, in-process: {count} signatures from {calls} op calls; "
            f"capture/plain median {statistics.median(ratios):.2f}x"
        )
        print(f"  pairs: {', '.join(f'{r:.2f}' for r in ratios)}")
        print(
            f"  a dispatch mode that records nothing (torch's own cost of seeing every op): "
            f"median {statistics.median(bare):.2f}x; the recorder's share: "
            f"{statistics.median(ratios) - statistics.median(bare):.2f}x"
        )
        if not args.skip_cli:
            plain_cmd = [sys.executable, str(SCRIPT), "--steps", str(args.steps), "--device", "cpu"]
            capture_cmd = [sys.executable, "-m", "pytest_rocm.cli", "capture", "-o", str(capture_file), "--"]
            pairs = []
            for _ in range(max(1, args.runs // 2)):
                pairs.append(timed(capture_cmd + plain_cmd) / timed(plain_cmd))
            print(f"capture, command line (start-up included): median {statistics.median(pairs):.2f}x")
            print(f"  pairs: {', '.join(f'{r:.2f}' for r in pairs)}")
        document = json.loads(capture_file.read_text())
        count = len(document["signatures"])
        import torch

        from pytest_rocm.workload.replay import DeviceFailed, NotReplayable, replay

        start, outcomes = time.perf_counter(), {"passed": 0, "failed": 0, "not replayable": 0}
        for signature in document["signatures"]:
            try:
                failed = replay(signature, torch.device("cpu")).result.failures
                outcomes["failed" if failed else "passed"] += 1
            except NotReplayable:
                outcomes["not replayable"] += 1
            except DeviceFailed:
                outcomes["failed"] += 1
        own = time.perf_counter() - start
        print(f"replay, in-process: {count} signatures in {own:.1f} s ({outcomes})")
        report = work / "report.json"
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider"]
        command += [f"--rocm-workload={capture_file}", "--rocm-device=cpu", f"--rocm-report={report}", "-n", "2"]
        start = time.perf_counter()
        subprocess.run(command, cwd=work, capture_output=True)
        wall = time.perf_counter() - start
        summary = json.loads(report.read_text())["summary"]
        print(
            f"replay, pytest -n 2: {count} rows in {wall:.1f} s wall ({summary['passed']} passed, "
            f"{summary['failed']} failed, {summary['skipped']} skipped)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
