"""pytest_rocm.capture(): what a capture records (signatures, layouts, phases, counts) and what it never does (values)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import pytest_rocm  # noqa: E402
from pytest_rocm.workload.schema import load_workload  # noqa: E402
from pytest_rocm.workload.signature import signature_text  # noqa: E402


def _by_op(document: dict, op: str) -> list[dict]:
    return [s for s in document["signatures"] if s["op"] == op]


def test_distinct_calls_are_counted_once_with_their_layout_and_phase(tmp_path: Path) -> None:
    x = torch.randn(8, 6, requires_grad=True)
    w = torch.randn(4, 6, requires_grad=True)
    with pytest_rocm.capture(tmp_path / "ops.json") as cap:
        for _ in range(3):
            y = torch.nn.functional.linear(x, w)  # t + mm, three times: one signature each
        y.sum().backward()
        torch.exp(torch.randn(10, 10)[2:, 1::2])  # a strided view with an offset
    document = load_workload(tmp_path / "ops.json")
    assert document == cap.document
    (forward_mm,) = [s for s in _by_op(document, "aten.mm.default") if s["phase"] == "forward"]
    assert forward_mm["calls"] == 3 and forward_mm["grad"] is True
    a, b = (arg["tensor"] for arg in forward_mm["args"])
    assert (a["shape"], a["stride"], a["dtype"], a["device"]) == ([8, 6], [6, 1], "float32", "cpu")
    assert (b["shape"], b["stride"]) == ([6, 4], [1, 6])  # w.t(): the transposed layout the kernel got
    backward_mms = [s for s in _by_op(document, "aten.mm.default") if s["phase"] == "backward"]
    assert backward_mms and all(not s["grad"] for s in backward_mms)
    (exp,) = _by_op(document, "aten.exp.default")
    assert exp["args"][0]["tensor"] | {"requires_grad": False} == {
        "shape": [8, 5],
        "stride": [10, 2],
        "offset": 21,
        "dtype": "float32",
        "device": "cpu",
        "requires_grad": False,
    }
    assert "f32[8,5]{s=10,2}@21" in signature_text(exp)
    assert document["calls"] == sum(s["calls"] for s in document["signatures"])


def test_scalars_keywords_in_place_and_autocast_are_part_of_the_signature() -> None:
    x = torch.randn(4, 4)
    with pytest_rocm.capture() as cap:
        x.add_(torch.ones(4, 4), alpha=0.5)
        torch.add(x, 1.0)
        torch.add(x, 2.0)  # another scalar: another signature
        torch.softmax(x, dim=-1)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            torch.mm(x, x)
    sigs = cap.signatures
    (inplace,) = _by_op(cap.document, "aten.add_.Tensor")
    assert inplace["inplace"] is True and inplace["kwargs"] == {"alpha": {"value": 0.5}}
    assert {json.dumps(s["args"][1]) for s in _by_op(cap.document, "aten.add.Tensor")} >= {
        '{"value": 1.0}',
        '{"value": 2.0}',
    }
    (mm,) = _by_op(cap.document, "aten.mm.default")
    assert mm["autocast"] == {"device_type": "cpu", "dtype": "bfloat16"}
    assert mm["args"][0]["tensor"]["dtype"] == "bfloat16"  # the kernel's dtype, after autocast's cast
    assert all(s["autocast"] is None for s in sigs if s["op"] != "aten.mm.default" and "_to_copy" not in s["op"])
    assert len({s["id"] for s in sigs}) == len(sigs)


def test_tensor_values_are_never_written(tmp_path: Path) -> None:
    secret = torch.full((3, 3), 4321.25)  # exact in float32: a written value would read the same
    with pytest_rocm.capture(tmp_path / "ops.json"):
        (secret * 2).sum()
    text = (tmp_path / "ops.json").read_text()
    assert "4321.25" not in text and "8642.5" not in text


@torch.library.custom_op("pytest_rocm_tests::twice", mutates_args=())
def _twice(x: torch.Tensor) -> torch.Tensor:
    return x * 2


def test_ops_that_cannot_be_replayed_are_listed_with_the_reason() -> None:
    x = torch.randn(6, 6)
    with pytest_rocm.capture() as cap:
        torch.nn.functional.dropout(x, 0.5, training=True)
        torch.nonzero(x > 0)
        _twice(x)
        torch.empty(3)
        q = x[None, None]
        torch.nn.functional.scaled_dot_product_attention(q, q, q)  # dropout 0: replayable
    reasons = {s["op"]: s["not_replayable"] for s in cap.signatures}
    assert any("random op" in (r or "") for op, r in reasons.items() if "bernoulli" in op or "dropout" in op)
    assert "data-dependent" in reasons["aten.nonzero.default"]
    assert "custom op from an extension (namespace pytest_rocm_tests)" in reasons["pytest_rocm_tests.twice.default"]
    assert "uninitialised" in reasons["aten.empty.memory_format"]
    attention = [op for op in reasons if "scaled_dot_product" in op]
    assert attention and all(reasons[op] is None for op in attention)
    assert reasons["aten.mul.Tensor"] is None


def test_the_file_is_written_when_the_block_raises(tmp_path: Path) -> None:
    def script() -> None:
        with pytest_rocm.capture(tmp_path / "ops.json"):
            torch.ones(2).sum()
            raise SystemExit(3)

    with pytest.raises(SystemExit):
        script()
    document = load_workload(tmp_path / "ops.json")
    assert document["exit_status"] == 3 and _by_op(document, "aten.sum.default")


def test_the_capture_names_the_torch_and_device_that_made_it(tmp_path: Path) -> None:
    with pytest_rocm.capture(tmp_path / "ops.json"):
        torch.ones(2).sum()
    on = json.loads((tmp_path / "ops.json").read_text())["captured_on"]
    assert on["torch"] == torch.__version__ and on["backend"] == "cpu" and on["device"] == "cpu"


def test_a_tiny_llama_training_step_gives_a_few_hundred_signatures(captures: dict[str, Path]) -> None:
    document = load_workload(captures["llama"])
    count = len(document["signatures"])
    assert 100 <= count <= 600, count
    assert document["calls"] > 2 * count  # deduplicated: far fewer signatures than calls
    phases = {s["phase"] for s in document["signatures"]}
    assert phases == {"forward", "backward"}
    ops = {s["op"] for s in document["signatures"]}
    # the optimizer step (AdamW's foreach or per-tensor updates) and the attention backward are in it
    assert {"aten.embedding_dense_backward.default", "aten.nll_loss_backward.default"} <= ops
    assert any(op.startswith(("aten.addcdiv", "aten._foreach_addcdiv", "aten.lerp")) for op in ops)


def test_torch_compile_keeps_compiling_under_capture() -> None:
    import torch._dynamo

    torch._dynamo.reset()

    def f(x: torch.Tensor) -> torch.Tensor:
        return torch.sin(x) @ x.t() + 1

    compiled = torch.compile(f, backend="eager")
    before = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    with pytest_rocm.capture() as cap:
        compiled(torch.randn(8, 8))
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == before + 1  # 0 under the old capture
    assert cap.document is not None and cap.document["compiled_graphs"] == 1
    assert {"aten.sin.default", "aten.mm.default"} <= {s["op"] for s in cap.signatures}  # what the graph ran


def test_calls_differing_only_in_a_keyword_argument_are_two_signatures() -> None:
    x, y = torch.randn(4), torch.randn(4)
    with pytest_rocm.capture() as cap:
        torch.add(x, y, alpha=0.5)
        torch.add(x, y, alpha=2)
        torch.add(x, y, alpha=2)
    adds = sorted((s["kwargs"]["alpha"]["value"], s["calls"]) for s in _by_op(cap.document, "aten.add.Tensor"))
    assert adds == [(0.5, 1), (2, 2)]  # the old key ignored kwargs: one signature, alpha 0.5, 3 calls
