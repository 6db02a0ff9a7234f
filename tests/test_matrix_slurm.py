"""``rocm-compat matrix --emit slurm``: the job-array script, checked without a cluster (bash -n,
its #SBATCH lines, a fake sbatch that runs the CPU combinations' tasks here and merges them)."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

import pytest
from matrix_fakes import PACKAGE, cluster_env, install_fake_sbatch, ready_venv

from pytest_rocm import cli
from pytest_rocm._resources import default_combos_path
from pytest_rocm.matrix import load_combos
from pytest_rocm.matrix.slurm import array_spec
from pytest_rocm.matrix.tasks import venv_stamp

CPU_ENV = Path(__file__).parent / "data" / "envs" / "cpu_only.json"
#: the options sbatch documents that the script's #SBATCH lines may use
SBATCH_OPTIONS = {
    "job-name",
    "account",
    "time",
    "nodes",
    "ntasks",
    "cpus-per-task",
    "output",
    "partition",
    "gres",
    "gpus",
}


def _emit(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert cli.main(["matrix", "--emit", "slurm", *args]) == 0, capsys.readouterr().err
    return capsys.readouterr().out


def _sbatch_lines(script: str) -> dict[str, str]:
    """The #SBATCH options, as sbatch reads them: only before the first command line."""
    found: dict[str, str] = {}
    for line in script.splitlines()[1:]:
        if line.startswith("#SBATCH "):
            match = re.fullmatch(r"#SBATCH --([a-z-]+)=(\S+)", line)
            assert match, f"not an sbatch option line: {line!r}"
            found[match.group(1)] = match.group(2)
        elif line.strip() and not line.startswith("#"):
            break
    later = [line for line in script.splitlines() if line.startswith("#SBATCH")]
    assert len(later) == len(found), "an #SBATCH line after the first command is ignored by sbatch"
    return found


def test_the_bundled_matrix_as_a_job_array_passes_bash_n_and_its_sbatch_lines_parse(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    script = _emit(
        capsys, "--partition", "gfx942=mi300x", "--partition", "gfx90a=mi250x", "--partition", "cpu=batch",
        "--account", "proj123", "--scale", "ci",
    )  # fmt: skip
    path = tmp_path / "compat.sbatch"
    path.write_text(script)
    subprocess.run(["bash", "-n", str(path)], check=True)
    options = _sbatch_lines(script)
    assert set(options) <= SBATCH_OPTIONS
    assert options["account"] == "proj123" and options["time"] == "01:00:00"  # 30 min install + ci's 30
    # one job array per partition, GPUs asked for where the task needs one, the merge after all
    submits = [line.strip() for line in script.splitlines() if "sbatch --parsable" in line]
    arrays = [s for s in submits if "--array=" in s]
    assert len(arrays) == 3
    assert any("--partition=mi300x --gres=gpu:1" in s for s in arrays)
    assert any("--partition=batch" in s and "gres" not in s for s in arrays)
    assert '--dependency="afterany:$after"' in submits[-1] and submits[-1].endswith('"$0" merge)')
    # every ROCm combination whose wheel is not known to lack the gfx, on each partition's gfx
    tasks = re.findall(r"^#   (\d+): (\S+) x (\S+) -> (\S+)", script, re.M)
    combos = load_combos(default_combos_path())
    assert ("torch2.13-rocm7.2", "gfx942") in {(name, gfx) for _, name, gfx, _ in tasks}
    assert [int(i) for i, *_ in tasks] == list(range(len(tasks)))
    for _, name, gfx, _report in tasks:
        combo = next(c for c in combos if c.name == name)
        assert combo.kernels_for(gfx) != "no" if gfx.startswith("gfx") else gfx == combo.backend
    assert len({report for *_, report in tasks}) == len(tasks)  # one report file each


def test_a_wheel_without_the_gfx_kernels_is_left_out_and_said(capsys: pytest.CaptureFixture[str]) -> None:
    script = _emit(capsys, "--partition", "gfx1151=strix", "--backend", "rocm")
    assert "#   left out: torch2.9-rocm6.4 x gfx1151: its torch wheel has no gfx1151 kernels" in script
    assert re.search(r"^#   \d+: torch2.10-rocm7.1 x gfx1151", script, re.M)  # 7.1's wheel has gfx1151


def test_an_override_gfx_runs_with_its_override(capsys: pytest.CaptureFixture[str]) -> None:
    script = _emit(capsys, "--partition", "gfx1031=rx6700", "--name", "torch2.6-rocm6.2.4")
    assert "HSA_OVERRIDE_GFX_VERSION=10.3.0" in script and "OVERRIDE=10.3.0" in script


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--partition", "mi300x"], "--partition 'mi300x': expected GFX=PARTITION"),
        (["--partition", "gfx9x=mi300x"], "'gfx9x' is not a gfx name"),
        (["--account", "a b"], "argument --account: 'a b'"),
        (["--gpus", "0"], "argument --gpus: '0'"),
        (["--partition", "gfx1151=strix", "--name", "torch2.9-rocm6.4"], "no task to run: torch2.9-rocm6.4 x gfx1151"),
    ],
)
def test_bad_cluster_options_are_one_line(capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    assert cli.main(["matrix", "--emit", "slurm", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_array_spec_compresses_runs() -> None:
    assert array_spec([5, 0, 1, 2, 7, 8]) == "0-2,5,7-8"
    assert array_spec([3]) == "3"


SUITE = """
import pytest
def test_add(): assert 1 + 1 == 2
@pytest.mark.parametrize("n", [1, 2])
def test_n(n): assert n
"""


def test_a_fake_sbatch_runs_the_cpu_tasks_here_and_the_merge_gates_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "suites" / "operators").mkdir(parents=True)
    (tmp_path / "suites" / "operators" / "test_ops.py").write_text(SUITE)
    reports = tmp_path / "shared" / "reports"
    script = _emit(
        capsys, "--name", "cpu-torch2.13", "--name", "cpu-torch2.14", "--partition", "cpu=debug",
        "--reports-dir", str(reports), "--host-label",
    )  # fmt: skip
    (tmp_path / "compat.sbatch").write_text(script)
    venvs = tmp_path / "venvs"
    for combo in load_combos(default_combos_path()):
        if combo.name in ("cpu-torch2.13", "cpu-torch2.14"):
            ready_venv(venvs / combo.name, venv_stamp(combo, PACKAGE))
    ready_venv(venvs / "_merge", PACKAGE)
    bin_dir = install_fake_sbatch(tmp_path)
    run_args = f"--suites {tmp_path / 'suites'} -n 0 -p no:randomly -p no:cacheprovider --rocm-env={CPU_ENV}"
    env = cluster_env(
        tmp_path, bin_dir, ROCM_COMPAT_VENVS=str(venvs), ROCM_COMPAT_RUN_ARGS=run_args, ROCM_COMPAT_RUN="run1",
        SLURMD_NODENAME="node-007",
    )  # fmt: skip
    done = subprocess.run(["bash", "compat.sbatch"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    log = (tmp_path / "sbatch.log").read_text()
    outs = "".join(p.read_text() for p in sorted((tmp_path / "out").iterdir()))
    assert "--array=0-1 --partition=debug" in log and "task-0 exit 0" in log and "task-1 exit 0" in log, outs
    assert re.search(r"--dependency=afterany:1001 \S+ merge", log), log
    out = reports / "run1"
    for name, label in (("cpu-torch2.13.0.json", "cpu torch2.13.0"), ("cpu-torch2.14.1.json", "cpu torch2.14.1")):
        document = json.loads((out / name).read_text())
        assert document["label"] == label and document["summary"]["passed"] == 3
        assert document["machine"]["host"] == "node-007"  # --host-label: the node's name, asked for
    assert "| operators/add |" in (out / "compat.md").read_text()
    assert (out / "compat.html").is_file()
    assert (reports / "atlas" / "index.html").is_file()
    assert re.search(r"job-\d+ exit 0", log), outs  # the merge passed: no baseline, nothing to gate

    # the gate: a baseline where a row passed that now fails makes the merge job fail
    baseline = tmp_path / "baseline"
    baseline.mkdir()
    document = json.loads((out / "cpu-torch2.13.0.json").read_text())
    document["results"].append(
        dict(document["results"][0], nodeid="operators/test_ops.py::test_gone", feature="operators/gone")
    )
    (baseline / "cpu-torch2.13.0.json").write_text(json.dumps(document))
    (tmp_path / "sbatch.log").unlink()
    env.update(ROCM_COMPAT_BASELINE=str(baseline), ROCM_COMPAT_RUN="run2")
    subprocess.run(["bash", "compat.sbatch"], cwd=tmp_path, env=env, check=True, capture_output=True, timeout=300)
    log = (tmp_path / "sbatch.log").read_text()
    assert re.search(r"job-\d+ exit 1", log), log
    merge_out = next(p for p in (tmp_path / "out").iterdir() if p.name.startswith("job-")).read_text()
    assert "operators/gone: passed -> missing" in merge_out, merge_out


def test_a_task_that_wrote_no_report_fails_the_merge_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = _emit(capsys, "--name", "cpu-torch2.13", "--reports-dir", str(tmp_path / "reports"))
    (tmp_path / "compat.sbatch").write_text(script)
    ready_venv(tmp_path / "venvs" / "_merge", PACKAGE)
    env = cluster_env(tmp_path, tmp_path, ROCM_COMPAT_VENVS=str(tmp_path / "venvs"), ROCM_COMPAT_RUN="r")
    (tmp_path / "reports" / "r").mkdir(parents=True)
    done = subprocess.run(
        ["bash", "compat.sbatch", "merge"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1
    assert "cpu-torch2.13.0.json: no report" in done.stderr and "no task wrote a report" in done.stderr


def test_the_task_command_is_rocm_compat_run_with_the_combination_label(capsys: pytest.CaptureFixture[str]) -> None:
    script = _emit(capsys, "--name", "torch2.13-rocm7.2")
    case = next(line for line in script.splitlines() if line.strip().startswith("0)"))
    fields = dict(re.findall(r"(\w+)=('[^']*'|\S+?);", case))
    assert shlex.split(fields["LABEL"]) == ["rocm torch2.13.0 rocm7.2 gfx1100"]
    assert fields["INDEX"] == "https://download.pytorch.org/whl/rocm7.2" and fields["REQUIRE"] == "--require-gpu"
    assert 'rocm-compat run --label "$LABEL" --reports-dir "$out"' in script
