"""Replaying one signature: the device at the captured layout and dtype against float64 on the CPU."""

from __future__ import annotations

import copy
from typing import Any

import pytest

torch = pytest.importorskip("torch")
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

import pytest_rocm  # noqa: E402
from pytest_rocm.workload.replay import NotReplayable, replay  # noqa: E402

CPU = torch.device("cpu")


def captured(fn: Any) -> list[dict[str, Any]]:
    with pytest_rocm.capture() as cap:
        fn()
    return cap.signatures


def only(signatures: list[dict[str, Any]], op: str) -> dict[str, Any]:
    (sig,) = [s for s in signatures if s["op"] == op]
    return sig


class Spy(TorchDispatchMode):
    """Records the layout of every non-float64 tensor an op got (the device runs)."""

    def __init__(self, op: str) -> None:
        super().__init__()
        self.op, self.seen = op, []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        if str(func) == self.op and args[0].dtype != torch.float64:
            self.seen.append((tuple(args[0].shape), args[0].stride(), args[0].storage_offset(), args[0].dtype))
        return func(*args, **(kwargs or {}))


class Scales(TorchDispatchMode):
    """The device runs of one op return ``factor`` times the right answer."""

    def __init__(self, op: str, factor: float) -> None:
        super().__init__()
        self.op, self.factor = op, factor

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        if str(func) == self.op and args[0].dtype != torch.float64:
            return out * self.factor
        return out


def test_the_device_run_gets_the_captured_strides_offset_and_dtype() -> None:
    base = torch.randn(10, 10, dtype=torch.float16)
    sig = only(captured(lambda: torch.exp(base[2:, 1::2])), "aten.exp.default")
    spy = Spy("aten.exp.default")
    with spy:
        replayed = replay(sig, CPU)
    assert set(spy.seen) == {((8, 5), (10, 2), 21, torch.float16)}
    assert replayed.reference == "cpu float64" and not replayed.result.failures


def test_every_value_regime_is_compared_and_an_overflow_the_dtype_makes_is_right() -> None:
    sig = only(captured(lambda: torch.exp(torch.randn(64, dtype=torch.float16))), "aten.exp.default")
    replayed = replay(sig, CPU)
    assert replayed.regimes == ["random", "zeros", "constant-rows", "large"]
    large = [c for c in replayed.result.comparisons if c.name.startswith("large")]
    assert large and all(c.ok for c in large)  # exp(32) overflows float16: inf is the right answer
    assert {c.dtype for c in replayed.result.comparisons} == {"float16"}


def test_a_wrong_kernel_fails_and_a_right_one_passes() -> None:
    sig = only(captured(lambda: torch.tanh(torch.randn(32, 16))), "aten.tanh.default")
    assert not replay(sig, CPU).result.failures
    with Scales("aten.tanh.default", 1.001):
        failures = replay(sig, CPU).result.failures
    assert failures and {c.kind for c in failures} == {"mismatch"}


def test_a_signature_seen_with_gradients_checks_its_backward_too() -> None:
    x = torch.randn(6, 5, requires_grad=True)
    sig = only(captured(lambda: torch.nn.functional.gelu(x).sum()), "aten.gelu.default")
    assert sig["grad"]
    replayed = replay(sig, CPU)
    assert replayed.backward
    grads = [c for c in replayed.result.comparisons if "grad" in c.name]
    assert grads and all(c.ok for c in grads)
    with Scales("aten.gelu_backward.default", 1.01):  # only the backward kernel is wrong
        failures = replay(sig, CPU).result.failures
    assert failures and all("grad" in c.name for c in failures)


def test_integer_outputs_are_compared_exactly_on_random_inputs_only() -> None:
    sig = only(captured(lambda: torch.argmax(torch.randn(4, 9), dim=1)), "aten.argmax.default")
    replayed = replay(sig, CPU)
    assert replayed.regimes == ["random"] and [c.dtype for c in replayed.result.comparisons] == ["int64"]


def test_indices_are_valid_for_the_tensor_they_index() -> None:
    weight = torch.randn(50, 8, requires_grad=True)
    sig = only(
        captured(lambda: torch.nn.functional.embedding(torch.randint(0, 50, (3, 7)), weight).sum()),
        "aten.embedding.default",
    )
    replayed = replay(sig, CPU)
    assert not replayed.result.failures and replayed.backward


def test_an_in_place_op_is_judged_by_what_it_wrote() -> None:
    a, b = [torch.randn(8)], [torch.randn(8)]
    sig = only(captured(lambda: torch._foreach_add_(a, b, alpha=0.5)), "aten._foreach_add_.List")
    replayed = replay(sig, CPU)
    assert [c.name for c in replayed.result.comparisons if c.name.startswith("random")] == ["random: self (written)[0]"]


def test_what_cannot_be_replayed_says_why() -> None:
    sig = only(captured(lambda: torch.ones(3).exp()), "aten.exp.default")
    with pytest.raises(NotReplayable, match=r"has no op aten\.no_such_op\.default"):
        replay({**copy.deepcopy(sig), "op": "aten.no_such_op.default"}, CPU)
    with pytest.raises(NotReplayable, match="random op"):
        replay(only(captured(lambda: torch.rand(3)), "aten.rand.default"), CPU)


def _flash_signature(grad: bool) -> dict[str, Any]:
    """A signature of CUDA's fused flash attention as a GPU capture records it (built from a CPU
    capture of the CPU variant, whose arguments it shares)."""
    q = torch.randn(2, 4, 16, 8, requires_grad=grad)
    sig = only(
        captured(lambda: torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)),
        "aten._scaled_dot_product_flash_attention_for_cpu.default",
    )
    sig = copy.deepcopy(sig)
    sig["op"] = "aten._scaled_dot_product_flash_attention.default"
    for arg in sig["args"]:
        if "tensor" in arg:
            arg["tensor"]["device"] = "cuda"
    return sig


class FusedOnThisDevice:
    """Stands in for the GPU's flash kernel (none on the CPU): the CPU's fused one, times ``factor``."""

    def __init__(self, factor: float = 1.0) -> None:
        self._schema = torch.ops.aten._scaled_dot_product_flash_attention.default._schema
        self.factor = factor

    def __call__(self, q: Any, k: Any, v: Any, dropout_p: float = 0.0, is_causal: bool = False, **kw: Any) -> Any:
        out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default(
            q, k, v, dropout_p, is_causal, scale=kw.get("scale")
        )
        return out * self.factor, lse


def test_a_gpu_capture_s_fused_attention_is_checked_against_math_attention(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_rocm.workload import replay as module
    from pytest_rocm.workload.references import flash

    q, k, v = (torch.randn(2, 4, 16, 8, dtype=torch.float64) for _ in range(3))
    (out,) = flash(q, k, v, 0.0, True)
    torch.testing.assert_close(out, torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True))
    sig = _flash_signature(grad=True)
    with pytest.raises(NotReplayable, match="has no cpu kernel here"):  # the CPU is not that GPU
        replay(sig, CPU)
    monkeypatch.setattr(module, "resolve_op", lambda name: FusedOnThisDevice())
    replayed = replay(sig, CPU)
    assert replayed.reference == "cpu float64 (math attention)" and replayed.backward
    assert not replayed.result.failures
    assert {c.name for c in replayed.result.comparisons} >= {"random: out[0]", "random: grad arg0"}
    monkeypatch.setattr(module, "resolve_op", lambda name: FusedOnThisDevice(1.01))
    assert replay(sig, CPU).result.failures
