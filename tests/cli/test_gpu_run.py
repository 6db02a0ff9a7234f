"""benchmarks/gpu_run.sh: the GPU run as one prepared command, exercised on the CPU.

``--dry-run`` prints the plan and writes nothing; ``--tiny`` runs the real bundled suites (a few
rows each, ci profile) end to end; a folder of fake suites shows that a suite over its time limit
or a crashed one costs only its own unfinished tests, and that the install step takes missing
packages from the wheels folder without ever replacing torch.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from pytest_rocm._resources import bundled_suites
from pytest_rocm.report.load import load_report

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "gpu_run.sh"

needs_shell = pytest.mark.skipif(
    shutil.which("bash") is None or shutil.which("timeout") is None,
    reason="gpu_run.sh needs bash and timeout (GNU coreutils)",
)
pytestmark = needs_shell


def suites_with_tests(root: Path) -> list[str]:
    return sorted(
        d.name
        for d in root.iterdir()
        if d.is_dir() and not d.name.startswith(("_", ".")) and (any(d.glob("test_*.py")) or any(d.glob("*/test_*.py")))
    )


def script_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """This environment without what would leak into the script's pytest runs (this run's xdist
    worker, a report path), with no wheels folder (nothing is installed) unless ``extra`` says."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST_XDIST", "PYTEST_ROCM", "GPU_RUN_"))
        and k not in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS")
    }
    env.update({"PYTHON": sys.executable, "WHEELS": str(tmp_path / "no-wheels"), **extra})
    return env


def gpu_run(tmp_path: Path, *args: str, timeout: float | None = 240, **extra: str) -> subprocess.CompletedProcess[str]:
    """The script, waited for until it exits; ``timeout=None`` for the end-to-end runs, whose one
    guard is their pytest-timeout marker (a loaded machine makes them slow, not wrong)."""
    return subprocess.run(
        ["bash", str(SCRIPT), *args],
        cwd=tmp_path,
        env=script_env(tmp_path, **extra),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_dry_run_prints_the_plan_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = gpu_run(tmp_path, str(out), "--dry-run", timeout=60)
    assert done.returncode == 0, done.stderr
    plan = done.stdout
    suites = suites_with_tests(bundled_suites())
    assert {"operators", "libraries", "models"} <= set(suites)
    for suite in suites:  # every suite folder, not only the three the script knows
        assert f"--suites {bundled_suites() / suite} --reports-dir {out / suite}" in plan
        assert f"suite {suite} (limit " in plan
    for name in ("run.log", "env.txt", "env.json", "doctor.txt", "report.json", "table.md", "table.html", "summary.md"):
        assert name in plan
    assert "PYTEST_ROCM_SCALE=full timeout " in plan and "--rootdir " in plan
    # the suites' own timeout markers are capped to the per-test limit, as --timeout caps the rest
    for line in (line for line in plan.splitlines() if "--reports-dir " in line):
        per_test = line.split("--timeout ")[1].split()[0]
        assert f"PYTEST_ROCM_KNOWN_ISSUES_TIMEOUT={per_test} PYTEST_ROCM_DIST_TIMEOUT={per_test} " in line, line
    assert " env --json -o " in plan and " doctor" in plan and " table " in plan
    assert not out.exists()


def test_dry_run_runs_the_device_profile_as_its_own_serial_step(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = gpu_run(tmp_path, str(out), "--dry-run", timeout=60)
    assert done.returncode == 0, done.stderr
    lines = {
        line.split("--reports-dir ")[1].split()[0]: line
        for line in done.stdout.splitlines()
        if "--reports-dir " in line
    }
    device, operators = lines[str(out / "device")], lines[str(out / "operators")]
    assert f"--suites {bundled_suites() / 'operators'} " in device and "timeout 480 " in device
    assert " -n 0 --timeout 240 " in device and device.endswith("-k test_boundary_device > device/log.txt")
    assert f"--ignore={bundled_suites() / 'operators' / 'test_boundary.py'} " in device  # not even collected
    assert "test_boundary_device.py" not in device
    assert "-k not\\ test_boundary_device" in operators  # the operators step leaves them to it
    assert "suite device (limit 480 s, scale full)" in done.stdout


def test_dry_run_limits_budget_only_and_install(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    done = gpu_run(
        tmp_path,
        "out",
        "--dry-run",
        "--only",
        "models,operators",
        timeout=60,
        WHEELS=str(wheels),
        GPU_RUN_BUDGET="135",
        GPU_RUN_LIMIT_MODELS="33",
        GPU_RUN_EXTRA_PACKAGES="gpu-run-surely-absent",
    )
    assert done.returncode == 0, done.stderr
    plan = done.stdout
    assert "limits models=33s operators=75s" in plan  # 150 of 270 s of defaults -> 75 of 135
    assert "suite libraries" not in plan
    install = [line for line in plan.splitlines() if " pip install " in line]
    assert len(install) == 1 and "--no-index --find-links" in install[0] and " gpu-run-surely-absent >" in install[0]
    assert " torch" not in install[0]


@pytest.mark.parametrize(
    ("args", "message"),
    [((), "OUTDIR is required"), (("a", "b"), "one OUTDIR only"), (("a", "--only", "nosuch"), "no suite nosuch")],
)
def test_bad_usage_is_exit_2(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    done = gpu_run(tmp_path, *args, "--dry-run", timeout=60)
    assert done.returncode == 2 and message in done.stderr


def test_a_suites_folder_without_suites_is_exit_2(tmp_path: Path) -> None:
    (tmp_path / "suites" / "empty").mkdir(parents=True)
    done = gpu_run(tmp_path, "out", "--dry-run", timeout=60, GPU_RUN_SUITES=str(tmp_path / "suites"))
    assert done.returncode == 2 and "no suite with test files" in done.stderr


def test_packages_lists_the_suites_packages_without_torch(tmp_path: Path) -> None:
    done = gpu_run(tmp_path, "--packages", timeout=60)
    names = done.stdout.split()
    assert done.returncode == 0 and {"pytest-xdist", "transformers", "bitsandbytes"} <= set(names)
    assert "torch" not in names


@pytest.mark.slow
@pytest.mark.timing  # each suite within a wall-clock limit
@pytest.mark.timeout(900)
def test_tiny_runs_every_bundled_suite_end_to_end(tmp_path: Path) -> None:
    """The whole script on this CPU: a handful of rows per suite, in well under a minute idle."""
    out = tmp_path / "out"
    done = gpu_run(tmp_path, str(out), "--tiny", timeout=None)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    suites = suites_with_tests(bundled_suites())
    summary = json.loads((out / "summary.json").read_text())
    assert sorted(r["suite"] for r in summary["suites"]) == sorted([*suites, "device"])
    for row in summary["suites"]:
        assert not row["hit_limit"] and row["report"], row
        document = load_report(out / row["report"])
        own = "operators" if row["suite"] == "device" else row["suite"]  # the device rows are the operators suite's
        assert {r["suite"] for r in document["results"]} <= {own}  # features keep their suite
        if row["suite"] == "device":  # ci on a CPU: the one row that says where the device rows run
            (skip,) = document["results"]
            assert skip["outcome"] == "skipped" and "device-profile rows run in the full profile" in str(skip)
    merged = load_report(out / "report.json")
    assert merged["scale"] == "ci" and merged["results"]
    assert {"operators", "libraries", "models"} <= {r["suite"] for r in merged["results"]}
    assert (out / "table.md").read_text().count("operators/") > 0
    assert (out / "table.html").stat().st_size > 0
    for name in ("env.txt", "env.json", "doctor.txt", "doctor.json", "summary.md"):
        assert (out / name).stat().st_size > 0, name
    log = (out / "run.log").read_text()
    assert "== summary ==" in log and "| operators |" in log


def probe_wheel(folder: Path, name: str, requires: str | None = None) -> None:
    """A minimal wheel (one module) for the install step."""
    module, info = name.replace("-", "_"), f"{name.replace('-', '_')}-1.0.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n" + (
        f"Requires-Dist: {requires}\n" if requires else ""
    )
    with zipfile.ZipFile(folder / f"{module}-1.0-py3-none-any.whl", "w") as wheel:
        wheel.writestr(f"{module}.py", "")
        wheel.writestr(f"{info}/METADATA", metadata)
        wheel.writestr(
            f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        wheel.writestr(f"{info}/RECORD", "")


def inner_venv(path: Path) -> Path:
    """A venv whose interpreter also sees the running environment's packages (torch, pytest, this
    package), whatever that environment is: a venv's own ``--system-site-packages`` would see its
    base interpreter's instead. The outer folders are added as site directories (so their .pth
    files, an editable install's among them, are read), after the inner one's."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    outer = [p for p in sys.path if p.endswith("-packages") and Path(p).is_dir()]
    inner = next((path / "lib").glob("python*/site-packages"))
    lines = "".join(f"import site; site.addsitedir({p!r})\n" for p in outer)
    (inner / "_outer_environment.pth").write_text(lines)
    return path


@pytest.mark.slow
@pytest.mark.timing  # a wall-clock limit hit on purpose
@pytest.mark.timeout(900)
def test_a_suite_over_its_limit_or_crashed_keeps_the_others(tmp_path: Path) -> None:
    suites = tmp_path / "suites"
    tests = {
        "fast": "def test_ok():\n    pass\n",
        "crash": "import os, signal\n\ndef test_a():\n    pass\n\ndef test_b():\n    os.kill(os.getpid(), signal.SIGKILL)\n",
        # no per-test timeout: only the suite's wall-clock limit ends it
        "slow": "import time, pytest\n\ndef test_a():\n    pass\n\n@pytest.mark.timeout(0)\n"
        "def test_b():\n    time.sleep(600)\n",
    }
    for name, text in tests.items():
        (suites / name).mkdir(parents=True)
        (suites / name / f"test_{name}.py").write_text(text)
    # the install step runs into a venv of its own (this one's packages visible, nothing changed)
    venv = inner_venv(tmp_path / "venv")
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    probe_wheel(wheels, "gpu-run-probe")
    probe_wheel(wheels, "gpu-run-wants-torch", requires="torch==0.0.1")
    out = tmp_path / "out"
    done = gpu_run(
        tmp_path,
        str(out),
        PYTHON=str(venv / "bin" / "python"),
        WHEELS=str(wheels),
        GPU_RUN_SUITES=str(suites),
        GPU_RUN_WORKERS="0",
        # the limit ends test_b; test_a must finish before it, after a start that a loaded
        # machine makes slow (rocm-compat run detects the environment, pytest imports the plugin)
        GPU_RUN_LIMIT_SLOW="45",
        GPU_RUN_EXTRA_PACKAGES="gpu-run-probe gpu-run-wants-torch",
        timeout=None,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    rows = {r["suite"]: r for r in json.loads((out / "summary.json").read_text())["suites"]}
    assert list(rows) == ["crash", "fast", "slow"]
    assert rows["fast"]["status"] == "ok" and rows["fast"]["counts"] == {"passed": 1}
    # the limit's SIGTERM reaches `rocm-compat run`, which passes it on to pytest: the report is
    # written (marked interrupted) with test_a, finished before the limit, and the test it stopped
    assert rows["slow"]["hit_limit"] and rows["slow"]["report"] == "slow/cpu-torch2.13.0.json"
    assert rows["slow"]["interrupted"] and rows["slow"]["counts"] == {"passed": 1, "error": 1}
    # the SIGKILL in test_b: the first collected test without a result, its row is crashed, not lost
    assert rows["crash"]["exit"] == 2 and rows["crash"]["counts"] == {"passed": 1, "crashed": 1}
    merged = load_report(out / "report.json")
    assert merged["interrupted"] and len(merged["results"]) == 5
    assert "interrupted" in (out / "table.md").read_text()
    assert "hit its limit (45 s)" in (out / "summary.md").read_text()
    # installed from the wheels folder into the venv; the one that wants another torch was refused
    site = next((venv / "lib").glob("python*/site-packages"))
    assert (site / "gpu_run_probe.py").exists() and not (site / "gpu_run_wants_torch.py").exists()
    assert "could not install gpu-run-wants-torch" in done.stdout
