"""The reproducer spec: what a failed call records (``parity.callspec``), how a report's spec is
read back (``repro.spec``: a hostile one is refused or stays data), the script it becomes, and
ISSUE.md (no path of the user's machine unless asked)."""

from __future__ import annotations

import ast
import copy
import functools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from pytest_rocm import assert_parity  # noqa: E402
from pytest_rocm.cli import main  # noqa: E402
from pytest_rocm.parity.callspec import VALUES_LIMIT, NotRecordable, op_name  # noqa: E402
from pytest_rocm.parity.check import _out_of_script  # noqa: E402
from pytest_rocm.parity.options import ParityOptions  # noqa: E402
from pytest_rocm.parity.result import ParityError  # noqa: E402
from pytest_rocm.repro.issue import issue_text  # noqa: E402
from pytest_rocm.repro.spec import SpecError, read_spec  # noqa: E402
from pytest_rocm.repro.write import plan, script_source, template_text  # noqa: E402


@pytest.mark.parametrize(
    ("fn", "name"),
    [
        (torch.mm, "torch.mm"),
        (torch.nn.functional.conv2d, "torch.nn.functional.conv2d"),
        (torch.nn.functional.relu, "torch.nn.functional.relu"),
        (torch.linalg.norm, "torch.linalg.norm"),
        (torch.special.erf, "torch.special.erf"),
        (torch.Tensor.add, "torch.Tensor.add"),
        (torch.ops.aten.mm.default, "torch.ops.aten.mm.default"),
        (torch.ops.aten.mm, "torch.ops.aten.mm"),
    ],
)
def test_a_torch_callable_is_named_so_torch_alone_resolves_it(fn: Any, name: str) -> None:
    assert op_name(fn) == name


def _local(x: Any) -> Any:
    return x


@pytest.mark.parametrize(
    ("fn", "why"),
    [
        (lambda x: x, "<lambda>: torch alone cannot name it"),
        (functools.partial(torch.add, alpha=2), "functools.partial"),
        (torch.nn.Linear(2, 2), "a module (Linear)"),
        (_local, "is not a torch function"),
    ],
)
def test_a_callable_torch_cannot_name_is_refused_with_why(fn: Any, why: str) -> None:
    with pytest.raises(NotRecordable, match=why.replace("(", r"\(").replace(")", r"\)")):
        op_name(fn)


def failed_spec(*args: Any, fn: Any = torch.mm, **settings: Any) -> dict[str, Any]:
    """The spec a failing call records (its float16 tolerance made impossible to meet)."""
    settings.setdefault("tolerances", {"float16": {"rtol": 0.0, "atol": 0.0, "normwise": 0.0}})
    with pytest.raises(ParityError) as info:
        assert_parity(fn, *args, device="cpu", dtypes=("float32", "float16"), **settings)
    assert info.value.result is not None
    # without a report nothing is built (building may run fn once more); the report asks for it
    assert all("repro" not in r for r in info.value.result.records())
    records = info.value.result.records(with_repro=True)
    assert [r["dtype"] for r in records if "repro" in r] == ["float16"]  # once, on the first failure
    spec: dict[str, Any] = next(r["repro"] for r in records if "repro" in r)
    return spec


def test_a_passing_call_records_no_spec() -> None:
    result = assert_parity(torch.mm, torch.ones(2, 2), torch.ones(2, 2), device="cpu")
    assert all("repro" not in r for r in result.records())


def test_values_past_the_limit_are_not_saved_and_the_script_says_it_cannot_know(tmp_path: Path) -> None:
    g = torch.Generator().manual_seed(1)
    big = torch.randn(VALUES_LIMIT // 4 + 64, generator=g)  # float32: just past the limit alone
    small = torch.randn(4, generator=g)
    spec = failed_spec(small, big[:4], fn=torch.add)
    assert [t["values"] is not None for t in spec["tensors"]] == [True, True]  # 16 bytes of a big storage
    spec = failed_spec(big, big, fn=torch.add)
    assert [t["values"] for t in spec["tensors"]] == [None, None]
    assert "past the 65536-byte limit" in spec["tensors"][0]["values_why"]
    json.dumps(spec)  # the spec is JSON as it stands
    for tolerance, status, says in (
        (0.0, 1, "the failure reproduces"),
        (1.0, 3, "not known: it passed, but on stand-in"),
    ):
        spec["tolerances"]["float16"] |= {"rtol": tolerance, "atol": tolerance}
        script = tmp_path / "r.py"
        script.write_text(script_source(spec, "t", "cpu", {}, template_text()))
        proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False)
        assert "values not recorded for some inputs" in proc.stdout
        # a stand-in that passes is "not known" (3), never "does not reproduce" (0)
        assert proc.returncode == status and says in proc.stdout, proc.stdout + proc.stderr


def test_keyword_arguments_are_data_or_the_call_is_not_rebuilt() -> None:
    x = torch.randn(3, 4)
    spec = failed_spec(x, fn=torch.sum, kwargs={"dim": (0,), "keepdim": True, "dtype": torch.float64})
    assert spec["kwargs"] == {"dim": {"tuple": [0]}, "keepdim": True, "dtype": {"dtype": "float64"}}
    spec = failed_spec(x, fn=torch.Tensor.contiguous, kwargs={"memory_format": torch.contiguous_format})
    assert spec["op"] is None
    assert spec["why"] == "keyword memory_format is a memory_format: not data a script can rebuild"


def test_options_a_script_cannot_judge_are_said_not_guessed() -> None:
    x = torch.randn(4, 4)
    spec = failed_spec(x, x, grad=True)  # gradients: the script takes them as the check did
    assert spec["op"] == "torch.mm" and spec["grad"] is True and spec["seed"] == 0
    assert _out_of_script(ParityOptions(mode="model")) == ""  # the script computes the model yardstick
    assert _out_of_script(ParityOptions(periodic=6.28)) == "periodic=: the script does not wrap outputs around"
    assert _out_of_script(ParityOptions(mode="cpu-relative")) == ""


# ---- a report's spec is data ------------------------------------------------------------------
def good_spec() -> dict[str, Any]:
    x = torch.randn(2, 3, generator=torch.Generator().manual_seed(2))
    return failed_spec(x, x.t().contiguous(), fn=torch.mm)


@pytest.mark.parametrize(
    ("change", "fault"),
    [
        (lambda s: s.update(op="torch.mm\nimport os"), "repro.op"),
        (lambda s: s.update(op="__import__('os').system"), "repro.op"),
        (lambda s: s.update(op="torch.mm; import os"), "repro.op"),
        (lambda s: s.update(mode="relative"), "repro.mode"),
        (lambda s: s.update(mode="model"), "repro.tolerances.float16.cpu_factor"),
        (lambda s: s.update(dtypes=["float16'); import os #"]), "repro.dtypes"),
        (lambda s: s["kwargs"].update({"a'):import os#": 1}), "repro.kwargs"),
        (lambda s: s["args"].append({"tensor": 7}), "repro.args[2].tensor"),
        (lambda s: s["args"].append({"eval": "1"}), "repro.args[2]"),
        (lambda s: s["tensors"][0].update(dtype="object"), "repro.tensors[0].dtype"),
        (lambda s: s["tensors"][0].update(stride=[-1, 1]), "repro.tensors[0].stride"),
        (lambda s: s["tensors"][0].update(shape=[1 << 20, 1 << 20]), "repro.tensors[0]"),
        (lambda s: s["tensors"][0]["values"].update(data="AAAA"), "repro.tensors[0].values.data"),
        (lambda s: s["tolerances"]["float16"].update(rtol="1e-3"), "repro.tolerances.float16.rtol"),
        (lambda s: s.update(version=2), "repro.version"),
    ],
)
def test_a_spec_not_written_by_callspec_is_refused_naming_the_field(change: Any, fault: str) -> None:
    spec = good_spec()
    read_spec(spec)
    bad = copy.deepcopy(spec)
    change(bad)
    with pytest.raises(SpecError, match=r"^" + fault.replace("[", r"\[").replace("]", r"\]")):
        read_spec(bad)


HOSTILE = '\'"""); open("PWNED", "w"); ("""\n__import__("os").system("touch PWNED")'


def test_hostile_text_in_a_report_stays_a_string_literal_in_the_script(tmp_path: Path) -> None:
    passing = good_spec()
    passing["tolerances"]["float16"] |= {"rtol": 1.0, "atol": 1.0}  # the same inputs, no bug: passes
    gelu = failed_spec(torch.randn(4), fn=torch.nn.functional.gelu, kwargs={"approximate": "tanh"})
    gelu["kwargs"]["approximate"] = HOSTILE[:200]  # a string argument the op refuses at run time
    report = {
        "schema": "pytest-rocm/report/1",
        "label": HOSTILE,
        "results": [
            {
                "nodeid": f"test_x.py::test[{HOSTILE}{n}]",
                "parity": [{"dtype": HOSTILE, "ok": False, "name": HOSTILE, "detail": HOSTILE, "repro": spec}],
            }
            for n, spec in enumerate((passing, gelu))
        ],
        "environment": {"torch": HOSTILE, "platform": HOSTILE},
    }
    built = plan(report, [], "cpu")
    assert not built.refused
    (tmp_path / "ISSUE.md").write_text(issue_text(report, built))
    for script, status in zip(built.scripts, (0, 2), strict=True):
        tree = ast.parse(script.source)
        (assign,) = [n for n in tree.body if isinstance(n, ast.AnnAssign) and getattr(n.target, "id", "") == "SPEC"]
        ast.literal_eval(assign.value)  # the one line written from the report is a literal
        assert [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "open"] == []
        path = tmp_path / script.file
        path.write_text(script.source)
        proc = subprocess.run([sys.executable, str(path)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
        # 0: no bug, does not reproduce; 2: the op refused the string ("cannot run", never a crash's 1)
        assert proc.returncode == status, proc.stdout + proc.stderr
    assert "cannot run: RuntimeError" in proc.stdout
    assert not (tmp_path / "PWNED").exists()


def test_a_string_argument_rebuilds_as_that_string(tmp_path: Path) -> None:
    x = torch.randn(4, 4)
    spec = failed_spec(x, fn=torch.nn.functional.gelu, kwargs={"approximate": "tanh"})
    assert spec["kwargs"] == {"approximate": "tanh"}
    path = tmp_path / "r.py"
    path.write_text(script_source(spec, "gelu", "cpu", {}, template_text()))
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=120, check=False)
    # the row failed on an impossible tolerance (0): the script judges with it and fails too
    assert proc.returncode == 1 and "float16 out on cpu: FAILS" in proc.stdout, proc.stdout + proc.stderr


# ---- ISSUE.md ---------------------------------------------------------------------------------
ENV = {
    "schema": "pytest-rocm/environment/1",
    "backend": "rocm",
    "torch": "2.5.1+rocm6.2",
    "hip": "6.2.41134-65d174c3e",
    "rocm": "6.2.4",
    "devices": [{"index": 0, "name": "AMD Radeon RX 6700 XT", "arch": "gfx1030", "gfx": "gfx1030",
                 "hardware_gfx": "gfx1031"}],
    "variables": {"HSA_OVERRIDE_GFX_VERSION": "10.3.0", "MIOPEN_USER_DB_PATH": "/home/alice/.cache/miopen",
                  "HOME": "/home/alice", "USER": "alice", "PYTORCH_ROCM_ARCH": None},
    "system": {"amdgpu_version": "6.8.5", "groups": ["alice", "video"]},
    "python": "3.11.7",
    "platform": "Linux-6.8.0-45-generic-x86_64-with-glibc2.39",
}  # fmt: skip


def write_report(tmp_path: Path) -> Path:
    x = torch.randn(4, 4)
    spec = failed_spec(x, x, fn=torch.mm)
    record = {"dtype": "float16", "ok": False, "name": "mm", "kind": "mismatch", "mode": "absolute",
              "max_abs": 0.5, "rtol": 1e-3, "atol": 1e-5, "normwise_tol": 0.0, "n_bad": 3, "numel": 16,
              "worst_bound": 0.01, "worst_got": 1.5, "worst_expected": 1.0, "repro": spec}  # fmt: skip
    report = {
        "schema": "pytest-rocm/report/1",
        "label": "l",
        "environment": ENV,
        "results": [{"nodeid": "tests/test_a.py::test_mm", "feature": "f", "outcome": "failed", "parity": [record]}],
    }
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    return path


def test_issue_md_has_the_environment_lines_and_no_path_or_user_name(tmp_path: Path) -> None:
    report = write_report(tmp_path)
    assert main(["repro", str(report), "-o", str(tmp_path / "out")]) == 0
    text = (tmp_path / "out" / "ISSUE.md").read_text()
    for line in (
        "torch: 2.5.1+rocm6.2 (HIP 6.2.41134-65d174c3e, CUDA unknown)",
        "ROCm: 6.2.4",
        "amdgpu driver: 6.8.5",
        "device 0: AMD Radeon RX 6700 XT (gfx1030, hardware gfx1031)",
        "HSA_OVERRIDE_GFX_VERSION=10.3.0",
        "MIOPEN_USER_DB_PATH=<path>",
        "- float16: mm: elementwise |err| 5.0e-01 > 1.0e-02, 3/16 off",
        "python repro_test_a.py_test_mm_",
    ):
        assert line in text, line
    assert "alice" not in text and "/home" not in text
    assert main(["repro", str(report), "-o", str(tmp_path / "kept"), "--keep-paths"]) == 0
    assert "MIOPEN_USER_DB_PATH=/home/alice/.cache/miopen" in (tmp_path / "kept" / "ISSUE.md").read_text()


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["repro", str(tmp_path / "missing.json"), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rocm-compat repro: ") and len(err.strip().splitlines()) == 1 and "missing.json" in err
    (tmp_path / "file").write_text("")
    assert main(["repro", str(write_report(tmp_path)), "-o", str(tmp_path / "file")]) == 2
    assert "cannot write" in capsys.readouterr().err


def test_a_traced_callable_is_not_called_again_unless_the_report_asks() -> None:
    """Tracing a lambda runs it once more: only where a report keeps the spec."""
    calls: list[int] = []

    def fn(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        calls.append(1)
        return torch.mm(a, b) * 1.0

    tolerances = {"float16": {"rtol": 0.0, "atol": 0.0, "normwise": 0.0}}
    with pytest.raises(ParityError) as info:
        assert_parity(
            fn, torch.randn(4, 4), torch.randn(4, 4), device="cpu", dtypes=("float16",), tolerances=tolerances
        )
    result, ran = info.value.result, len(calls)
    assert result is not None and all("repro" not in r for r in result.records())
    assert len(calls) == ran  # no report asked: the function was not run again
    assert any("repro" in r for r in result.records(with_repro=True))
    assert len(calls) > ran  # the report's call traced it
