"""``rocm-compat matrix --emit k8s``: Indexed Jobs validated against the real Kubernetes JSON
schema (kubernetes-validate, which bundles the schemas), the node selection by the labels AMD's node
labeller publishes, and the pods' script run here on the CPU combination."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_rocm import cli
from pytest_rocm.matrix.tasks import checkout_root

kubernetes_validate = pytest.importorskip("kubernetes_validate")
yaml = pytest.importorskip("yaml")

CPU_ENV = Path(__file__).parent / "data" / "envs" / "cpu_only.json"


def _emit(capsys: pytest.CaptureFixture[str], *args: str) -> list[dict[str, Any]]:
    assert cli.main(["matrix", "--emit", "k8s", "--run-id", "r1", *args]) == 0, capsys.readouterr().err
    return list(yaml.safe_load_all(capsys.readouterr().out))


def _emit_text(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert cli.main(["matrix", "--emit", "k8s", *args]) == 0, capsys.readouterr().err
    return capsys.readouterr().out


def _validate(documents: list[dict[str, Any]]) -> None:
    version = kubernetes_validate.latest_version()
    for document in documents:
        # strict: an unknown field (a typo) is an error too, as kubectl --validate=strict
        kubernetes_validate.validate(document, version, strict=True)


def _jobs(documents: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in documents if d["kind"] == "Job"}


def test_the_bundled_matrix_is_valid_kubernetes_and_one_indexed_job_per_gfx(capsys: pytest.CaptureFixture[str]) -> None:
    documents = _emit(capsys, "--partition", "gfx942=x", "--partition", "gfx90a=y", "--namespace", "ml")
    _validate(documents)
    kinds = [d["kind"] for d in documents]
    assert kinds[:2] == ["PersistentVolumeClaim", "ConfigMap"] and set(kinds[2:]) == {"Job"}
    jobs = _jobs(documents)
    gfx942 = jobs["rocm-compat-r1-gfx942-py3-12"]
    spec = gfx942["spec"]
    assert spec["completionMode"] == "Indexed" and spec["completions"] == spec["parallelism"] >= 2
    # one task failing does not end the others: per-index limits, not the Job's backoffLimit
    assert spec["backoffLimitPerIndex"] == 0 and spec["maxFailedIndexes"] == spec["completions"]
    assert "backoffLimit" not in spec
    pod = spec["template"]["spec"]
    container = pod["containers"][0]
    assert container["resources"]["limits"] == {"amd.com/gpu": 1}
    term = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
    expression = term["matchExpressions"][0]
    assert expression["key"] == "amd.com/gpu.device-id" and expression["operator"] == "In"
    assert "74a1" in expression["values"]  # MI300X (tests/data/envs/mi300x_8.json)
    assert gfx942["metadata"]["namespace"] == "ml"
    # the CPU combinations: no GPU asked for, no node selection; the merge Job after them
    cpu = jobs["rocm-compat-r1-cpu-py3-11"]["spec"]["template"]["spec"]
    assert "resources" not in cpu["containers"][0] and "affinity" not in cpu
    merge = jobs["rocm-compat-r1-merge"]["spec"]["template"]["spec"]["containers"][0]
    assert merge["command"] == ["bash", "/scripts/run.sh", "merge"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["reports"]["persistentVolumeClaim"]["claimName"] == "rocm-compat-reports"


def test_a_site_label_replaces_the_device_id_and_cuda_asks_for_nvidia(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    combos = tmp_path / "combos.toml"
    combos.write_text(
        '[[combo]]\nname = "cuda-torch2.13"\ntorch = "torch==2.13.0"\nindex_url = "https://download.pytorch.org/whl/cu130"\n'
        'backend = "cuda"\npython = "3.12"\n'
        '[[combo]]\nname = "rocm"\ntorch = "torch==2.13.0"\nindex_url = "https://download.pytorch.org/whl/rocm7.2"\n'
        'backend = "rocm"\nrocm = "7.2"\npython = "3.12"\nrunner = ["gfx1151"]\n'
    )
    documents = _emit(
        capsys,
        "--file",
        str(combos),
        "--node-label",
        "gfx1151=example.com/gpu=strix-halo",
        "--pvc",
        "shared",
        "--gpus",
        "2",
    )
    _validate(documents)
    assert "PersistentVolumeClaim" not in [d["kind"] for d in documents]  # --pvc: an existing claim
    jobs = _jobs(documents)
    strix = jobs["rocm-compat-r1-gfx1151-py3-12"]["spec"]["template"]["spec"]
    assert strix["nodeSelector"] == {"example.com/gpu": "strix-halo"}
    assert strix["containers"][0]["resources"]["limits"] == {"amd.com/gpu": 2}
    cuda = jobs["rocm-compat-r1-cuda-py3-12"]["spec"]["template"]["spec"]
    assert cuda["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 2}


def test_long_names_stay_valid_and_distinct(capsys: pytest.CaptureFixture[str]) -> None:
    run_id = "a" * 40
    documents = list(
        yaml.safe_load_all(_emit_text(capsys, "--run-id", run_id, "--partition", "gfx942=x", "--partition", "gfx90a=y"))
    )
    _validate(documents)
    names = [d["metadata"]["name"] for d in documents if d["kind"] == "Job"]
    assert len(set(names)) == len(names) and all(len(n) <= 63 and not n.endswith("-") for n in names)


def test_a_gfx_without_known_device_ids_asks_for_a_node_label(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["matrix", "--emit", "k8s", "--partition", "gfx1103=x", "--name", "torch2.10-rocm7.1"]) == 2
    err = capsys.readouterr().err
    assert "no PCI device ids known for gfx1103" in err and "--node-label gfx1103=KEY=VALUE" in err


def test_the_validator_catches_a_broken_manifest(capsys: pytest.CaptureFixture[str]) -> None:
    """The check can fail: the same Job with a field of the wrong type is refused by the schema."""
    documents = _emit(capsys, "--name", "cpu-torch2.13")
    job = next(d for d in documents if d["kind"] == "Job")
    job["spec"]["completions"] = "one"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(job, kubernetes_validate.latest_version(), strict=True)
    job["spec"]["completions"] = 1
    job["spec"]["template"]["spec"]["containers"][0]["resourses"] = {}  # a typo: strict refuses it
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(job, kubernetes_validate.latest_version(), strict=True)


SUITE = "def test_add(): assert 1 + 1 == 2\ndef test_sub(): assert 2 - 1 == 1\n"


def test_the_pods_script_runs_the_cpu_task_here_and_the_merge_waits_for_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    documents = _emit(capsys, "--name", "cpu-torch2.13")
    script = tmp_path / "run.sh"
    script.write_text(next(d for d in documents if d["kind"] == "ConfigMap")["data"]["run.sh"])
    subprocess.run(["bash", "-n", str(script)], check=True)
    job = next(d for d in documents if d["kind"] == "Job" and "merge" not in d["metadata"]["name"])
    env_list = job["spec"]["template"]["spec"]["containers"][0]["env"]
    pod_env = {e["name"]: e["value"] for e in env_list if "value" in e}
    (tmp_path / "suites" / "operators").mkdir(parents=True)
    (tmp_path / "suites" / "operators" / "test_ops.py").write_text(SUITE)
    env = {
        **os.environ,
        **pod_env,
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "JOB_COMPLETION_INDEX": "0",
        "ROCM_COMPAT_MOUNT": str(tmp_path / "volume"),
        "ROCM_COMPAT_PREINSTALLED": "1",  # this test's Python has the combination
        "ROCM_COMPAT_WORK": str(tmp_path / "work"),  # and were it not: nothing outside the test's folder,
        "PIP_NO_INDEX": "1",  # nothing downloaded
        "ROCM_COMPAT_RUN_ARGS": f"--suites {tmp_path / 'suites'} -n 0 -p no:randomly -p no:cacheprovider --rocm-env={CPU_ENV}",
    }
    task = subprocess.run(["bash", str(script), "task"], env=env, capture_output=True, text=True, timeout=300)
    assert task.returncode == 0, task.stdout[-2000:] + task.stderr[-2000:]
    out = tmp_path / "volume" / "r1"
    assert (out / "cpu-torch2.13.0.json.done").exists()
    assert json.loads((out / "cpu-torch2.13.0.json").read_text())["label"] == "cpu torch2.13.0"
    merge = subprocess.run(["bash", str(script), "merge"], env=env, capture_output=True, text=True, timeout=300)
    assert merge.returncode == 0, merge.stdout[-2000:] + merge.stderr[-2000:]
    assert (out / "compat.html").is_file() and (tmp_path / "volume" / "atlas" / "index.html").is_file()


EXAMPLES = Path(__file__).parents[1] / "docs" / "examples"
EXAMPLE_CHECKOUT = "/home/me/pytest-rocm"


@pytest.mark.parametrize(
    ("name", "args"),
    [
        (
            "compat-slurm.sbatch",
            ["--emit", "slurm", "--partition", "gfx942=mi300x", "--partition", "gfx90a=mi250x", "--partition",
             "cpu=batch", "--account", "proj123", "--reports-dir", "/shared/rocm-compat"],
        ),
        ("compat-k8s.yaml", ["--emit", "k8s", "--partition", "gfx942=any", "--partition", "gfx90a=any", "--run-id", "example"]),
    ],
)  # fmt: skip
def test_the_examples_in_the_docs_are_what_the_emitters_write(
    capsys: pytest.CaptureFixture[str], name: str, args: list[str]
) -> None:
    assert cli.main(["matrix", *args]) == 0
    # the checkout the wheel is built from is this machine's: the example names a stand-in
    expected = capsys.readouterr().out.replace(str(checkout_root()), EXAMPLE_CHECKOUT)
    assert (EXAMPLES / name).read_text() == expected, (
        f"regenerate: rocm-compat matrix {' '.join(args)} > docs/examples/{name}"
    )
    if name.endswith(".yaml"):
        _validate(list(yaml.safe_load_all(expected)))
    scripts = [expected] if name.endswith(".sbatch") else _scripts(list(yaml.safe_load_all(expected)))
    for script in scripts:
        _shellcheck(script)


def _scripts(documents: list[dict[str, Any]]) -> list[str]:
    maps = [d for d in documents if d["kind"] == "ConfigMap"]
    return [text for m in maps for key, text in m["data"].items() if key.endswith(".sh")]


def _shellcheck(script: str) -> None:
    """Every warning shellcheck has (style notes too): a site reads these scripts before it runs them."""
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck is not installed (Debian: apt-get install shellcheck; .ci/run installs it)")
    done = subprocess.run(["shellcheck", "--shell=bash", "-"], input=script, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout
