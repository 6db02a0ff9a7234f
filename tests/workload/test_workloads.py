"""Realistic workloads (``workloads.py``: a peft LoRA step with gradient checkpointing and a fused
AdamW, ``generate()`` with a KV cache, bf16 autocast, channels_last convolutions under autocast),
captured and replayed on a correct device, the CPU: no row fails. A kernel wrong at one of their
own shapes, in the device runs only (``kernel_mutants.PerturbsOneShape``), fails exactly its rows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from test_workload_plugin import outcomes, perturbation, replay, signatures, tensor_shapes  # noqa: E402

import pytest_rocm  # noqa: E402
from pytest_rocm.workload.replay import replay as replay_one  # noqa: E402
from pytest_rocm.workload.signature import row_name  # noqa: E402

#: per workload: the op broken at one of its captured shapes, the dtype it runs in, and how wrong
#: (1 % in float32; 5 % in bfloat16, whose own rounding step is 0.8 %)
TARGETS = {
    "lora": ("aten.mm.default", "float32", 1.01),
    "generate": ("aten.gelu.default", "float32", 1.01),
    "autocast": ("aten.addmm.default", "bfloat16", 1.05),
    "vision": ("aten.convolution.default", "bfloat16", 1.05),
}


def _dtypes(signature: dict[str, Any]) -> set[str]:
    return {a["tensor"]["dtype"] for a in signature["args"] if "tensor" in a}


@pytest.mark.parametrize("name", list(TARGETS))
def test_a_workload_replays_clean_and_a_kernel_wrong_at_one_of_its_shapes_fails_its_rows(
    pytester: pytest.Pytester, workload_captures: dict[str, Path], name: str
) -> None:
    path = workload_captures[name]
    sigs = signatures(path)
    clean = outcomes(replay(pytester, path))
    assert set(clean) == {row_name(s) for s in sigs}
    wrong = {row: o for row, o in clean.items() if o not in ("passed", "skipped")}
    assert not wrong, wrong
    skipped = {row_name(s) for s in sigs if s["not_replayable"]}
    assert {row for row, o in clean.items() if o == "skipped"} == skipped  # only what the capture said
    op, dtype, factor = TARGETS[name]
    target = next(s for s in sigs if s["op"] == op and _dtypes(s) == {dtype} and not s["not_replayable"])
    shapes = tensor_shapes(target)
    broken = {row_name(s) for s in sigs if s["op"] == op and tensor_shapes(s) == shapes}
    packet = op.split(".")[1]
    perturbed = outcomes(replay(pytester, path, "-k", packet, plugin=perturbation(op, shapes, factor)))
    failed = {row for row, o in perturbed.items() if o == "failed"}
    # every row of the broken shape fails; so may a row of the same op whose backward runs the op at
    # that shape (its gradient check catches it there); no row of another op does
    assert broken <= failed and failed <= {row_name(s) for s in sigs if s["op"] == op}
    assert all(clean[row] == o for row, o in perturbed.items() if row not in failed)


def test_the_reference_gets_the_values_a_bf16_device_computed_with_in_every_regime() -> None:
    x = torch.randn(6, 16)
    with pytest_rocm.capture() as cap:
        x.bfloat16().float().softmax(-1)  # the three-line reproducer: bf16 in, float32 out
    for sig in cap.signatures:
        if not sig["not_replayable"]:
            replayed = replay_one(sig, torch.device("cpu"))
            assert "constant-rows" in replayed.regimes and not replayed.result.failures, sig["op"]


def test_an_op_mixing_precisions_is_judged_at_the_precision_it_computes_in() -> None:
    q = torch.randn(2, 4, 17, 8, dtype=torch.bfloat16)
    with pytest_rocm.capture() as cap:
        torch.nn.functional.scaled_dot_product_attention(q, q, q)
    (sig,) = [s for s in cap.signatures if "flash_attention" in s["op"]]
    replayed = replay_one(sig, torch.device("cpu"))
    assert not replayed.result.failures
    (lse,) = [c for c in replayed.result.comparisons if c.name == "random: out[1]"]
    assert lse.dtype == "float32" and lse.extra["judged_at"] == "bfloat16"  # a float32 output of bf16 inputs


def test_gradient_checkpointing_in_a_script_that_never_autocasts_is_not_labelled_autocast(
    workload_captures: dict[str, Path],
) -> None:
    lora = signatures(workload_captures["lora"])
    assert len(lora) > 100 and not [s["op"] for s in lora if s["autocast"]]
    assert any(s["phase"] == "backward" and s["op"] == "aten.mm.default" for s in lora)  # the recomputation ran
    autocast = signatures(workload_captures["autocast"])
    labelled = [s for s in autocast if s["autocast"]]
    assert labelled and all(s["autocast"] == {"device_type": "cpu", "dtype": "bfloat16"} for s in labelled)
