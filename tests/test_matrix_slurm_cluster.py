"""The emitted SLURM script on a real one-node cluster: munged, slurmctld and slurmd started here on
localhost (Debian's slurm-wlm and munge; .ci/run installs them), the CPU combinations' array tasks
run by slurmd and merged by the dependent job. Skipped where the daemons are not installed or this
is not root (slurmd runs jobs as their user; CI is root)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from matrix_fakes import PACKAGE, ready_venv

from pytest_rocm import cli
from pytest_rocm._resources import default_combos_path
from pytest_rocm.matrix import load_combos
from pytest_rocm.matrix.tasks import venv_stamp

DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol")
MISSING = [d for d in DAEMONS if shutil.which(d) is None]
CPU_ENV = Path(__file__).parent / "data" / "envs" / "cpu_only.json"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(bool(MISSING), reason=f"not installed: {', '.join(MISSING)} (apt-get install slurm-wlm munge)"),
    pytest.mark.skipif(os.geteuid() != 0, reason="a private slurmd runs jobs as root here: needs root"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


CONF = """ClusterName=rocmcompat
SlurmctldHost={host}(127.0.0.1)
AuthType=auth/munge
AuthInfo=socket={d}/munge/munge.socket
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


@pytest.fixture
def one_node_cluster(tmp_path: Path) -> Iterator[dict[str, str]]:
    d = tmp_path / "cluster"
    for sub in ("state", "spool", "munge"):
        (d / sub).mkdir(parents=True)
    (d / "munge").chmod(0o700)
    key = d / "munge" / "munge.key"
    key.write_bytes(os.urandom(128))
    key.chmod(0o600)
    conf = d / "slurm.conf"
    host = socket.gethostname().split(".")[0]
    conf.write_text(CONF.format(host=host, d=d, ctld_port=_free_port(), d_port=_free_port(), cpus=os.cpu_count() or 1))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    munge = d / "munge"
    started = time.monotonic()
    subprocess.run(
        ["munged", "--force", f"--socket={munge}/munge.socket", f"--key-file={key}", f"--pid-file={munge}/munged.pid",
         f"--log-file={munge}/munged.log", f"--seed-file={munge}/seed"],
        check=True, env=env,
    )  # fmt: skip
    pids = [munge / "munged.pid", d / "slurmctld.pid", d / "slurmd.pid"]
    try:
        subprocess.run(["slurmctld", "-i"], check=True, env=env)
        subprocess.run(["slurmd"], check=True, env=env)
        deadline = time.monotonic() + 60
        while "idle" not in subprocess.run(["sinfo", "-h", "-o", "%T"], env=env, capture_output=True, text=True).stdout:
            assert time.monotonic() < deadline, (d / "slurmctld.log").read_text()[-2000:]
            time.sleep(0.2)
        env["CLUSTER_UP_S"] = f"{time.monotonic() - started:.2f}"
        yield env
    finally:
        for pid_file in reversed(pids):  # only the daemons this fixture started, by their pid
            if pid_file.exists():
                subprocess.run(["kill", pid_file.read_text().strip()], check=False)


def test_the_emitted_script_runs_on_a_real_one_node_cluster(
    tmp_path: Path, one_node_cluster: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "suites" / "operators").mkdir(parents=True)
    (tmp_path / "suites" / "operators" / "test_ops.py").write_text("def test_add(): assert 1 + 1 == 2\n")
    reports = tmp_path / "reports"
    args = ["matrix", "--emit", "slurm", "--name", "cpu-torch2.13", "--name", "cpu-torch2.14"]
    args += ["--partition", "cpu=debug", "--reports-dir", str(reports), "--cpus-per-task", "1", "--time", "10"]
    assert cli.main(args) == 0
    (tmp_path / "compat.sbatch").write_text(capsys.readouterr().out)
    venvs = tmp_path / "venvs"
    for combo in load_combos(default_combos_path()):
        if combo.backend == "cpu":
            ready_venv(venvs / combo.name, venv_stamp(combo, PACKAGE))
    ready_venv(venvs / "_merge", PACKAGE)
    env = {
        **one_node_cluster,
        "ROCM_COMPAT_VENVS": str(venvs),
        "ROCM_COMPAT_RUN": "run1",
        "PIP_NO_INDEX": "1",
        "ROCM_COMPAT_PACKAGE": PACKAGE,
        "ROCM_COMPAT_RUN_ARGS": f"--suites {tmp_path / 'suites'} -n 0 -p no:randomly -p no:cacheprovider --rocm-env={CPU_ENV}",
    }
    started = time.monotonic()
    submitted = subprocess.run(["bash", "compat.sbatch"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert submitted.returncode == 0, submitted.stderr
    merge_id = submitted.stdout.split(" and ")[1].split()[0]
    deadline = time.monotonic() + 240
    while subprocess.run(["squeue", "-h"], env=env, capture_output=True, text=True).stdout.strip():
        assert time.monotonic() < deadline, subprocess.run(["squeue"], env=env, capture_output=True, text=True).stdout
        time.sleep(0.5)
    took = time.monotonic() - started
    job = subprocess.run(["scontrol", "show", "job", merge_id], env=env, capture_output=True, text=True).stdout
    outs = "".join(p.read_text() for p in sorted(tmp_path.glob("rocm-compat-*.out")))
    assert "JobState=COMPLETED" in job and "ExitCode=0:0" in job, job + outs
    for name in ("cpu-torch2.13.0.json", "cpu-torch2.14.1.json"):
        document = json.loads((reports / "run1" / name).read_text())
        assert document["summary"]["passed"] == 1
    assert (reports / "run1" / "compat.html").is_file() and (reports / "atlas" / "index.html").is_file()
    print(f"one-node cluster up in {one_node_cluster['CLUSTER_UP_S']} s; submit to merged in {took:.1f} s")
