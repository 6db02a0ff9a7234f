"""``vet --run``: the live check in this environment, as report records (``pytest-rocm/report/1``).

1. import the package in a separate Python process with a timeout: a crash (a segfault in a
   CUDA-only extension) or a hang becomes the outcome ``crashed`` / ``timeout``, never ours;
2. when pytest-rocm has a library suite for it (``suites/libraries/test_<name>.py``), run that
   suite in its own pytest process and take its records; otherwise the import record stands as the
   generic smoke check (it lists the module's public callables).

This is the only part of vet that executes the target's code, and only when asked.

Why this module is long: what the child may see (its allow-list environment, the folders bound
into its sandbox) and what the parent records of it (observed facts apart from the child's claims)
are one boundary; split, each half would have to trust the other's view of it.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_rocm import _import_probe
from pytest_rocm._resources import PACKAGE_DIR, bundled_suites
from pytest_rocm.env.seam import distribution_version
from pytest_rocm.report.outcomes import Outcome, not_installed_reason
from pytest_rocm.vet.contained import DEFAULT_MEMORY_GIB, SANDBOX, memory_bytes, run_contained

if TYPE_CHECKING:
    from pytest_rocm.report.records import ResultRecord

#: the probe's facts: key -> the JSON types it may have. The vetted code runs in the child and
#: can print a line of its own, so these are the child's claim, never the record's facts
_CLAIM_TYPES: dict[str, tuple[type, ...]] = {
    "module": (str,),
    "version": (str, type(None)),
    "file": (str, type(None)),
    "public_callables": (int,),
    "examples": (list,),
    "torch": (str,),
    "hip": (str, type(None)),
    "cuda": (str, type(None)),
}
#: what a record says about its ``child_claims``
CLAIM_NOTE = "reported by the child process, in which the vetted package's code ran: its claim, unchecked"
#: what a suite record is labelled with: the child wrote it
SUITE_CLAIM = "the suite's pytest process, in which the vetted package's code ran"


def child_claims(stdout: str) -> dict[str, Any] | None:
    """The probe's facts from the child's output (its last ``@@vet@@`` line): the known keys of
    the expected types, strings and lists cut short; None when no such line came (the child
    ended before the probe could print it)."""
    lines = [ln for ln in stdout.splitlines() if ln.startswith(_import_probe.MARK)]
    if not lines:
        return None
    try:
        raw = json.loads(lines[-1][len(_import_probe.MARK) :])
    except ValueError:
        return None
    if not isinstance(raw, dict):
        return None
    claims: dict[str, Any] = {}
    for key, types in _CLAIM_TYPES.items():
        value = raw.get(key)
        if key not in raw or not isinstance(value, types) or isinstance(value, bool):
            continue
        if isinstance(value, str):
            value = value[:200]
        elif isinstance(value, list):
            value = [str(v)[:80] for v in value[:10]]
        claims[key] = value
    return claims


def resolved_in(module: str, source: Path) -> str | None:
    """Where the child's import of ``module`` resolves in a source folder, found here without
    running any code (the path finder over the folder's paths, which come first in the child's
    path): the parent's own observation. None when the folder has no such module."""
    import importlib.machinery

    spec = importlib.machinery.PathFinder.find_spec(module, [str(p) for p in _source_paths(source)])
    if spec is None:
        return None
    return spec.origin or (str(next(iter(spec.submodule_search_locations or []), "")) or None)


def normalize(name: str) -> str:
    return name.lower().replace("-", "_").replace(".", "_")


def record(
    dist: str, check: str, outcome: Outcome, reason: str | None, duration: float, info: dict[str, Any] | None = None
) -> ResultRecord:
    return {
        "nodeid": f"vet::{dist}::{check}",
        "feature": f"vet/{dist}/{check}",
        "suite": "vet",
        "outcome": outcome,
        "reason": reason,
        "duration": round(duration, 6),
        "parity": [],
        "info": info or {},
    }


def primary_module(dist: str, top_level: set[str]) -> str | None:
    names = sorted(n for n in top_level if n.isidentifier() and not n.startswith("_"))
    want = normalize(dist)
    return want if want in names else (names[0] if names else (want if want.isidentifier() else None))


def _last_error_line(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.strip().splitlines() if ln.strip()]
    return lines[-1][:400] if lines else "no message"


#: what an allocation past the memory limit looks like in a child's last error line
_OUT_OF_MEMORY = ("MemoryError", "std::bad_alloc", "Cannot allocate memory", "out of memory")


def _memory_hint(stderr: str, memory_gib: float) -> str:
    """The limit and its flag, when the child ran out of the memory it was given."""
    if any(word in stderr[-4000:] for word in _OUT_OF_MEMORY):
        return f" (the live check's memory limit is {memory_gib:g} GiB: --memory-limit raises it)"
    return ""


#: variables the child keeps by name: the command path, the locale, thread counts, the loader
_KEEP_NAMES = frozenset(
    {"PATH", "LANG", "LANGUAGE", "TZ", "TERM", "LD_LIBRARY_PATH", "VIRTUAL_ENV", "CONDA_PREFIX"}
    | {"OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"}
)
#: ... and by prefix: what torch, ROCm/HIP, CUDA, Triton and pytest-rocm read
_KEEP_PREFIXES = (
    *("LC_", "ROCM", "HIP_", "HSA_", "HCC_", "ROCR_", "AMD_", "GPU_", "MIOPEN_", "RCCL_", "NCCL_"),
    *("CUDA_", "NVIDIA_", "CUBLAS", "CUDNN_", "PYTORCH_", "TORCH", "TRITON_", "PYTEST_ROCM_"),
)
#: a name that says it holds a secret is dropped whatever its prefix (PYTORCH_HUB_TOKEN)
_SECRET_WORDS = ("TOKEN", "SECRET", "PASSW", "CREDENTIAL", "AUTH", "API_KEY", "PRIVATE", "_KEY")


def kept_variable(name: str) -> bool:
    """Whether the child may see the variable ``name`` (its value is never looked at)."""
    upper = name.upper()
    if any(word in upper for word in _SECRET_WORDS):
        return False
    return upper in _KEEP_NAMES or upper.startswith(_KEEP_PREFIXES)


def child_environment(work: str, source: Path | None) -> tuple[dict[str, str], list[str]]:
    """The child's environment and the names of the variables it does not get.

    An allow-list (:func:`kept_variable`): a token or a socket path in this process's
    environment is no business of the vetted code. HOME, TMPDIR and the XDG folders are new
    folders inside ``work`` (caches and config the code writes land there); for a source folder
    that folder is first on the path, so its code is what runs, not an installed package of the
    same name."""
    env = {k: v for k, v in os.environ.items() if kept_variable(k)}
    folders = {"HOME": "home", "TMPDIR": "tmp", "XDG_CACHE_HOME": "home/.cache"}
    folders |= {"XDG_CONFIG_HOME": "home/.config", "XDG_DATA_HOME": "home/.local/share"}
    for name, sub in folders.items():
        env[name] = str(Path(work, sub))
        Path(env[name]).mkdir(parents=True, exist_ok=True)
    env.update(PWD=work, PYTHONDONTWRITEBYTECODE="1", PYTHONNOUSERSITE="1")
    paths = [str(p) for p in _source_paths(source)]
    paths += [p for p in (os.environ.get("PYTHONPATH", ""), _own_root()) if p]  # last: pytest-rocm, for the suite
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env, dropped_variables()


#: variables the child gets new values of (not "dropped": it has them, pointing at its own folders)
_REPLACED = frozenset({"HOME", "TMPDIR", "PWD", "PYTHONPATH", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"})


def dropped_variables() -> list[str]:
    """The names of this process's variables the child does not get (names only, never values)."""
    return sorted(k for k in os.environ if not kept_variable(k) and k not in _REPLACED)


def child_env(home: str, source: Path | None) -> dict[str, str]:
    """The child's environment alone (:func:`child_environment`)."""
    return child_environment(home, source)[0]


def readable_folders(env: dict[str, str], source: Path | None) -> list[str]:
    """What the sandboxed child must read although the sandbox hides where it is (a folder in
    ``/tmp`` or a home): the vetted folder, its import path, the library folders it names."""
    found = [str(p) for p in _source_paths(source)]
    for name in ("PYTHONPATH", "LD_LIBRARY_PATH"):
        found += env.get(name, "").split(os.pathsep)
    found += [env[n] for n in ("ROCM_PATH", "ROCM_HOME", "HIP_PATH", "CUDA_HOME", "CUDA_PATH") if n in env]
    return [p for p in found if p]


def _source_paths(source: Path | None) -> list[Path]:
    if source is None:
        return []
    source = source.resolve()
    return [source / "src", source] if (source / "src").is_dir() else [source]


def _own_root() -> str:
    return str(PACKAGE_DIR.parent)


def import_check(
    dist: str,
    module: str,
    timeout: float,
    source: Path | None = None,
    offline: bool = True,
    sandbox: bool = True,
    memory_gib: float = DEFAULT_MEMORY_GIB,
) -> ResultRecord:
    """Import ``module`` in a contained child process with ``memory_gib`` to allocate; the record
    of how that went."""
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="vet-import-") as cwd:  # nothing local shadows it
        env = child_env(cwd, source)
        proc = run_contained(
            [sys.executable, "-c", _import_probe.START, module],
            timeout=timeout,
            cwd=cwd,
            env=env,
            offline=offline,
            sandbox=sandbox,
            readable=readable_folders(env, source),
            memory=memory_bytes(memory_gib),
        )
    elapsed = time.perf_counter() - started
    info: dict[str, Any] = {"module": module, "memory_limit_gib": memory_gib}
    if source is not None:
        info["source"] = str(source)
    if proc.returncode is None:
        reason = f"import {module} hung for more than {timeout:g} s"
        return record(dist, "import", "timeout", reason, elapsed, info)
    if proc.returncode < 0:
        try:
            sig = signal.Signals(-proc.returncode).name
        except ValueError:
            sig = str(-proc.returncode)
        info["stderr"] = proc.stderr[-2000:]
        reason = f"import {module} killed by {sig}{_memory_hint(proc.stderr, memory_gib)}"
        return record(dist, "import", "crashed", reason, elapsed, info)
    if proc.returncode != 0:
        info["stderr"] = proc.stderr[-2000:]
        reason = f"import {module}: {_last_error_line(proc.stderr)}{_memory_hint(proc.stderr, memory_gib)}"
        return record(dist, "import", "failed", reason, elapsed, info)
    claims = child_claims(proc.stdout)
    if claims is None:  # exit status 0, and the probe after the import never reported
        reason = f"import {module}: the process ended (status 0) before the import returned"
        return record(dist, "import", "failed", reason, elapsed, info)
    info["child_claims"], info["child_claims_note"] = claims, CLAIM_NOTE
    if source is not None:
        where = resolved_in(module, source)
        info["resolved"] = where
        if where is None or not where.startswith(str(source.resolve())):
            reason = f"import {module}: the folder has no module {module}, so the import is not the folder's code"
            return record(dist, "import", "failed", reason, elapsed, info)
    return record(dist, "import", "passed", None, elapsed, info)


def library_suite(dist: str, suites: Path | None = None) -> Path | None:
    path = (suites or bundled_suites()) / "libraries" / f"test_{normalize(dist)}.py"
    return path if path.is_file() else None


def _on_cpu() -> bool:
    try:
        from pytest_rocm.env.detect import detect_environment
        from pytest_rocm.env.model import has_accelerator

        return not has_accelerator(detect_environment())
    except Exception:  # detection never raises by contract; be safe anyway
        return True


def suite_check(
    dist: str,
    suite: Path,
    timeout: float,
    device: str | None,
    source: Path | None = None,
    offline: bool = True,
    sandbox: bool = True,
    memory_gib: float = DEFAULT_MEMORY_GIB,
) -> list[ResultRecord]:
    """Run one library suite in its own pytest process (``memory_gib`` to allocate); its report records."""
    from pytest_rocm.report.files import sidecar_path
    from pytest_rocm.report.load import ReportError, load_report
    from pytest_rocm.suite_command import suite_command

    suites = suite.parent.parent
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="vet-suite-") as tmp:
        report = Path(tmp) / "report.json"
        device = device or ("cpu" if _on_cpu() else None)
        # no isolation: the whole process is one check, with its own timeout and crash handling
        command = suite_command(
            suites, report, "vet", device=device, targets=[suite], isolation=False, user_args=["-q"]
        )
        env = child_env(tmp, source)
        readable = [*readable_folders(env, source), str(suites)]
        proc = run_contained(
            command,
            timeout=timeout,
            cwd=tmp,
            env=env,
            offline=offline,
            sandbox=sandbox,
            readable=readable,
            memory=memory_bytes(memory_gib),
        )
        if proc.returncode is None:
            return [
                record(
                    dist,
                    "suite",
                    "timeout",
                    f"{suite.name} ran for more than {timeout:g} s",
                    time.perf_counter() - started,
                )
            ]
        source = report if report.exists() else sidecar_path(report)
        try:
            results = list(load_report(source)["results"])
        except (ReportError, OSError) as exc:
            outcome: Outcome = "crashed" if proc.returncode < 0 else "error"
            return [
                record(
                    dist,
                    "suite",
                    outcome,
                    f"pytest exited {proc.returncode} without a report: {str(exc)[:200]}"
                    + _memory_hint(proc.stdout + proc.stderr, memory_gib),
                    time.perf_counter() - started,
                    {"output": (proc.stdout + proc.stderr)[-2000:]},
                )
            ]
    for result in results:  # written by the child: say so on each record
        result["info"] = {**(result.get("info") or {}), "claimed_by": SUITE_CLAIM}
    return results


def live_check(
    dist: str,
    top_level: set[str],
    *,
    timeout: float = 120.0,
    suite_timeout: float = 1800.0,
    device: str | None = None,
    suites: Path | None = None,
    source: Path | None = None,
    source_version: str | None = None,
    offline: bool = True,
    sandbox: bool = True,
    memory_gib: float = DEFAULT_MEMORY_GIB,
) -> dict[str, Any]:
    """The ``live`` part of vet's JSON: what ran, and the records. With ``source`` (a folder
    target) the folder's code runs, whatever is installed under that name. ``sandbox``: in
    bubblewrap (``vet/contained``); the result names it (``sandbox``, None without one) and the
    variables the children did not get (``env_dropped``, names only); each child may allocate
    ``memory_gib`` (``memory_limit_gib``)."""
    contained = {
        "sandbox": SANDBOX if sandbox else None,
        "env_dropped": dropped_variables(),
        "memory_limit_gib": memory_gib,
    }
    version = source_version if source is not None else distribution_version(dist)
    if source is None and version is None:
        rec = record(
            dist, "import", "not-installed", not_installed_reason(dist, "install it here to run the live check"), 0.0
        )
        return {"check": "import", "module": None, "suite": None, "records": [rec], **contained}
    module = primary_module(dist, top_level)
    if module is None:
        rec = record(dist, "import", "error", f"{dist} {version}: no importable top-level module found", 0.0)
        return {"check": "import", "module": None, "suite": None, "records": [rec], **contained}
    records = [import_check(dist, module, timeout, source, offline, sandbox, memory_gib)]
    records[0]["info"]["dist_version"] = version
    suite = library_suite(dist, suites)
    if suite is not None and records[0]["outcome"] == "passed":
        records += suite_check(dist, suite, suite_timeout, device, source, offline, sandbox, memory_gib)
    return {
        "check": "suite" if suite is not None else "smoke",
        "module": module,
        "suite": str(suite) if suite is not None else None,
        "source": str(source) if source is not None else None,
        "records": records,
        **contained,
    }
