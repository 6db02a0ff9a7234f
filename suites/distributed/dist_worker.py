"""One rank of the distributed rows: ``python dist_worker.py --rank 0 --world 2 --backend gloo --init file://...``.

Started by ``dist_launch.py`` (one process per rank, loopback only: a ``file://`` rendezvous in a
temporary folder). It joins the process group once, then runs the tasks it reads from stdin (one
JSON line per row: the task, its sizes, an output folder), writing each task's result tensors to
``<out>/rank<r>.pt`` and answering ``done`` on stdout; the test process computes the single-process
reference and compares. Inputs are seeded per rank (:func:`rank_input`), so the reference can
rebuild them. One process per rank for the whole module saves the ~2 s torch import per row.

``PYTEST_ROCM_DIST_PRELOAD=module`` imports a module before the task runs: the plugin's own tests
use it to break a collective on purpose (wrong numbers, a hang) and show the rows catch it.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist


def rank_input(rank: int, numel: int) -> torch.Tensor:
    """The float32 tensor rank ``rank`` contributes (the reference rebuilds the same)."""
    return torch.randn(numel, generator=torch.Generator().manual_seed(1000 + rank))


def ddp_model(width: int, hidden: int) -> torch.nn.Module:
    torch.manual_seed(7)
    return torch.nn.Sequential(torch.nn.Linear(width, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, width))


def ddp_batches(steps: int, batch: int, width: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """The full batches of every step (each rank trains on its half)."""
    gen = torch.Generator().manual_seed(11)
    return [(torch.randn(batch, width, generator=gen), torch.randn(batch, width, generator=gen)) for _ in range(steps)]


DDP_LR = 0.05


def _all_reduce(args, device):
    x = rank_input(args.rank, args.numel).to(device)
    dist.all_reduce(x, op=dist.ReduceOp.SUM)
    return {"out": x}


def _all_gather(args, device):
    x = rank_input(args.rank, args.numel).to(device)
    parts = [torch.empty_like(x) for _ in range(args.world)]
    dist.all_gather(parts, x)
    return {"out": torch.stack(parts)}


def _broadcast(args, device):
    x = rank_input(args.rank, args.numel).to(device)
    dist.broadcast(x, src=0)
    return {"out": x}


def _ddp_step(args, device):
    from torch.nn.parallel import DistributedDataParallel

    model = ddp_model(args.width, args.hidden).to(device)
    ddp = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None, bucket_cap_mb=1)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=DDP_LR)
    half = args.batch // args.world
    for x, y in ddp_batches(args.steps, args.batch, args.width):
        xs, ys = (
            x[args.rank * half : (args.rank + 1) * half].to(device),
            y[args.rank * half : (args.rank + 1) * half].to(device),
        )
        optimizer.zero_grad(set_to_none=True)
        torch.nn.functional.mse_loss(ddp(xs), ys).backward()
        optimizer.step()
    return {name: p.detach() for name, p in model.named_parameters()}


def _peer_copy(args, device):
    """GPU 0 -> GPU 1 -> GPU 0 (world 1: one process drives both)."""
    x = rank_input(0, args.numel).to("cuda:0")
    there = x.to("cuda:1")
    back = there.to("cuda:0")
    torch.cuda.synchronize("cuda:0")
    torch.cuda.synchronize("cuda:1")
    return {"there": there, "back": back}


TASKS = {
    "all_reduce": _all_reduce,
    "all_gather": _all_gather,
    "broadcast": _broadcast,
    "ddp-step": _ddp_step,
    "peer-copy": _peer_copy,
}


def _serve(args: argparse.Namespace, device: torch.device) -> None:
    """Run tasks read from stdin, one JSON line each; answer ``done``/``error ...`` on stdout."""
    for line in sys.stdin:
        request = json.loads(line)
        if request["task"] == "quit":
            break
        task_args = argparse.Namespace(**{**vars(args), **request})
        try:
            result = TASKS[request["task"]](task_args, device)
            torch.save({k: v.detach().cpu() for k, v in result.items()}, Path(request["out"]) / f"rank{args.rank}.pt")
            answer = "done"
        except Exception as exc:  # reported to the row; the next task still runs
            answer = "error " + " ".join(f"{type(exc).__name__}: {exc}".split())[:500]
        sys.stdout.write(answer + "\n")
        sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rank", type=int, required=True)
    parser.add_argument("--world", type=int, required=True)
    parser.add_argument("--backend", required=True)  # gloo | nccl | none (peer-copy: one process, no group)
    parser.add_argument("--init", required=True)  # file:///... rendezvous
    parser.add_argument("--pg-timeout", type=float, default=300.0)
    args = parser.parse_args(argv)

    preload = os.environ.get("PYTEST_ROCM_DIST_PRELOAD")
    if preload:
        importlib.import_module(preload)
    if args.backend == "nccl":
        torch.cuda.set_device(args.rank)
        device = torch.device(f"cuda:{args.rank}")
    else:
        device = torch.device("cpu")
    if args.backend != "none":
        dist.init_process_group(
            args.backend,
            init_method=args.init,
            rank=args.rank,
            world_size=args.world,
            timeout=timedelta(seconds=args.pg_timeout),
        )
    _serve(args, device)
    if args.backend != "none":
        dist.barrier()  # no rank tears the group down while another still uses it
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
