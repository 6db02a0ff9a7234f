"""Rows that used to end in an exception or a false reason (issue 54, point 2): sparse results and
conjugate views are replayed and compared, EmbeddingBag gets valid offsets from its captured
shapes, and a row the CPU reference refuses says whether it has no kernel or the generated
inputs were not valid for it."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

import pytest_rocm  # noqa: E402
from pytest_rocm.workload.replay import NotReplayable, replay  # noqa: E402
from pytest_rocm.workload.signature import signature_text  # noqa: E402

CPU = torch.device("cpu")


def captured(fn: Any) -> list[dict[str, Any]]:
    with pytest_rocm.capture() as cap:
        fn()
    return cap.signatures


class Wrong(TorchDispatchMode):
    """The device runs (no float64 input) of one op return ``factor`` times the right answer;
    ``seen`` the conjugate and negative bits of their first tensor argument."""

    def __init__(self, op: str, factor: float = 1.01) -> None:
        super().__init__()
        self.op, self.factor, self.seen = op, factor, []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        wide = any(t.dtype in (torch.float64, torch.complex128) or t.is_meta for t in tensors)  # not a device run
        if str(func) == self.op and not wide:
            self.seen.append((tensors[0].is_conj(), tensors[0].is_neg()))
            if isinstance(out, torch.Tensor) and out.layout == torch.strided:
                return out * self.factor
            if isinstance(out, tuple):
                return (out[0] * self.factor, *out[1:])
        return out


def test_a_sparse_result_is_compared_densely() -> None:
    x = torch.randn(6, 5).relu()
    sigs = captured(lambda: (x.to_sparse(), x.to_sparse_csr()))
    for sig in [s for s in sigs if "sparse" in s["op"]]:
        replayed = replay(sig, CPU)
        assert replayed.result.comparisons and not replayed.result.failures, signature_text(sig)


def test_a_conjugate_view_is_recorded_replayed_as_one_and_compared_by_its_values() -> None:
    z, w = (torch.randn(4, 4, dtype=torch.complex64) for _ in range(2))
    sigs = captured(lambda: (z.conj() @ w, z.conj()))
    (mm,) = [s for s in sigs if s["op"] == "aten.mm.default"]
    assert mm["args"][0]["tensor"]["conj"] is True and "conj" not in mm["args"][1]["tensor"]
    assert signature_text(mm) == "aten.mm.default(c64[4,4].conj, c64[4,4])"
    with Wrong("aten.mm.default", 1.0) as spy:
        assert not replay(mm, CPU).result.failures
    assert set(spy.seen) == {(True, False)}  # the kernel got the conjugate view, as in the program
    with Wrong("aten.mm.default"):
        assert replay(mm, CPU).result.failures
    (conj,) = [s for s in sigs if s["op"] == "aten._conj.default"]  # its result is a conjugate view
    assert not replay(conj, CPU).result.failures


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("include_last_offset", [False, True])
def test_embedding_bag_gets_valid_offsets_from_the_captured_shape(mode: str, include_last_offset: bool) -> None:
    bag = torch.nn.EmbeddingBag(20, 3, mode=mode, include_last_offset=include_last_offset)
    indices, offsets = torch.randint(0, 20, (10,)), torch.tensor([0, 3, 7, 10] if include_last_offset else [0, 3, 7])
    sigs = captured(lambda: bag(indices, offsets).sum().backward())
    rows = [s for s in sigs if "embedding_bag" in s["op"]]
    assert any(s["grad"] for s in rows) and any(s["phase"] == "backward" for s in rows)
    for sig in rows:
        replayed = replay(sig, CPU)
        assert replayed.result.comparisons and not replayed.result.failures, signature_text(sig)
    (forward,) = [s for s in rows if s["op"] == "aten._embedding_bag.default"]
    with Wrong("aten._embedding_bag.default"):
        assert replay(forward, CPU).result.failures


def test_per_sample_weights_and_2d_input_replay_too() -> None:
    bag = torch.nn.EmbeddingBag(12, 4, mode="sum")
    sigs = captured(lambda: bag(torch.randint(0, 12, (3, 5)), per_sample_weights=torch.rand(3, 5)).sum().backward())
    for sig in [s for s in sigs if "embedding_bag" in s["op"]]:
        assert not replay(sig, CPU).result.failures, signature_text(sig)


def test_inputs_the_reference_refuses_are_said_to_be_the_inputs_not_a_missing_kernel() -> None:
    padded = torch.randn(3, 5, 2)
    sigs = captured(lambda: torch.nn.utils.rnn.pack_padded_sequence(padded, torch.tensor([5, 3, 2]), batch_first=True))
    (pack,) = [s for s in sigs if s["op"] == "aten._pack_padded_sequence.default"]
    with pytest.raises(NotReplayable) as info:
        replay(pack, CPU)
    assert str(info.value).startswith("the CPU reference refused the generated inputs (")
    assert str(info.value).endswith("values the program passed cannot be rebuilt from its signature")


def test_composite_calls_are_recorded_as_themselves_and_replayed() -> None:
    lstm, gru = torch.nn.LSTM(4, 8, 2), torch.nn.GRU(4, 8)
    x, q = torch.randn(5, 2, 4), torch.randn(1, 2, 4, 8)

    def program() -> None:
        lstm(x)[0].sum().backward()
        gru(x)
        torch.nn.functional.rms_norm(x.bfloat16(), (4,))  # eps=None: the dtype's epsilon
        torch.nn.functional.scaled_dot_product_attention(q, q, q)

    sigs = captured(program)
    by_op = {s["op"]: s for s in sigs}
    for op in (
        "aten.lstm.input",
        "aten.gru.input",
        "aten.rms_norm.default",
        "aten.scaled_dot_product_attention.default",
    ):
        assert op in by_op and by_op[op]["calls"] == 1 and not by_op[op]["not_replayable"], op
        replayed = replay(by_op[op], CPU)
        assert replayed.result.comparisons and not replayed.result.failures, op
    assert by_op["aten.lstm.input"]["grad"]  # its weights require grad, in a list
    backward = [s for s in sigs if s["phase"] == "backward" and not s["not_replayable"]]  # its backward's rows
    assert backward and all(not replay(s, CPU).result.failures for s in backward[:8])
    assert "aten.addmm.default" in by_op or "aten.mm.default" in by_op  # the decomposition is recorded too
