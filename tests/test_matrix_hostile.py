"""Nothing generated runs what it was given: hostile ``combos.toml`` files and option values against
``matrix --emit slurm|k8s``. Every value is either refused in one line (exit 2, naming the file and
field or the option) or arrives intact as data: the generated script is run under bash with
``sbatch``, ``pip``, the venv's Python and ``rocm-compat`` replaced by loggers on PATH, and no
command hidden in a value may run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_rocm import cli

#: what a hostile value tries to run: a file named PWNED appears where it ran
PWN = "touch$IFS'PWNED'"
#: pieces that end a line, start a command, close a quote or hide text (the issue's hostile set)
HOSTILE = [
    "\n",
    "\r",
    "$(touch PWNED)",
    "`touch PWNED`",
    "; touch PWNED",
    "'",
    '"',
    "\\",
    "\x00",
    "\u2028",
    "\u2029",
    "\x85",
    "\x1b[2J",
    "\u202e",
    "\u2066",
    "\u200b",
    "\t",
    "{0}",
    " #",
    "x" * 5000,
]

GOOD_CPU = {
    "name": "cpu-hostile",
    "torch": "torch==2.13.0",
    "index_url": "https://download.pytorch.org/whl/cpu",
    "backend": "cpu",
    "python": "3.11",
    "packages": ["transformers==5.24.0"],
    "runner": ["self-hosted"],
}
GOOD_ROCM = {
    "name": "rocm-hostile",
    "torch": "torch==2.6.0",
    "index_url": "https://download.pytorch.org/whl/rocm6.2.4",
    "backend": "rocm",
    "rocm": "6.2.4",
    "python": "3.12",
    "runner": ["self-hosted", "gfx942"],
}


def _toml(entries: list[dict[str, Any]]) -> str:
    """TOML written by hand: json.dumps is a valid TOML basic string for every text (\\u escapes)."""
    out = []
    for entry in entries:
        out.append("[[combo]]")
        for key, value in entry.items():
            out.append(f"{key} = {json.dumps(value)}")
    return "\n".join(out) + "\n"


def _emit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], entries: list[dict[str, Any]], *args: str
) -> tuple[int, str, str]:
    path = tmp_path / "combos.toml"
    path.write_text(_toml(entries), encoding="utf-8")
    code = cli.main(["matrix", "--file", str(path), *args])
    out, err = capsys.readouterr()
    return code, out, err


def _one_line_refusal(code: int, out: str, err: str, *names: str) -> None:
    assert code == 2, (out[:500], err)
    assert out == "" and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    for name in names:
        assert name in err, err


# -- the issue's three examples, and every field with every hostile piece ------------------------
@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("runner", ["gfx942:\ntouch X #"]),
        ("name", "rocm-hostile\n"),
        ("rocm", "6.2.4\n"),
        ("python", "3.12\n"),
        ("index_url", "https://download.pytorch.org/whl/rocm6.2.4\n"),
    ],
)
def test_the_issue_s_examples_are_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str, value: Any
) -> None:
    code, out, err = _emit(tmp_path, capsys, [{**GOOD_ROCM, field: value}], "--emit", "slurm")
    _one_line_refusal(code, out, err, "combos.toml", "combo #1", f"field {field!r}")


FIELDS = ["name", "torch", "index_url", "python", "packages", "runner", "source", "rocm"]


@pytest.mark.parametrize("piece", HOSTILE, ids=lambda p: repr(p)[:20])
@pytest.mark.parametrize("field", FIELDS)
def test_every_field_with_a_hostile_piece_is_refused_or_runs_as_data(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str, piece: str
) -> None:
    base = dict(GOOD_ROCM if field == "rocm" else GOOD_CPU, source="somewhere")
    value: Any = base[field] + piece if isinstance(base[field], str) else [base[field][0] + piece]
    entry = {**base, field: value}
    code, out, err = _emit(tmp_path, capsys, [entry], "--emit", "slurm", "--package", "pytest-rocm")
    if code != 0:
        _one_line_refusal(code, out, err, f"field {field!r}")
        return
    # accepted (a source text, a quote in a URL): the script carries it as data
    assert field in ("source", "index_url"), (field, piece)
    _run_task_and_check(tmp_path, out, entry)


# -- values the grammar accepts that a shell would read as code ----------------------------------
SHELLY = {
    **GOOD_CPU,
    "name": "cpu-shelly",
    "torch": f"torch @ https://example.org/t/$({PWN})/';{PWN};'/torch-2.13.0-py3-none-any.whl",
    "index_url": f"https://example.org/$({PWN})/'!;&{PWN}/whl/cpu",
    "packages": [f"peft @ https://example.org/$({PWN})/peft-1.0-py3-none-any.whl", "transformers==5.24.0"],
    "source": "`touch PWNED` $(touch PWNED); {0} \"'",
}


def test_values_a_shell_would_run_arrive_intact_in_the_slurm_task(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hostile_reports = str(tmp_path / f"reports $({PWN}) ';{PWN}'")
    code, out, err = _emit(
        tmp_path, capsys, [SHELLY], "--emit", "slurm", "--package", f"pytest-rocm @ file:///w/$({PWN})",
        "--reports-dir", hostile_reports,
    )  # fmt: skip
    assert code == 0, err
    _shellcheck(out, literal_dollars=True)
    log = _run_task_and_check(tmp_path, out, SHELLY)
    assert any(call[-3:] == [f"pytest-rocm @ file:///w/$({PWN})", "pytest-xdist", "pytest-timeout"] for call in log)
    rocm_compat = next(call for call in log if call[0] == "rocm-compat")
    assert rocm_compat[rocm_compat.index("--reports-dir") + 1].startswith(hostile_reports + "/")


def test_a_reports_folder_named_like_an_option_is_a_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _emit(tmp_path, capsys, [GOOD_CPU], "--emit", "slurm", "--package", "x", "--reports-dir=-rf")
    assert code == 0, err
    bin_dir = _loggers(tmp_path, ["sbatch"])
    (tmp_path / "work").mkdir()
    env = _env(tmp_path, bin_dir, SLURM_ARRAY_TASK_ID="0", ROCM_COMPAT_RUN="run1")
    done = subprocess.run(
        ["bash", str(_write(tmp_path, out))], cwd=tmp_path / "work", env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "work" / "-rf" / "run1").is_dir()


def test_submitting_a_hostile_script_runs_only_sbatch_with_its_values_intact(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _emit(
        tmp_path, capsys, [SHELLY, {**GOOD_CPU, "name": "cpu-two"}], "--emit", "slurm", "--package", "x",
        "--reports-dir", str(tmp_path / f"r$({PWN})"),
    )  # fmt: skip
    assert code == 0, err
    _shellcheck(out, literal_dollars=True)
    bin_dir = _loggers(tmp_path, ["sbatch", "srun", "pip", "python3"])
    env = _env(tmp_path, bin_dir, ROCM_COMPAT_RUN="run1")
    (tmp_path / "work").mkdir()
    done = subprocess.run(
        ["bash", str(_write(tmp_path, out))], cwd=tmp_path / "work", env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    log = _log(tmp_path)
    assert [call[0] for call in log] == ["sbatch", "sbatch"]  # the array and the merge, nothing else
    assert log[0][1:3] == ["--parsable", "--array=0-1"]
    _nothing_ran(tmp_path)


# -- the Kubernetes manifests and their script ---------------------------------------------------
@pytest.mark.parametrize(
    ("args", "names"),
    [
        (["--image", "{0}"], ["--image '{0}'"]),
        (["--image", "python:{python}-slim\nkind: Secret"], ["--image"]),
        (["--image", "python:{python}$(touch PWNED)"], ["--image"]),
        (["--node-label", "gfx942=example.com/gpu=mi300x\nkind: Secret"], ["--node-label"]),
        (["--node-label", "gfx942=example.com/gpu=$(touch PWNED)"], ["--node-label"]),
        (["--node-label", "gfx942=exa mple.com/gpu=mi300x"], ["--node-label"]),
        (["--node-label", "gfx942\n=example.com/gpu=mi300x"], ["--node-label"]),
        (["--node-label", "rm -rf=example.com/gpu=mi300x"], ["--node-label"]),
        (["--node-label", "gfx942=example.com/gpu=" + "x" * 64], ["--node-label"]),
        (["--package", "--index-url=https://evil.example/simple"], ["--package"]),
        (["--package", "pytest-rocm\n--index-url=https://evil.example"], ["--package"]),
        (["--run-id", "a\nb"], ["--run-id"]),
    ],
)
def test_bad_kubernetes_options_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], names: list[str]
) -> None:
    code, out, err = _emit(tmp_path, capsys, [GOOD_ROCM], "--emit", "k8s", "--run-id", "r1", *args)
    _one_line_refusal(code, out, err, *names)


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (["--package", "-r/etc/passwd"], ["--package"]),
        (["--package", "x\x1b[2J"], ["--package"]),
        (["--reports-dir", "/shared/r\n$(touch PWNED)"], ["--reports-dir"]),
        (["--partition", "gfx942=mi300x\n"], ["--partition"]),
        (["--partition", "gfx942\n=mi300x"], ["--partition"]),
        (["--merge-partition", "batch;x"], ["--merge-partition"]),
        (["--account", "proj\n#SBATCH --wrap=x"], ["--account"]),
    ],
)
def test_bad_slurm_options_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], names: list[str]
) -> None:
    code, out, err = _emit(tmp_path, capsys, [GOOD_ROCM], "--emit", "slurm", *args)
    _one_line_refusal(code, out, err, *names)


def test_the_pods_script_carries_hostile_values_as_data(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    package = f"pytest-rocm @ file:///w/$({PWN})"
    code, out, err = _emit(
        tmp_path, capsys, [SHELLY, {**GOOD_ROCM, "name": "r2"}], "--emit", "k8s", "--run-id", "r1",
        "--package", package, "--node-label", "gfx942=example.com/gpu=mi300x", "--image", "python:{python}-slim",
    )  # fmt: skip
    assert code == 0, err
    documents = list(yaml.safe_load_all(out))
    kinds = [d["kind"] for d in documents]
    assert kinds == ["PersistentVolumeClaim", "ConfigMap", "Job", "Job", "Job"]  # nothing injected
    script = documents[1]["data"]["run.sh"]
    _shellcheck(script, literal_dollars=True)
    assert [d["spec"]["template"]["spec"]["containers"][0]["image"] for d in documents[2:4]] == [
        "python:3.11-slim",
        "python:3.12-slim",
    ]
    bin_dir = _loggers(tmp_path, ["python", "rocm-compat", "sbatch"])
    env = _env(
        tmp_path, bin_dir, ROCM_COMPAT_RUN="r1", ROCM_COMPAT_MOUNT=str(tmp_path / "volume"),
        ROCM_COMPAT_WORK=str(tmp_path / "work"), ROCM_COMPAT_TASKS="0", JOB_COMPLETION_INDEX="0",
    )  # fmt: skip
    done = subprocess.run(["bash", str(_write(tmp_path, script)), "task"], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    log = _log(tmp_path)
    installs = [call[3:] for call in log if call[1:3] == ["-m", "pip"]]
    assert installs[0] == ["install", "-q", SHELLY["torch"], "--index-url", SHELLY["index_url"]]
    assert installs[1] == ["install", "-q", *SHELLY["packages"], SHELLY["torch"]]
    assert installs[2] == ["install", "-q", package, "pytest-xdist", "pytest-timeout"]
    _nothing_ran(tmp_path)


def test_the_emitters_write_data_even_from_combinations_no_grammar_checked(tmp_path: Path) -> None:
    """Defence in depth: a Combo made in Python, never loaded from a file, with a newline in every
    text the header comments show: the comments write it out, the values stay quoted."""
    from pytest_rocm.matrix import Combo
    from pytest_rocm.matrix.k8s import K8sOptions, emit_k8s
    from pytest_rocm.matrix.slurm import SlurmOptions, emit_slurm
    from pytest_rocm.matrix.tasks import Plan, Task

    evil = "\ntouch PWNED #\u2028\x1b[2J"
    combo = Combo(name="cpu" + evil, torch="torch==2.13.0", index_url="", backend="cpu", rocm="", python="3.11")
    plan = Plan(tasks=[Task(0, combo, "cpu", None)], left_out=["x" + evil])
    script = emit_slurm(plan, SlurmOptions(package="pytest-rocm"))
    # the header's task and left-out lines: one comment line each, the break written out
    assert "#   0: cpu\\x0atouch PWNED #\\u2028\\x1b[2J x cpu -> " in script
    assert "#   left out: x\\x0atouch PWNED #\\u2028\\x1b[2J\n" in script
    bin_dir = _loggers(tmp_path, ["sbatch", "srun", "pip"])
    env = _env(tmp_path, bin_dir, SLURM_ARRAY_TASK_ID="0", ROCM_COMPAT_RUN="run1")
    (tmp_path / "work").mkdir()
    subprocess.run(["bash", str(_write(tmp_path, script))], cwd=tmp_path / "work", env=env, capture_output=True)
    _nothing_ran(tmp_path)
    manifest = emit_k8s(plan, K8sOptions(run_id="r1", package="pytest-rocm"))
    assert [d["kind"] for d in yaml.safe_load_all(manifest)][:2] == ["PersistentVolumeClaim", "ConfigMap"]
    assert "#   left out: x\\x0atouch PWNED #\\u2028\\x1b[2J\n" in manifest


def test_one_and_several_combinations_pass_shellcheck(capsys: pytest.CaptureFixture[str]) -> None:
    for names in (["cpu-torch2.13"], ["cpu-torch2.13", "cpu-torch2.14", "torch2.13-rocm7.2"]):
        selected = [arg for name in names for arg in ("--name", name)]
        assert cli.main(["matrix", "--emit", "slurm", *selected]) == 0
        _shellcheck(capsys.readouterr().out)
        assert cli.main(["matrix", "--emit", "k8s", "--run-id", "r", *selected]) == 0
        (config_map,) = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d["kind"] == "ConfigMap"]
        _shellcheck(config_map["data"]["run.sh"])


# -- point 2: the job installs something that exists -------------------------------------------
def test_the_default_package_is_a_wheel_built_from_this_checkout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["matrix", "--emit", "slurm", "--name", "cpu-torch2.13", "--reports-dir", str(tmp_path / "r")]) == 0
    script = capsys.readouterr().out
    from pytest_rocm.matrix.tasks import checkout_root

    root = str(checkout_root())
    assert "pytest-rocm==" not in script
    assert f"# {root} (pip wheel --no-deps)" in script  # the header says where it comes from
    bin_dir = _loggers(tmp_path, ["sbatch", "python3"])
    env = _env(tmp_path, bin_dir, ROCM_COMPAT_RUN="run1")
    env.pop("ROCM_COMPAT_PACKAGE", None)
    done = subprocess.run(
        ["bash", str(_write(tmp_path, script))], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    build, array, _merge = _log(tmp_path)
    wheels = str(tmp_path / "r" / "run1" / "wheel")
    assert build == ["python3", "-m", "pip", "wheel", "-q", "--no-deps", "--wheel-dir", wheels, root]
    # every job is submitted with the built wheel as the package it installs
    assert array[0] == "sbatch" and json.loads((tmp_path / "sbatch.env").read_text().splitlines()[0]) == (
        f"{wheels}/pytest_rocm-0.1.0-py3-none-any.whl"
    )


def test_an_installed_copy_without_a_checkout_asks_for_package(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_rocm.matrix import tasks

    monkeypatch.setattr(tasks, "checkout_root", lambda: None)
    assert cli.main(["matrix", "--emit", "slurm", "--name", "cpu-torch2.13"]) == 2
    err = capsys.readouterr().err
    assert "not a checkout to build a wheel from: give --package" in err and len(err.splitlines()) == 1


# -- helpers -----------------------------------------------------------------------------------
LOGGER = f"""#!{sys.executable}
# a logger standing in for a command: records its argv; `python -m venv DIR` makes a venv of loggers
import json, os, sys
name = os.path.basename(sys.argv[0])
with open(os.environ["HOSTILE_LOG"], "a") as f:
    f.write(json.dumps([name, *sys.argv[1:]]) + "\\n")
if name == "sbatch":
    with open(os.environ["HOSTILE_LOG"].replace(".log", ".env"), "a") as f:
        f.write(json.dumps(os.environ.get("ROCM_COMPAT_PACKAGE")) + "\\n")
    print("1234;cluster")
args = sys.argv[1:]
if args[:2] == ["-m", "venv"]:
    os.makedirs(os.path.join(args[2], "bin"), exist_ok=True)
    with open(os.path.join(args[2], "bin", "activate"), "w") as f:
        f.write('export PATH="' + os.path.dirname(sys.argv[0]) + ':$PATH"\\n')
    os.symlink(sys.argv[0], os.path.join(args[2], "bin", "python"))
if args[:3] == ["-m", "pip", "wheel"]:
    folder = args[args.index("--wheel-dir") + 1]
    open(os.path.join(folder, "pytest_rocm-0.1.0-py3-none-any.whl"), "w").close()
"""


def _loggers(tmp_path: Path, names: list[str]) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name in [*names, "python3.11", "python3.12", "rocm-compat", "python"]:
        path = bin_dir / name
        path.write_text(LOGGER)
        path.chmod(0o755)
    return bin_dir


def _env(tmp_path: Path, bin_dir: Path, **extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("ROCM_COMPAT", "SLURM"))}
    # the loggers first; bash's own tools (mkdir, flock, sha256sum) after them
    path = f"{bin_dir}:{os.path.dirname(shutil.which('flock') or '/usr/bin/flock')}:/bin:/usr/bin"
    return {
        **base,
        "PATH": path,
        "HOSTILE_LOG": str(tmp_path / "sbatch.log"),
        "ROCM_COMPAT_VENVS": str(tmp_path / "venvs"),
        "ROCM_COMPAT_PACKAGE": "",
        **extra,
    }


def _write(tmp_path: Path, script: str) -> Path:
    path = tmp_path / "generated.sh"
    path.write_text(script, encoding="utf-8")
    return path


def _log(tmp_path: Path) -> list[list[str]]:
    path = tmp_path / "sbatch.log"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _nothing_ran(tmp_path: Path) -> None:
    found = [str(p) for p in tmp_path.rglob("*PWNED*") if p.name == "PWNED"]
    assert not found, f"a value ran as a command: {found}"


def _run_task_and_check(tmp_path: Path, script: str, entry: dict[str, Any]) -> list[list[str]]:
    """Array task 0 under bash with loggers for the venv's Python, pip and rocm-compat: what each
    was called with is exactly the entry's values, and nothing else ran."""
    bin_dir = _loggers(tmp_path, ["sbatch", "srun", "pip"])
    env = _env(tmp_path, bin_dir, SLURM_ARRAY_TASK_ID="0", ROCM_COMPAT_RUN="run1")
    (tmp_path / "work").mkdir(exist_ok=True)
    done = subprocess.run(
        ["bash", str(_write(tmp_path, script))], cwd=tmp_path / "work", env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    log = _log(tmp_path)
    installs = [call[3:] for call in log if call[1:3] == ["-m", "pip"]]
    index = ["--index-url", entry["index_url"]] if entry.get("index_url") else []
    assert installs[0] == ["install", "-q", entry["torch"], *index]
    if entry.get("packages"):
        assert installs[1] == ["install", "-q", *entry["packages"], entry["torch"]]
    run = next(call for call in log if call[0] == "rocm-compat")
    assert run[1:3] == ["run", "--label"] and run[3] == f"cpu torch{entry['torch'].partition('==')[2]}"
    assert not [call for call in log if call[0] in ("sbatch", "srun")]
    _nothing_ran(tmp_path)
    return log


def _shellcheck(script: str, literal_dollars: bool = False) -> None:
    """Every warning shellcheck has (style notes too). ``literal_dollars``: a script carrying
    values with ``$(...)`` in them, which shellcheck notes (SC2016) stay literal in single quotes:
    what is meant."""
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck is not installed (Debian: apt-get install shellcheck; .ci/run installs it)")
    excluded = ["--exclude=SC2016"] if literal_dollars else []
    done = subprocess.run(["shellcheck", "--shell=bash", *excluded, "-"], input=script, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout
