"""The matrix: the plugin's own tests, one suite run per ROCm/PyTorch combination, the table.

    nox -s lint                  # CI's lint gate (.ci/lint), in an environment made as CI makes it
    nox -s tests                 # the plugin's own tests
    nox -t suite                 # every combination of matrix/combos.toml that can run here
    nox -s suite-cpu-torch2.13   # one combination
    nox -s table                 # merge whatever reports/ holds into reports/compat.{md,html}
    nox -s llama                 # the llama.cpp row, llama-cpp-python built for this machine's GPU

Test failures inside a combination are data: the session succeeds and keeps its report. An
environment that cannot be built fails loudly with pip's reason. A combination this machine cannot
run (a ROCm one without an AMD GPU, a Python that is not installed) is skipped with the reason.
Re-running a combination reuses its virtual environment (``reuse_venv``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))  # pytest_rocm.matrix and .suite_command need only the stdlib and packaging

from pytest_rocm.matrix import Combo, ComboError, amd_gpu_present, load_combos, nvidia_gpu_present, runnable_here  # noqa: E402
from pytest_rocm.setup.llama import cmake_args  # noqa: E402
from pytest_rocm.suite_command import suite_command  # noqa: E402

REPORTS = ROOT / "reports"
SUITES = ROOT / "suites"

try:
    COMBOS = load_combos(ROOT / "matrix" / "combos.toml")
except ComboError as exc:  # one line instead of nox's traceback
    sys.exit(f"noxfile: {exc}")

nox.options.default_venv_backend = "uv|virtualenv"
nox.options.error_on_missing_interpreters = False  # a Python this machine lacks: skip, not fail
nox.options.sessions = ["lint", "tests", *(f"suite-{c.name}" for c in COMBOS)]


#: where the ``tests`` session takes torch from: PyPI alone gives Linux the multi-GB CUDA build
TORCH_INDEX_URL = os.environ.get("TORCH_INDEX_URL", "https://download.pytorch.org/whl/cpu")


@nox.session
def tests(session: nox.Session) -> None:
    """The plugin's own tests (the README's test command)."""
    # an extra index: pip takes 2.13.0+cpu over PyPI's 2.13.0, uv searches extra indexes first
    session.install("--extra-index-url", TORCH_INDEX_URL, "-r", str(ROOT / ".ci" / "requirements.txt"))
    session.install("-e", f"{ROOT}[test]")
    session.run("python", "-m", "pytest", "-n", "2", *session.posargs)


@nox.session(venv_backend="venv")  # a venv with pip: `rocm-compat setup` runs the environment's pip
def lint(session: nox.Session) -> None:
    """The lint gate of CI (.ci/lint: ruff check, ruff format --check, mypy --strict), in an
    environment made as .ci/run makes it: the README's test command's installs, then the lint
    extra, under CI's constraints. So mypy sees torch and hypothesis here as it does in CI."""
    session.env["PIP_CONSTRAINT"] = str(ROOT / ".ci" / "requirements.txt")
    session.install("-e", str(ROOT))
    session.run("rocm-compat", "setup", "test")
    session.install("-e", f"{ROOT}[lint]")
    session.run("bash", str(ROOT / ".ci" / "lint"), external=True)


def _suite_session(combo: Combo):  # type: ignore[no-untyped-def]
    def suite(session: nox.Session) -> None:
        ok, reason = runnable_here(combo)
        if not ok:
            session.skip(reason)
        torch_args = [combo.torch]
        if combo.index_url:
            torch_args += ["--index-url", combo.index_url]
        session.install(*torch_args)
        if combo.packages:
            # torch's requirement again: a package that wants another torch must fail the install,
            # not swap the combination's build for PyPI's (a CUDA build on Linux)
            session.install(*combo.packages, combo.torch)
        session.install("pytest-xdist", "pytest-timeout", str(ROOT))
        REPORTS.mkdir(exist_ok=True)
        report = ROOT / combo.report_name
        # the same command as `rocm-compat run`: -n auto, a crashed worker replaced, a hung kernel
        # killed and recorded as timeout; xdist and pytest-timeout were just installed above
        # no label: the plugin gives the column the default label `rocm-compat run` gives it
        # (``cpu torch2.13.0``), so one machine's run is one column whoever ran it
        args = suite_command(
            SUITES,
            report,
            None,
            device="cpu" if combo.backend == "cpu" else None,
            user_args=["-q", *session.posargs],
            have_xdist=True,
            have_timeout=True,
            python="python",
        )
        # 0: all passed, 1: some tests failed -- both are data. 2+ (usage error, internal error,
        # interrupted) means the run itself broke: fail loudly.
        if session.run(*args, success_codes=[0, 1]) is None:
            return  # --install-only: nothing ran, no report expected
        if not report.exists():
            session.error(f"{combo.name}: the run finished but wrote no report at {report}")
        session.log(f"{combo.name}: report at {report}")

    suite.__doc__ = f"{combo.torch} ({' '.join(filter(None, (combo.backend, combo.rocm)))}) -- {combo.source}"
    return suite


for _combo in COMBOS:
    nox.session(
        _suite_session(_combo),
        name=f"suite-{_combo.name}",
        python=_combo.python,
        reuse_venv=True,
        tags=["suite", _combo.backend],
    )


@nox.session(python=False, default=False)
def table(session: nox.Session) -> None:
    """Merge every report under reports/ into reports/compat.md and reports/compat.html."""
    reports = sorted(str(p) for p in REPORTS.glob("*.json"))
    if not reports:
        session.error(f"no reports under {REPORTS}: run a suite session first (nox -t suite)")
    for fmt in ("md", "html"):
        session.run("rocm-compat", "table", *reports, "--format", fmt, "-o", str(REPORTS / f"compat.{fmt}"))


#: llama-cpp-python wheels the ``llama`` session built, one folder per CMAKE_ARGS: the build
#: compiles llama.cpp (7.5 min on 2 cores for the CPU backend), so a rerun reuses the wheel
LLAMA_WHEELS = ROOT / ".nox" / "llama-wheels"


def _llama_backend() -> tuple[str, list[str]]:
    """(``rocm``/``cuda``/``cpu``, the AMD gfx targets) of this machine, read without torch."""
    if amd_gpu_present():
        from pytest_rocm.env.detect import detect_system_environment
        from pytest_rocm.env.seam import Seam

        return "rocm", [g.gfx for g in detect_system_environment(Seam()).system.gpus if g.gfx]
    return ("cuda", []) if nvidia_gpu_present() else ("cpu", [])


@nox.session(venv_backend="venv", reuse_venv=True, default=False)  # a venv with pip: pip wheel builds
def llama(session: nox.Session) -> None:
    """The llama.cpp row (suites/libraries/test_llama_cpp.py; docs/inference.md): llama-cpp-python
    built with this machine's ggml backend (HIP/CUDA/CPU), the wheel cached between runs."""
    backend, gfx = _llama_backend()
    args = cmake_args(backend, gfx)
    cache = LLAMA_WHEELS / (args.replace(" ", "_").replace(";", "+").replace("=", "-").strip("-") or "cpu")
    wheels = sorted(cache.glob("llama_cpp_python-*.whl"))
    if not wheels:
        session.log(f"building llama-cpp-python for {backend} (CMAKE_ARGS={args!r}): minutes; cached in {cache}")
        session.run(
            "pip", "wheel", "--no-deps", "--no-binary", "llama-cpp-python", "-w", str(cache),
            "llama-cpp-python>=0.3.36", env={"CMAKE_ARGS": args},
        )  # fmt: skip
        wheels = sorted(cache.glob("llama_cpp_python-*.whl"))
    else:
        session.log(f"llama-cpp-python for {backend}: cached wheel {wheels[-1].name}")
    # the row needs torch only to build its tiny model from a config: the CPU build does. CI's pins
    # as constraints: torch==2.13.0 takes 2.13.0+cpu from the extra index, never PyPI's CUDA build
    session.env["PIP_CONSTRAINT"] = str(ROOT / ".ci" / "requirements.txt")
    session.install("--extra-index-url", TORCH_INDEX_URL, "torch")
    session.install(str(wheels[-1]), f"{ROOT}[suites]")
    REPORTS.mkdir(exist_ok=True)
    report = REPORTS / f"llama-cpp-{backend}.json"
    session.run("python", "-m", "pytest", str(SUITES / "libraries" / "test_llama_cpp.py"), f"--rocm-report={report}",
                "-q", *session.posargs, success_codes=[0, 1])  # fmt: skip
