"""A CUDA capture's cuDNN ops replayed on a ROCm build run what ROCm runs for them (MIOpen's), or
say why they cannot (``_cudnn_rnn``); a ROCm capture's MIOpen ops on a CUDA build say so. The
GPU is stood in for by CPU kernels behind the op names (no GPU here), as in test_replay.py."""

from __future__ import annotations

import copy
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import pytest_rocm  # noqa: E402
from pytest_rocm.workload import replay as module  # noqa: E402
from pytest_rocm.workload import vendors  # noqa: E402
from pytest_rocm.workload.replay import NotReplayable, replay  # noqa: E402

CPU = torch.device("cpu")


def _cudnn_batch_norm() -> dict[str, Any]:
    """cudnn_batch_norm as a CUDA capture records it: native_batch_norm's arguments, renamed."""
    x = torch.randn(4, 3, 5, 5)
    with pytest_rocm.capture() as cap:
        torch.ops.aten.native_batch_norm.default(
            x, torch.ones(3), torch.zeros(3), torch.zeros(3), torch.ones(3), True, 0.1, 1e-5
        )
    (sig,) = copy.deepcopy([s for s in cap.signatures if s["op"] == "aten.native_batch_norm.default"])
    sig["op"] = "aten.cudnn_batch_norm.default"
    return sig


class MIOpenHere:
    """Stands in for ROCm's miopen_batch_norm (none on the CPU): native_batch_norm, times ``factor``."""

    def __init__(self, factor: float = 1.0) -> None:
        self._schema = torch.ops.aten.miopen_batch_norm.default._schema
        self.factor, self.calls = factor, 0

    def __call__(self, *args: Any) -> Any:
        self.calls += 1
        out, mean, invstd = torch.ops.aten.native_batch_norm.default(*args)
        return out * self.factor, mean, invstd


def test_cudnn_batch_norm_replays_on_rocm_as_miopen_batch_norm(monkeypatch: pytest.MonkeyPatch) -> None:
    sig = _cudnn_batch_norm()
    mapped = vendors.translate(sig, "aten.miopen_batch_norm.default")
    assert mapped is not None and mapped["args"] == sig["args"]  # the same arguments, by name
    conv = vendors.translate({**sig, "op": "aten.cudnn_convolution.default", "args": [
        {"tensor": {}}, {"tensor": {}}, {"value": [1, 1]}, {"value": [1, 1]}, {"value": [1, 1]}, {"value": 1},
        {"value": False}, {"value": False}, {"value": True}]}, "aten.miopen_convolution.default")  # fmt: skip
    assert conv is not None and conv["args"][2] == {"value": None} and len(conv["args"]) == 9  # bias None, no tf32
    monkeypatch.setattr(vendors, "rocm_build", lambda: True)
    real = module.resolve_op
    here = MIOpenHere()
    monkeypatch.setattr(module, "resolve_op", lambda name: here if "miopen" in name else real(name))
    gpu = torch.device("cuda")  # the device type a ROCm GPU has; the tensors stay on the CPU stand-in
    monkeypatch.setattr(module, "Maker", lambda s, d, r, seed: _CPUMaker(s, r, seed))
    replayed = replay(sig, gpu)
    assert here.calls and replayed.notes == [
        "captured as aten.cudnn_batch_norm.default (cuDNN); replayed as aten.miopen_batch_norm.default, "
        "what this ROCm build runs for it"
    ]
    assert replayed.reference == "cpu float64 (portable equivalent)" and not replayed.result.failures
    here.factor = 1.01
    assert replay(sig, gpu).result.failures


def _CPUMaker(signature: dict[str, Any], regime: str, seed: int) -> Any:
    from pytest_rocm.workload.inputs import Maker

    return Maker(signature, CPU, regime, seed)


def test_a_vendor_op_with_no_counterpart_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    rnn = {"op": "aten._cudnn_rnn.default", "args": [], "kwargs": {}, "not_replayable": None}
    monkeypatch.setattr(vendors, "rocm_build", lambda: True)
    with pytest.raises(NotReplayable, match="cuDNN's RNN takes its weights as one buffer in cuDNN's layout"):
        replay(rnn, torch.device("cuda"))
    monkeypatch.setattr(vendors, "rocm_build", lambda: False)
    with pytest.raises(NotReplayable, match="is MIOpen's \\(captured on ROCm\\): this CUDA build has no MIOpen"):
        replay({**rnn, "op": "aten.miopen_rnn.default"}, torch.device("cuda"))
