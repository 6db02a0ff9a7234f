"""``rocm-compat matrix``: the ROCm/PyTorch combinations, or a CI job matrix, a SLURM job-array
script or Kubernetes Jobs (docs/clusters.md)."""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from pytest_rocm._resources import default_combos_path
from pytest_rocm.cli.argtypes import path_text
from pytest_rocm.matrix import (
    BACKENDS,
    EMITTERS,
    Combo,
    ComboError,
    load_combos,
    render_text,
)
from pytest_rocm.matrix.tasks import SUITE_MINUTES


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--file",
        type=lambda text: Path(path_text(text)),
        default=None,
        help="combinations file (default: matrix/combos.toml)",
    )
    parser.add_argument(
        "--emit",
        choices=["text", *EMITTERS, "slurm", "k8s"],
        default="text",
        help="output: a table, JSON, a CI job matrix, a SLURM job-array script or Kubernetes Jobs",
    )
    parser.add_argument("--backend", choices=BACKENDS, default=None, help="only combinations of this backend")
    parser.add_argument("--name", action="append", default=None, help="only this combination (repeatable)")
    parser.add_argument(
        "--gfx",
        default=None,
        metavar="GFX",
        help="add a column saying whether each combination's torch wheel has kernels for this gfx (gfx1151)",
    )

    cluster = parser.add_argument_group("--emit slurm / k8s (docs/clusters.md)")
    cluster.add_argument(
        "--partition",
        action="append",
        default=[],
        metavar="GFX=NAME",
        help="SLURM partition of a gfx (gfx942=mi300x; cpu=NAME, cuda=NAME for those); with any, the ROCm "
        "combinations run on each gfx given, else on the gfx labels of their runner",
    )
    cluster.add_argument("--account", type=_slurm_word, help="SLURM account (#SBATCH --account)")
    cluster.add_argument("--gpus", type=_positive, default=1, help="GPUs per task (default 1)")
    cluster.add_argument(
        "--gpu-flag", choices=["gres", "gpus"], default="gres", help="SLURM: ask for GPUs as --gres=gpu:N or --gpus=N"
    )
    cluster.add_argument(
        "--scale", choices=list(SUITE_MINUTES), default="full", help="the suites' profile the time limit is sized for"
    )
    cluster.add_argument("--time", type=_positive, default=None, metavar="MINUTES", help="time limit of a task")
    cluster.add_argument(
        "--reports-dir", type=path_text, default=None, metavar="DIR", help="the shared folder of the reports"
    )
    cluster.add_argument(
        "--package",
        default=None,
        help="the pytest-rocm each task installs: a wheel file, a folder or a requirement (default: SLURM, a wheel "
        "built at submission from this checkout; Kubernetes, that wheel on the reports volume)",
    )
    cluster.add_argument(
        "--host-label",
        action="store_true",
        help="name the node in each report (--rocm-host-label); off: reports name no host",
    )
    cluster.add_argument(
        "--cpus-per-task", type=_positive, default=8, metavar="N", help="SLURM: CPU cores per task (default 8)"
    )
    cluster.add_argument("--merge-partition", type=_slurm_word, help="SLURM partition of the merge job")
    cluster.add_argument("--namespace", type=_dns_name, help="Kubernetes namespace of the Jobs")
    cluster.add_argument(
        "--image", default="python:{python}-slim", help="container image ({python}: the combination's Python)"
    )
    cluster.add_argument("--pvc", type=_dns_name, help="an existing ReadWriteMany claim for the reports")
    cluster.add_argument(
        "--node-label",
        action="append",
        default=[],
        metavar="GFX=KEY=VALUE",
        help="select a gfx's nodes by a label of your own instead of amd.com/gpu.device-id",
    )
    cluster.add_argument("--run-id", type=_dns_name, default=None, help="names this run's Jobs (default: the time)")


def _positive(text: str) -> int:
    if not re.fullmatch(r"[0-9]+", text, re.ASCII) or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a whole number of at least 1")
    return int(text)


def _slurm_word(text: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9._-]+", text):
        raise argparse.ArgumentTypeError(f"{text!r}: expected letters, digits, '.', '_' or '-'")
    return text


def _dns_name(text: str) -> str:
    if not re.fullmatch(r"[a-z0-9]([a-z0-9-]{0,40}[a-z0-9])?", text):
        raise argparse.ArgumentTypeError(f"{text!r}: expected a Kubernetes name (lower-case letters, digits, '-')")
    return text


def _emit_cluster(args: argparse.Namespace, combos: list[Combo]) -> str:
    """The SLURM script or the Kubernetes manifests; TaskError on options that cannot make one."""
    from pytest_rocm.matrix.tasks import package_source, parse_partitions, plan_tasks, time_limit

    plan = plan_tasks(combos, parse_partitions(args.partition))
    minutes = time_limit(args.scale, args.time)
    if args.emit == "slurm":
        from pytest_rocm.matrix.slurm import SlurmOptions, emit_slurm

        options = SlurmOptions(
            reports=args.reports_dir or "reports",
            account=args.account,
            gpus=args.gpus,
            gpu_flag=args.gpu_flag,
            minutes=minutes,
            package=args.package,
            source=package_source(args.package),
            host_label=args.host_label,
            merge_partition=args.merge_partition,
            cpus=args.cpus_per_task,
        )
        return emit_slurm(plan, options)
    from datetime import datetime, timezone

    from pytest_rocm.matrix.k8s import K8sOptions, emit_k8s, parse_node_labels

    k8s = K8sOptions(
        run_id=args.run_id or datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S"),
        namespace=args.namespace,
        image=args.image,
        pvc=args.pvc,
        gpus=args.gpus,
        minutes=minutes,
        package=args.package,
        source=package_source(args.package) if args.package is not None else _checkout(),
        node_labels=parse_node_labels(args.node_label),
        host_label=args.host_label,
    )
    return emit_k8s(plan, k8s)


def _checkout() -> str | None:
    from pytest_rocm.matrix.tasks import checkout_root

    root = checkout_root()
    return str(root) if root is not None else None


def run(args: argparse.Namespace) -> int:
    gfx = None
    if args.gfx is not None:
        from pytest_rocm.env import arch

        gfx = arch.split_arch(args.gfx)[0]
        if not arch.is_gfx(gfx):
            print(f"rocm-compat matrix: --gfx {args.gfx!r} is not a gfx name (like gfx1151)", file=sys.stderr)
            return 2
    path = args.file or default_combos_path()
    try:
        combos = load_combos(path)
    except ComboError as exc:
        hint = "; give the combinations file with --file FILE" if args.file is None and not path.exists() else ""
        print(f"rocm-compat matrix: {exc}{hint}", file=sys.stderr)
        return 2
    if args.backend:
        combos = [c for c in combos if c.backend == args.backend]
    if args.name:
        known = {c.name for c in combos}
        missing = [n for n in args.name if n not in known]
        if missing:
            print(f"rocm-compat matrix: {path}: no combination named {missing[0]!r}", file=sys.stderr)
            return 2
        combos = [c for c in combos if c.name in args.name]
    if args.emit == "text":
        # the "here" column reads sysfs below PYTEST_ROCM_SYSROOT: a bad one is bad input, as in
        # `rocm-compat env`, not a column of "no"
        from pytest_rocm.env.seam import SYSROOT_VARIABLE, SysrootError, check_sysroot

        try:
            check_sysroot(os.environ.get(SYSROOT_VARIABLE))
        except SysrootError as exc:
            print(f"rocm-compat matrix: {exc}", file=sys.stderr)
            return 2
    if args.emit in ("slurm", "k8s"):
        from pytest_rocm.matrix.tasks import TaskError

        try:
            print(_emit_cluster(args, combos), end="")
        except TaskError as exc:
            print(f"rocm-compat matrix: {exc}", file=sys.stderr)
            return 2
        return 0
    print(render_text(combos, gfx) if args.emit == "text" else EMITTERS[args.emit](combos))
    return 0
