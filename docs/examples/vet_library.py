"""Vet a library by running its own test suite with ``--rocm-report`` (docs/vetting.md).

Downloads the library's source distribution from the package index (``pip download --no-binary
:all: --no-deps``: the sdist, which ships the tests where the project includes them), records
which file it ran (name, version, sha256, URL-free: the index is whatever pip is configured with),
unpacks it into the work folder and runs pytest on its tests there, importing the library from the
unpacked source, with the compatibility report written beside it. Nothing is installed, nothing is
copied into this repository. Not run by the test suite (it needs the network).

    python docs/examples/vet_library.py einops==0.8.1 --tests einops/tests \\
        --env EINOPS_TEST_BACKENDS=numpy,torch --out vet-einops -- --rocm-device=cpu

prints the report's path; then ``rocm-compat table`` / ``rocm-compat diff`` on the reports.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path


def download(spec: str, into: Path) -> Path:
    """The sdist of ``spec`` (``einops==0.8.1``), downloaded into ``into``."""
    into.mkdir(parents=True, exist_ok=True)
    before = set(into.iterdir())
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-d", str(into), spec],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    new = [p for p in into.iterdir() if p not in before and p.name.endswith((".tar.gz", ".zip"))]
    found = new or sorted(into.glob("*.tar.gz"))
    if not found:
        raise SystemExit(f"vet_library: pip downloaded no sdist for {spec!r} into {into}")
    return found[0]


def unpack(sdist: Path, into: Path) -> Path:
    """The sdist's top folder (``einops-0.8.1``), unpacked under ``into``."""
    with tarfile.open(sdist) as archive:
        top = archive.getnames()[0].split("/")[0]
        archive.extractall(into, filter="data")
    return into / top


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", help="a requirement pinned to one version: einops==0.8.1")
    parser.add_argument("--tests", required=True, help="the tests' folder inside the sdist: einops/tests")
    parser.add_argument("--out", type=Path, required=True, help="work folder (sdist, source, reports)")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help="for the suite")
    parser.add_argument("--label", help="the report's column (default: pytest-rocm's, plus the version)")
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])
    pytest_args = argv[split + 1 :]  # after --: for pytest (--rocm-device=cpu, -n 4, --rocm-env=...)
    out = args.out.resolve()
    sdist = download(args.spec, out / "sdist")
    source = unpack(sdist, out / "src")
    name, _, version = source.name.rpartition("-")
    record = {
        "spec": args.spec,
        "name": name,
        "version": version,
        "sdist": sdist.name,
        "sha256": hashlib.sha256(sdist.read_bytes()).hexdigest(),
    }
    (out / f"source-{version}.json").write_text(json.dumps(record, indent=1) + "\n")
    report = out / f"{name}-{version}.json"
    env = dict(os.environ, **dict(item.split("=", 1) for item in args.env))
    command = [sys.executable, "-m", "pytest", args.tests, "-q", "-p", "no:cacheprovider"]
    command += [f"--rocm-report={report}", f"--rocm-label={args.label or name + ' ' + version}", *pytest_args]
    print(f"{name} {version} ({sdist.name}, sha256 {record['sha256'][:12]}...): {' '.join(command[2:])}")
    done = subprocess.run(command, cwd=source, env=env)
    print(f"report: {report} (pytest exit status {done.returncode})")
    return 0 if report.exists() else 1


if __name__ == "__main__":
    raise SystemExit(main())
