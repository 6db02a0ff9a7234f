"""Stand-ins for a cluster's tools in the matrix tests: a fake ``sbatch`` that runs each array task
here, one after the other, with the variables SLURM gives it, and logs every submission; and
ready-made venvs (the reuse path of the emitted scripts) that point at this test's Python."""

from __future__ import annotations

import os
import sys
from pathlib import Path

FAKE_SBATCH = f"""#!{sys.executable}
# fake sbatch: logs its options, runs --array tasks (lists and ranges) or the job itself, here
import os, subprocess, sys
log = os.environ["FAKE_SBATCH_LOG"]
args = sys.argv[1:]
options = [a for a in args if a.startswith("--")]
rest = args[len(options):]
script, script_args = rest[0], rest[1:]
with open(log, "a") as f:
    f.write(" ".join(args) + "\\n")
job = sum(1 for _ in open(log)) + 1000
array = next((o.split("=", 1)[1] for o in options if o.startswith("--array=")), None)
ids = []
for part in (array.split(",") if array else []):
    lo, _, hi = part.partition("-")
    ids += list(range(int(lo), int(hi or lo) + 1))
runs = [dict(SLURM_ARRAY_TASK_ID=str(i), SLURM_ARRAY_JOB_ID=str(job)) for i in ids] if array else [{{}}]
for extra in runs:
    env = {{k: v for k, v in os.environ.items() if k != "SLURM_ARRAY_TASK_ID"}}
    env.update(extra, SLURM_JOB_ID=str(job))
    name = f"task-{{extra['SLURM_ARRAY_TASK_ID']}}" if extra else "job-" + str(job)
    with open(os.path.join(os.environ["FAKE_SBATCH_OUT"], name + ".out"), "w") as out:
        status = subprocess.call(["bash", script, *script_args], env=env, stdout=out, stderr=subprocess.STDOUT)
    with open(log, "a") as f:
        f.write(f"{{name}} exit {{status}}\\n")
print(f"{{job}};fakecluster")
"""


def install_fake_sbatch(folder: Path) -> Path:
    bin_dir = folder / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    sbatch = bin_dir / "sbatch"
    sbatch.write_text(FAKE_SBATCH)
    sbatch.chmod(0o755)
    (folder / "out").mkdir(exist_ok=True)
    return bin_dir


def ready_venv(path: Path, stamp: str) -> None:
    """A venv the script reuses (its stamp matches): its activate puts this test's Python first."""
    (path / "bin").mkdir(parents=True, exist_ok=True)
    (path / "bin" / "activate").write_text(f'export PATH="{Path(sys.executable).parent}:$PATH"\n')
    (path / ".rocm-compat-stamp").write_text(stamp)


#: the pytest-rocm the tests' scripts install (ROCM_COMPAT_PACKAGE): its text is in the venvs' stamps
PACKAGE = "pytest-rocm"


def cluster_env(folder: Path, bin_dir: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        PATH=f"{bin_dir}:{Path(sys.executable).parent}:{env.get('PATH', '')}",
        FAKE_SBATCH_LOG=str(folder / "sbatch.log"),
        FAKE_SBATCH_OUT=str(folder / "out"),
        PIP_NO_INDEX="1",  # a venv the script would build installs nothing from the network
        ROCM_COMPAT_VENVS=str(folder / "venvs"),
        ROCM_COMPAT_PACKAGE=PACKAGE,  # the ready venvs' (the script's own default builds a wheel at submission)
    )
    env.update(extra)
    return env
