"""Row kinds beyond a user's own call: a ``--rocm-workload`` replay row records the spec of its
first failing regime (the captured layout, in its one floating dtype), and its script reproduces
the failure under the bug and not without it; a row kind a script cannot judge says why."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from kernel_mutants import PerturbsNonContiguous  # noqa: E402
from test_repro_end_to_end import run_script  # noqa: E402

import pytest_rocm  # noqa: E402
from pytest_rocm.repro.write import script_source, template_text  # noqa: E402
from pytest_rocm.workload.replay import replay  # noqa: E402

CPU = torch.device("cpu")
BUG = "PerturbsNonContiguous('aten.exp.default')"


def signature(fn: Any, op: str) -> dict[str, Any]:
    with pytest_rocm.capture() as cap:
        fn()
    (sig,) = [s for s in cap.signatures if s["op"] == op]
    return sig


def test_a_workload_row_records_its_captured_layout_and_its_script_reproduces(tmp_path: Path) -> None:
    base = torch.randn(10, 10, dtype=torch.float16)
    sig = signature(lambda: torch.exp(base[2:, 1::2]), "aten.exp.default")
    assert replay(sig, CPU).result.repro is None  # a passing replay records nothing
    with PerturbsNonContiguous("aten.exp.default"):
        result = replay(sig, CPU).result
    assert result.failures and result.repro is not None
    spec = result.repro
    assert spec["op"] == "torch.ops.aten.exp.default" and spec["dtypes"] == ["float16"]
    (x,) = spec["tensors"]
    assert (x["shape"], x["stride"], x["storage_offset"], x["dtype"]) == ([8, 5], [10, 2], 21, "float16")
    record = next(r for r in result.records() if "repro" in r)  # in the report, on the first failure
    assert record["ok"] is False
    script = tmp_path / "workload.py"
    script.write_text(script_source(spec, "exp", "cpu", {}, template_text()))
    broken = run_script(script, bugs=True, bug=BUG)
    assert broken.returncode == 1, broken.stdout + broken.stderr
    clean = run_script(script, bugs=False)
    assert clean.returncode == 0, clean.stdout + clean.stderr


def test_a_workload_row_with_mixed_input_dtypes_says_why_it_is_not_rebuilt() -> None:
    a, b = torch.randn(4, 4, dtype=torch.float16), torch.randn(4, 4)
    sig = signature(lambda: torch.add(a.t(), b), "aten.add.Tensor")
    with PerturbsNonContiguous("aten.add.Tensor"):
        result = replay(sig, CPU).result
    assert result.failures and result.repro is not None and result.repro["op"] is None
    assert result.repro["why"] == "inputs in float16, float32: the script runs one dtype per run"
