"""The deep-Llama rows (suites/models/test_deep.py, parity's model criterion) judged from outside:
unbroken they pass at 12 layers, and a 1 % attention error in float16, or a GEMM that drops the
tail of its reduction in bfloat16, fails exactly that dtype's row.

Both breaks key on the dtype of the tensors, as a wrong kernel for one dtype would: the model
criterion's yardstick computes in float64 (rounding each result to the dtype), so it is never
broken with them, and it would not be on a real device either (it runs on the CPU).
"""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
# imported here, before pytester's in-process runs snapshot sys.modules: a module those runs import
# is dropped after each, and torch's operator libraries (c10d_functional, which modeling_llama
# pulls in) cannot be registered twice in one process
pytest.importorskip("transformers.models.llama.modeling_llama")

import kernel_mutants  # noqa: E402
from suite_runs import run_suite  # noqa: E402

SUITE = Path(__file__).resolve().parents[2] / "suites" / "models"
ROWS = {f"models/deep-llama/forward[{d}]" for d in ("float32", "float16", "bfloat16")}

#: every loaded copy of LlamaAttention returns its output 1 % too large when it is float16
ATTENTION_ONE_PERCENT_FP16 = """
import sys

import pytest


@pytest.fixture(autouse=True)
def _attention_one_percent_high(monkeypatch):
    import torch
    import transformers.models.llama.modeling_llama  # noqa: F401

    def broken(original):
        def forward(self, *args, **kwargs):
            output, *rest = original(self, *args, **kwargs)
            return (output * 1.01 if output.dtype == torch.float16 else output, *rest)

        return forward

    # every loaded copy of the class (the test module imports modeling_llama before the runs)
    classes = {m.LlamaAttention for n, m in list(sys.modules.items()) if n.endswith("modeling_llama") and m}
    for cls in classes:
        monkeypatch.setattr(cls, "forward", broken(cls.forward))
"""

#: bfloat16 matrix products ignore the last eighth of their reduction (a K-remainder bug)
GEMM_DROPS_K_TAIL_BF16 = (
    """
from typing import Any

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode


"""
    + inspect.getsource(kernel_mutants.DropsKTail)
    + """

@pytest.fixture(autouse=True)
def _gemm_drops_k_tail():
    with DropsKTail():
        yield
"""
)


@pytest.fixture
def restore_offline_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.delenv(var, raising=False)


def _outcomes(pytester: pytest.Pytester, plugin: str | None) -> dict[str, dict]:
    return run_suite(pytester, SUITE, "-k", "test_deep", plugin=plugin)


def test_unbroken_deep_rows_pass_by_the_model_criterion(pytester: pytest.Pytester, restore_offline_env) -> None:
    records = _outcomes(pytester, None)
    assert {row: r["outcome"] for row, r in records.items()} == dict.fromkeys(ROWS, "passed")
    for record in records.values():
        (parity,) = record["parity"]
        assert parity["mode"] == "model" and parity["n_bad"] == 0
        assert parity["normwise"] <= parity["normwise_tol"] and parity["cpu_normwise"] > 0
        assert record["info"]["layers"] == 12


@pytest.mark.parametrize(
    ("plugin", "broken_row"),
    [
        (ATTENTION_ONE_PERCENT_FP16, "models/deep-llama/forward[float16]"),
        (GEMM_DROPS_K_TAIL_BF16, "models/deep-llama/forward[bfloat16]"),
    ],
    ids=["attention-1pct-fp16", "gemm-k-tail-bf16"],
)
def test_a_break_in_one_dtype_fails_exactly_its_row(
    pytester: pytest.Pytester, restore_offline_env, plugin: str, broken_row: str
) -> None:
    records = _outcomes(pytester, plugin)
    outcomes = {row: r["outcome"] for row, r in records.items()}
    assert outcomes == {row: "failed" if row == broken_row else "passed" for row in ROWS}
    (parity,) = records[broken_row]["parity"]
    assert not parity["ok"] and parity["normwise"] > parity["normwise_tol"]
