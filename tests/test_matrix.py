"""matrix/combos.toml validation, the runnable-here decision, CI job matrices, the noxfile."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_rocm import cli
from pytest_rocm.matrix import Combo, ComboError, load_combos, runnable_here

ROOT = Path(__file__).resolve().parent.parent
COMBOS = ROOT / "matrix" / "combos.toml"

GOOD = """
[[combo]]
name = "torch2.6-rocm6.2.4"
torch = "torch==2.6.0"
index_url = "https://download.pytorch.org/whl/rocm6.2.4"
backend = "rocm"
rocm = "6.2.4"
python = "3.12"
packages = ["transformers==4.49.0"]
runner = ["self-hosted", "gfx942"]
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "combos.toml"
    path.write_text(text)
    return path


def test_shipped_file_is_valid_and_has_the_known_good_pairs() -> None:
    combos = {c.name: c for c in load_combos(COMBOS)}
    pairs = {(c.torch.split("==")[1].rsplit(".", 1)[0], c.rocm) for c in combos.values() if c.backend == "rocm"}
    # the pairs users rely on (ROCM-FACTS.md): 2.0-2.1 with 5.4-5.6, 2.3 with 6.0, 2.4 with 6.1, 2.5-2.6 with 6.2
    for pair in [("2.0", "5.4.2"), ("2.1", "5.6"), ("2.3", "6.0"), ("2.4", "6.1"), ("2.5", "6.2"), ("2.6", "6.2.4")]:
        assert pair in pairs
    assert any(c.backend == "cpu" for c in combos.values())
    for c in combos.values():
        if c.backend == "rocm":
            assert c.index_url.endswith(f"/whl/rocm{c.rocm}"), c.name


def test_every_rocm_combo_is_a_pair_doctor_knows_as_published() -> None:
    """combos.toml and the wheel data (pytest_rocm/data/torch_wheels.json) state the same facts
    twice: the matrix must never run a pair that `rocm-compat doctor` would call unpublished."""
    from pytest_rocm.env.wheels import published_pairs

    published = published_pairs()
    for c in load_combos(COMBOS):
        if c.backend == "rocm":
            minor = ".".join(c.torch.split("==")[1].split(".")[:2])
            assert c.rocm in published.get(minor, []), (c.name, minor, published.get(minor))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (('backend = "rocm"', 'backend = "metal"'), "field 'backend' must be one of rocm, cuda, cpu, got 'metal'"),
        (('torch = "torch==2.6.0"', 'torch = "torch=2.6.0"'), "field 'torch' has an invalid requirement"),
        (('torch = "torch==2.6.0"', 'torch = "numpy==2.0"'), "field 'torch' must be a torch requirement"),
        (('rocm = "6.2.4"\n', 'rocm = "6.1"\n'), "field 'index_url' is for ROCm 6.2.4 but 'rocm' says 6.1"),
        (('python = "3.12"', 'python = "python3"'), "field 'python' must look like '3.11'"),
        (('python = "3.12"\n', ""), "field 'python' is missing"),
        (('runner = ["self-hosted", "gfx942"]', 'runner = "gfx942"'), "field 'runner' must be a list"),
        (('packages = ["transformers==4.49.0"]', 'packages = ["torch==2.5"]'), "must not list torch"),
        (('name = "torch2.6-rocm6.2.4"', 'name = "bad name"'), "field 'name' must be letters"),
        (("runner =", "runners ="), "unknown field 'runners'"),
    ],
)
def test_bad_entry_names_entry_and_field(tmp_path: Path, change: tuple[str, str], message: str) -> None:
    assert change[0] in GOOD
    path = write(tmp_path, GOOD.replace(change[0], change[1]))
    with pytest.raises(ComboError) as info:
        load_combos(path)
    text = str(info.value)
    assert message in text
    assert str(path) in text and "combo #1" in text
    assert "\n" not in text


def test_duplicate_name_and_broken_toml(tmp_path: Path) -> None:
    with pytest.raises(ComboError, match=re.escape("name 'torch2.6-rocm6.2.4' is used twice")):
        load_combos(write(tmp_path, GOOD + GOOD))
    with pytest.raises(ComboError, match="not valid TOML"):
        load_combos(write(tmp_path, "[[combo]\nname="))
    with pytest.raises(ComboError, match=r"no \[\[combo\]\] entries"):
        load_combos(write(tmp_path, "title = 'x'\n"))


def test_rocm_combo_needs_an_amd_gpu_node(tmp_path: Path, data_dir: Path) -> None:
    combo = load_combos(write(tmp_path, GOOD))[0]
    root = tmp_path / "root"
    root.mkdir()
    ok, reason = runnable_here(combo, root)
    assert not ok and "needs an AMD GPU (ROCm 6.2.4)" in reason
    # a CPU node only (simd_count 0) is still no GPU
    node0 = root / "sys/class/kfd/kfd/topology/nodes/0"
    node0.mkdir(parents=True)
    (node0 / "properties").write_text("cpu_cores_count 16\nsimd_count 0\n")
    (root / "dev").mkdir()
    (root / "dev/kfd").write_text("")
    assert not runnable_here(combo, root)[0]
    node1 = root / "sys/class/kfd/kfd/topology/nodes/1"
    node1.mkdir(parents=True)
    (node1 / "properties").write_text("simd_count 192\ngfx_target_version 110000\n")
    assert runnable_here(combo, root) == (True, "")
    cpu_index = "https://download.pytorch.org/whl/cpu"
    cpu = Combo(name="c", torch="torch==2.13.0", index_url=cpu_index, backend="cpu", rocm="", python="3.11")
    assert runnable_here(cpu, tmp_path / "nothing") == (True, "")


@pytest.mark.parametrize(
    ("torch", "index_url", "runnable"),
    [
        ("torch==2.13.0", "", False),  # PyPI: the CUDA build with its nvidia-* packages
        ("torch==2.13.0", "https://download.pytorch.org/whl/cu130", False),
        ("torch==2.13.0", "https://download.pytorch.org/whl/cpu/", True),
        ("torch==2.13.0", "file:///srv/mirror/whl/cpu", True),
        ("torch==2.13.0+cpu", "", True),
    ],
)
def test_a_cpu_combination_must_take_a_cpu_build(tmp_path: Path, torch: str, index_url: str, runnable: bool) -> None:
    """Issue 20: the "cpu" combos had an empty index URL (PyPI's CUDA torch) and were called runnable."""
    cpu = Combo(name="c", torch=torch, index_url=index_url, backend="cpu", rocm="", python="3.11")
    ok, reason = runnable_here(cpu, tmp_path / "nothing")
    assert ok is runnable
    assert runnable or ("CUDA build" in reason and "https://download.pytorch.org/whl/cpu" in reason), reason


def test_the_bundled_cpu_combinations_take_the_cpu_index() -> None:
    for combo in load_combos(ROOT / "matrix" / "combos.toml"):
        if combo.backend == "cpu":
            assert combo.index_url == "https://download.pytorch.org/whl/cpu", combo.name


def test_emit_github_and_gitlab_matrices(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["matrix", "--emit", "github", "--backend", "rocm"]) == 0
    include = json.loads(capsys.readouterr().out)["include"]
    assert include and all(job["backend"] == "rocm" for job in include)
    assert all("self-hosted" in job["runs-on"] and job["report"].startswith("reports/") for job in include)
    assert cli.main(["matrix", "--emit", "gitlab", "--name", "cpu-torch2.13"]) == 0
    pipeline = json.loads(capsys.readouterr().out)
    assert pipeline["compat:cpu-torch2.13"]["script"][-1] == "nox -s suite-cpu-torch2.13"


def test_cli_bad_input_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = write(tmp_path, GOOD.replace('backend = "rocm"', 'backend = "x"'))
    assert cli.main(["matrix", "--file", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("rocm-compat matrix: ") and "field 'backend'" in err and "\n" not in err
    assert cli.main(["matrix", "--name", "nope"]) == 2
    assert "no combination named 'nope'" in capsys.readouterr().err


def test_cli_bad_sysroot_is_exit_2_not_a_column_of_no(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTEST_ROCM_SYSROOT", str(tmp_path / "missing"))
    assert cli.main(["matrix"]) == 2
    assert (
        capsys.readouterr().err
        == f"rocm-compat matrix: PYTEST_ROCM_SYSROOT={tmp_path / 'missing'}: no such directory\n"
    )
    assert cli.main(["matrix", "--emit", "github"]) == 0  # a CI matrix does not look at this machine


def test_the_current_directory_s_combos_win(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "matrix").mkdir()
    write(tmp_path / "matrix", GOOD)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["matrix", "--emit", "json"]) == 0
    assert [c["name"] for c in json.loads(capsys.readouterr().out)] == ["torch2.6-rocm6.2.4"]


def test_a_reader_that_leaves_early_is_no_traceback() -> None:
    """`rocm-compat matrix --emit json | head -1`: the pipe closes under the writer."""
    # the command runs until its output fails: far more than a pipe buffer holds
    code = (
        "import sys; from pytest_rocm import cli\n"
        "rc = 0\nwhile rc == 0:\n    rc = cli.main(['matrix', '--emit', 'json'])\nsys.exit(rc)"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline().strip() == b"["
    proc.stdout.close()  # the reader leaves
    err = proc.stderr.read().decode() if proc.stderr else ""
    assert proc.wait(timeout=60) == 141, err
    assert "Traceback" not in err and err == ""


def test_noxfile_lists_one_session_per_combo() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "nox", "-l", "-f", str(ROOT / "noxfile.py")],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout
    for combo in load_combos(COMBOS):
        assert f"suite-{combo.name} " in out
    assert "- table" in out  # listed but not run by default


def test_every_newest_release_has_a_combo() -> None:
    """2.11, 2.12 and 2.14 were missing (issue 17); each pair is one torch_wheels.json publishes."""
    pairs = {(c.torch, c.rocm) for c in load_combos(COMBOS) if c.backend == "rocm"}
    for pair in [
        ("torch==2.11.0", "7.2"),
        ("torch==2.12.0", "7.2"),
        ("torch==2.14.0", "7.2"),
        ("torch==2.14.0", "7.14"),
    ]:
        assert pair in pairs


def _gfx_column(out: str) -> dict[str, str]:
    lines = out.strip().splitlines()
    return {line.split()[0]: line.split()[-1] for line in lines[1:]}


def test_matrix_says_which_combos_cannot_run_on_a_gfx(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["matrix", "--gfx", "gfx1151"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split()[-1] == "gfx1151"
    column = _gfx_column(out)
    # the 6.x wheels lack gfx1151, the 7.x ones carry it, 7.14's list is unknown, CPU rows do not apply
    assert column["torch2.9-rocm6.4"] == "no" and column["torch2.6-rocm6.2.4"] == "no"
    assert column["torch2.10-rocm7.1"] == "yes" and column["torch2.14-rocm7.2"] == "yes"
    assert column["torch2.14-rocm7.14"] == "?" and column["cpu-torch2.13"] == "-"


@pytest.mark.parametrize(
    ("gfx", "combo", "expected"),
    [
        ("gfx1103", "torch2.12-rocm7.2", "override"),  # only gfx1100 kernels, through 11.0.0
        ("gfx1103", "torch2.13-rocm7.2", "yes"),  # 2.13.0+rocm7.2 added gfx1103
        ("gfx1031", "torch2.8-rocm6.4", "override"),  # its usual override 10.3.0 (gfx1030 kernels)
        ("gfx1010", "torch2.8-rocm6.4", "no"),  # no override is known to work for gfx1010
        ("gfx1152", "torch2.14-rocm7.2", "no"),  # no pytorch.org wheel carries gfx1152
        ("gfx90a:sramecc+:xnack-", "torch2.7-rocm6.3", "yes"),
    ],
)
def test_matrix_gfx_column_cases(capsys: pytest.CaptureFixture[str], gfx: str, combo: str, expected: str) -> None:
    assert cli.main(["matrix", "--gfx", gfx, "--name", combo]) == 0
    assert _gfx_column(capsys.readouterr().out) == {combo: expected}


def test_json_carries_the_wheel_gfx(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["matrix", "--emit", "json", "--name", "torch2.13-rocm7.2", "--name", "cpu-torch2.13"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert "gfx1103" in rows["torch2.13-rocm7.2"]["wheel_gfx"] and rows["cpu-torch2.13"]["wheel_gfx"] is None


@pytest.mark.parametrize("value", ["gfx11OO", "navi31", "", "gfx11-generic"])
def test_matrix_bad_gfx_is_one_line_exit_2(capsys: pytest.CaptureFixture[str], value: str) -> None:
    assert cli.main(["matrix", "--gfx", value]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("rocm-compat matrix: --gfx") and "\n" not in err
