"""``--rocm-workload``: the example training scripts captured on the CPU and replayed as parity rows.

A capture of each example replays clean; one op broken at one captured shape in the device runs
(``kernel_mutants.PerturbsOneShape``) fails exactly the rows of that signature; a capture that
says it came from a CUDA machine replays here, and the two reports share one table and ``diff``.
"""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import kernel_mutants
from suite_runs import plugin_arguments

from pytest_rocm.workload.signature import row_name


def replay(pytester: pytest.Pytester, workload: Path, *args: str, plugin: str | None = None) -> dict[str, Any]:
    """Run the workload's rows in-process on the CPU; the report."""
    report = pytester.path / f"report-{abs(hash((str(workload), args, plugin)))}.json"
    extra = plugin_arguments(pytester, plugin, "mutant")
    pytester.runpytest_inprocess(
        f"--rocm-workload={workload}",
        "--rocm-device=cpu",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        f"--rocm-report={report}",
        *extra,
        *args,
    )
    data: dict[str, Any] = json.loads(report.read_text())
    return data


def outcomes(report: dict[str, Any]) -> dict[str, str]:
    return {r["feature"]: r["outcome"] for r in report["results"]}


def signatures(path: Path) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(path.read_text())["signatures"]
    return data


def perturbation(op: str, shapes: list[list[int]], factor: float = 1.01) -> str:
    """A plugin whose device runs of ``op`` at ``shapes`` are 1 % off (``factor``), for every workload row."""
    return (
        "from typing import Any\nimport pytest\nimport torch\n"
        "from torch.utils._python_dispatch import TorchDispatchMode\n\n"
        + inspect.getsource(kernel_mutants.PerturbsOneShape)
        + f"""

@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    with PerturbsOneShape({op!r}, {shapes!r}, {factor!r}):
        return (yield)
"""
    )


def tensor_shapes(signature: dict[str, Any]) -> list[list[int]]:
    return [a["tensor"]["shape"] for a in signature["args"] if "tensor" in a]


@pytest.mark.parametrize("name", ["cnn", "lstm", "llama"])
def test_a_captured_training_step_replays_clean(
    pytester: pytest.Pytester, captures: dict[str, Path], name: str
) -> None:
    sigs = signatures(captures[name])
    report = replay(pytester, captures[name])
    rows = {r["feature"]: r for r in report["results"]}
    assert set(rows) == {row_name(s) for s in sigs}  # one row per signature, named workload/<op>[<id>]
    for sig in sigs:
        row = rows[row_name(sig)]
        assert row["suite"] == "workload" and row["info"]["calls"] == sig["calls"]
        if sig["not_replayable"]:
            assert row["outcome"] == "skipped" and row["reason"] == f"not replayable: {sig['not_replayable']}"
        else:
            assert row["outcome"] == "passed", (row["info"]["signature"], row["reason"])
            assert row["parity"] and all(p["ok"] for p in row["parity"])
    replayed = [s for s in sigs if not s["not_replayable"]]
    assert len(replayed) >= 0.75 * len(sigs)
    assert any(rows[row_name(s)]["info"]["backward"] for s in replayed)


def test_one_op_wrong_at_one_captured_shape_fails_exactly_its_rows(
    pytester: pytest.Pytester, captures: dict[str, Path]
) -> None:
    sigs = signatures(captures["cnn"])
    # the classifier head's addmm: bias [10], features [4,16], weight.t() [16,10]
    (target,) = [s for s in sigs if s["op"] == "aten.addmm.default"]
    shapes = tensor_shapes(target)
    broken = {row_name(s) for s in sigs if s["op"] == target["op"] and tensor_shapes(s) == shapes}
    clean = outcomes(replay(pytester, captures["cnn"]))
    assert set(clean.values()) == {"passed", "skipped"}
    perturbed = replay(pytester, captures["cnn"], plugin=perturbation(target["op"], shapes))
    got = outcomes(perturbed)
    assert {row for row, o in got.items() if o == "failed"} == broken == {row_name(target)}
    assert {row: o for row, o in got.items() if row not in broken} == {
        r: o for r, o in clean.items() if r not in broken
    }
    (record,) = [r for r in perturbed["results"] if r["feature"] == row_name(target)]
    assert any(p["kind"] == "mismatch" for p in record["parity"])
    assert record["info"]["signature"].startswith("aten.addmm.default(f32[10], f32[4,16], f32[16,10]{s=1,16}")


def _as_if_from_cuda(source: Path, target: Path) -> None:
    """The capture as a CUDA machine writes it: tensors on cuda, captured_on naming the GPU."""
    document = json.loads(source.read_text())
    document["captured_on"] |= {"backend": "cuda", "cuda": "12.4", "device": "NVIDIA A100-SXM4-40GB", "arch": "sm_80"}

    def move(arg: dict[str, Any]) -> None:
        if "tensor" in arg:
            arg["tensor"]["device"] = "cuda"
        if "device" in arg:
            arg["device"] = "cuda"
        for item in arg.get("list", []):
            move(item)

    for sig in document["signatures"]:
        for arg in [*sig["args"], *sig["kwargs"].values()]:
            move(arg)
    target.write_text(json.dumps(document))


def test_a_capture_from_another_machine_replays_here_and_its_reports_share_a_table_and_diff(
    pytester: pytest.Pytester, captures: dict[str, Path]
) -> None:
    cuda_capture = pytester.path / "cnn-from-cuda.json"
    _as_if_from_cuda(captures["cnn"], cuda_capture)
    sigs = signatures(cuda_capture)
    (target,) = [s for s in sigs if s["op"] == "aten.addmm.default"]
    base = replay(pytester, cuda_capture, "--rocm-label=current")
    candidate = replay(
        pytester, cuda_capture, "--rocm-label=candidate", plugin=perturbation(target["op"], tensor_shapes(target))
    )
    assert base["results"][0]["info"]["captured_on"] == "torch {} on NVIDIA A100-SXM4-40GB (sm_80)".format(
        json.loads(cuda_capture.read_text())["captured_on"]["torch"]
    )
    assert set(outcomes(base).values()) == {"passed", "skipped"}
    paths = []
    for report in (base, candidate):
        paths.append(pytester.path / f"{report['label']}.json")
        paths[-1].write_text(json.dumps(report))
    cli = [sys.executable, "-m", "pytest_rocm.cli"]
    table = subprocess.run([*cli, "table", *map(str, paths)], capture_output=True, text=True, check=True).stdout
    line = next(line for line in table.splitlines() if row_name(target) in line)
    assert "passed" in line and "failed" in line and "aten.addmm.default(f32[10]" in line
    diff = subprocess.run([*cli, "diff", *map(str, paths)], capture_output=True, text=True)
    assert diff.returncode == 1 and row_name(target) in diff.stdout


def test_rows_are_tests_like_any_other(pytester: pytest.Pytester, captures: dict[str, Path]) -> None:
    pytester.makepyfile(test_own="def test_own():\n    assert True\n")
    sigs = signatures(captures["cnn"])
    addmm = [s for s in sigs if s["op"] == "aten.addmm.default"]
    # -k selects rows; named paths run next to them; --rocm-workload-perf times each row's device call
    report = replay(pytester, captures["cnn"], "test_own.py", "-k", "addmm or own", "--rocm-workload-perf")
    got = outcomes(report)
    assert got == {"own/own": "passed", **{row_name(s): "passed" for s in addmm}}
    (row,) = [r for r in report["results"] if r["feature"] == row_name(addmm[0])]
    assert row["perf"]["reps"] >= 3 and row["perf"]["median_s"] > 0
    assert row["perf"]["work"] == {"flops": 2.0 * 4 * 16 * 10} and row["perf"]["unit"] == "GFLOP/s"


def test_rows_run_under_xdist_and_the_plugin_imports_no_torch_to_collect_them(
    pytester: pytest.Pytester, captures: dict[str, Path]
) -> None:
    pytester.makeconftest(
        "import sys\ndef pytest_collection_finish(session):\n    print('torch imported:', 'torch' in sys.modules)\n"
    )
    collected = pytester.runpytest_subprocess(f"--rocm-workload={captures['cnn']}", "--rocm-device=cpu", "--co", "-q")
    collected.stdout.fnmatch_lines(["torch imported: False"])
    assert f"{len(signatures(captures['cnn']))} tests collected" in collected.stdout.str()
    ran = pytester.runpytest_subprocess(
        f"--rocm-workload={captures['cnn']}", "--rocm-device=cpu", "-n", "2", "-k", "addmm or convolution"
    )
    ran.assert_outcomes(
        passed=len([s for s in signatures(captures["cnn"]) if "addmm" in s["op"] or "convolution" in s["op"]])
    )


def test_rocm_compat_run_replays_the_workload_alone(tmp_path: Path, captures: dict[str, Path]) -> None:
    (tmp_path / "test_not_mine.py").write_text("def test_never():\n    raise AssertionError\n")
    command = [sys.executable, "-m", "pytest_rocm.cli", "run", "--workload", str(captures["cnn"])]
    done = subprocess.run(
        [*command, "--label", "cnn-here", "--reports-dir", "reports", "-k", "addmm", "-p", "no:randomly"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    report = json.loads((tmp_path / "reports" / "cnn-here.json").read_text())
    (addmm,) = [s for s in signatures(captures["cnn"]) if s["op"] == "aten.addmm.default"]
    assert outcomes(report) == {row_name(addmm): "passed"}
    assert row_name(addmm) in (tmp_path / "reports" / "cnn-here.md").read_text()
