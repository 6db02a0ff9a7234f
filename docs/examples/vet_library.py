"""Vet a library by running its own test suite with ``--rocm-report`` (docs/vetting.md).

Downloads the library's source distribution from the package index (``pip download --no-binary
:all: --no-deps``: the sdist, which ships the tests where the project includes them; ``--sdist FILE``
takes one you have), records which file it ran (name, version, sha256, URL-free: the index is
whatever pip is configured with), unpacks it into the work folder and runs pytest on its tests
there, with the compatibility report written beside it. Nothing is installed, nothing is copied
into this repository. Not run by the test suite with a download (it needs the network).

The vetted code must be the code that runs. The unpacked source's import folder (its ``src/`` in a
src layout, else its top folder) goes first on ``PYTHONPATH``, so ``import accelerate`` finds the
unpacked 1.14.0 and not an installed 1.15.0. It is checked twice: before the run (where ``import``
would find each of the project's packages, without importing them) and after it (the report's
``modules``: which version, from which folder, the tests really imported: a conftest can still
reorder ``sys.path``). Code from elsewhere is refused: exit status 3, and the report is renamed
``<name>-<version>.json.refused`` so no table or atlas takes it for that version's column.

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
from typing import Any

#: exit status when the code that ran is not the code vetted (pytest's own are 0-5, the report's 6)
EXIT_WRONG_CODE = 3


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


def import_root(source: Path) -> Path:
    """Where the unpacked project's packages import from: ``src/`` in a src layout, else its top."""
    src = source / "src"
    return src if src.is_dir() and any((p / "__init__.py").is_file() for p in src.iterdir() if p.is_dir()) else source


def project_packages(root: Path) -> list[str]:
    """The top-level packages under the import root (test folders left out)."""
    return sorted(
        p.name
        for p in root.iterdir()
        if p.is_dir()
        and p.name.isidentifier()
        and not p.name.startswith(("test", "_"))
        and (p / "__init__.py").is_file()
    )


def import_env(root: Path, base: dict[str, str]) -> dict[str, str]:
    """``base`` with the import root first on PYTHONPATH."""
    rest = base.get("PYTHONPATH", "")
    return dict(base, PYTHONPATH=str(root) + (os.pathsep + rest if rest else ""))


#: run in the suite's environment: where each package would be imported from (find_spec: no import)
_WHERE = (
    "import importlib.util, json, os, sys\n"
    "out = {}\n"
    "for name in sys.argv[1:]:\n"
    "    spec = importlib.util.find_spec(name)\n"
    "    origin = spec.origin if spec is not None else None\n"
    "    out[name] = os.path.dirname(os.path.realpath(origin)) if origin else None\n"
    "print(json.dumps(out))\n"
)


def inside(path: str | None, folder: Path) -> bool:
    real = os.path.realpath(folder)
    return path is not None and (path == real or path.startswith(real + os.sep))


def before_run(root: Path, packages: list[str], cwd: Path, env: dict[str, str]) -> list[str]:
    """What ``import`` would find elsewhere than the unpacked source, asked before the run."""
    done = subprocess.run(
        [sys.executable, "-c", _WHERE, *packages], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    found: dict[str, str | None] = json.loads(done.stdout)
    return [
        f"{name} would be imported from {where}, not from {root / name}"
        for name, where in found.items()
        if not inside(where, root / name)
    ]


def _same_version(a: str, b: str) -> bool:
    try:
        from packaging.version import Version

        return Version(a) == Version(b)
    except Exception:  # not a version (or no packaging): as text
        return a == b


def after_run(report: dict[str, Any], root: Path, packages: list[str], version: str) -> list[str]:
    """What the tests really imported (the report's ``modules``) that is not the vetted code: a
    package from another folder, or one whose ``__version__`` is not the vetted version."""
    modules = report.get("modules") if isinstance(report.get("modules"), dict) else None
    if modules is None:
        return ["the report records no modules (a pytest-rocm older than the field): which code ran is not known"]
    problems = []
    for name in packages:
        record = modules.get(name)
        if not isinstance(record, dict):
            continue  # the tests never imported it
        where, found = record.get("path"), record.get("version")
        if not inside(where, root / name):
            problems.append(
                f"the tests imported {name} {found or ''} from {where}, not from {root / name}".replace("  ", " ")
            )
        elif isinstance(found, str) and not _same_version(found, version):
            problems.append(f"the tests imported {name} {found}, not the vetted {version}")
    return problems


def refuse(report: Path, problems: list[str]) -> int:
    """Say why the run does not vet this version, and take its report out of the way."""
    for problem in problems:
        print(f"vet_library: REFUSED: {problem}", file=sys.stderr)
    if report.exists():
        refused = report.with_name(report.name + ".refused")
        report.replace(refused)
        print(f"vet_library: the report is {refused}: it is not this version's column", file=sys.stderr)
    return EXIT_WRONG_CODE


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", help="a requirement pinned to one version: einops==0.8.1")
    parser.add_argument("--tests", required=True, help="the tests' folder inside the sdist: einops/tests")
    parser.add_argument("--out", type=Path, required=True, help="work folder (sdist, source, reports)")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help="for the suite")
    parser.add_argument("--label", help="the report's column (default: pytest-rocm's, plus the version)")
    parser.add_argument("--sdist", type=Path, help="a source distribution you have, instead of downloading one")
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])
    pytest_args = argv[split + 1 :]  # after --: for pytest (--rocm-device=cpu, -n 4, --rocm-env=...)
    out = args.out.resolve()
    sdist = args.sdist.resolve() if args.sdist else download(args.spec, out / "sdist")
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
    root = import_root(source)
    packages = project_packages(root)
    env = import_env(root, dict(os.environ, **dict(item.split("=", 1) for item in args.env)))
    problems = before_run(root, packages, source, env)
    if problems:
        return refuse(report, problems)
    command = [sys.executable, "-m", "pytest", args.tests, "-q", "-p", "no:cacheprovider"]
    command += [f"--rocm-report={report}", f"--rocm-label={args.label or name + ' ' + version}", *pytest_args]
    print(f"{name} {version} ({sdist.name}, sha256 {record['sha256'][:12]}...): {' '.join(command[2:])}")
    print(f"importing {', '.join(packages) or 'nothing of its own'} from {root}")
    done = subprocess.run(command, cwd=source, env=env)
    print(f"report: {report} (pytest exit status {done.returncode})")
    if not report.exists():
        return 1
    problems = after_run(json.loads(report.read_text()), root, packages, version)
    return refuse(report, problems) if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
