"""``rocm-compat matrix``: the ROCm/PyTorch combinations, or a CI job matrix."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from pytest_rocm._resources import default_combos_path
from pytest_rocm.cli.argtypes import path_text
from pytest_rocm.matrix import (
    BACKENDS,
    EMITTERS,
    ComboError,
    load_combos,
    render_text,
)


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--file",
        type=lambda text: Path(path_text(text)),
        default=None,
        help="combinations file (default: matrix/combos.toml)",
    )
    parser.add_argument(
        "--emit", choices=["text", *EMITTERS], default="text", help="output: a table, JSON, or a CI job matrix"
    )
    parser.add_argument("--backend", choices=BACKENDS, default=None, help="only combinations of this backend")
    parser.add_argument("--name", action="append", default=None, help="only this combination (repeatable)")
    parser.add_argument(
        "--gfx",
        default=None,
        metavar="GFX",
        help="add a column saying whether each combination's torch wheel has kernels for this gfx (gfx1151)",
    )


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
    print(render_text(combos, gfx) if args.emit == "text" else EMITTERS[args.emit](combos))
    return 0
