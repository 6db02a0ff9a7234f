"""Mixed-precision training of a small CNN: autocast fp16 with GradScaler, autocast bf16, checkpointing.

The reference is the same training run in float32 on the CPU (same seeded weights, same batch):
the device's autocast run must track its per-step losses and its parameter updates. Rows:
``models/cnn/<check>[<dtype>]``.
"""

from __future__ import annotations

import functools

import pytest

from pytest_rocm import INFO_PROPERTY, PARITY_PROPERTY, not_installed_reason

torch = pytest.importorskip("torch", reason=not_installed_reason("torch"))

import torch.nn.functional as F  # noqa: E402

from . import tiny  # noqa: E402
from .rows import rows  # noqa: E402

WORKLOAD = "cnn"
STEPS = 6
LEARNING_RATE = 0.1
#: autocast against the fp32 run, per dtype: (largest relative difference of a step's loss,
#: normwise difference of the parameter updates relative to the fp32 update). Measured on the
#: CPU: fp16 (2e-5, 5e-3), bf16 (1.2e-4, 1.2e-2). GPUs run convolutions truly in fp16/bf16, so
#: the bounds leave ample room; a step lost to an overflow the scaler could not handle, or a
#: gradient left scaled, moves the update by far more.
TRACKING = {"float16": (1e-2, 0.05), "bfloat16": (3e-2, 0.1)}
#: gradients with checkpointed blocks against stored activations: same arithmetic


def _train(device: torch.device, dtype: str | None) -> tuple[list[float], torch.Tensor]:
    """STEPS of SGD with momentum; ``dtype`` None is plain fp32, else autocast in that dtype
    (fp16 with a GradScaler, as users must). Returns the losses and the final parameters."""
    tiny.seed_everything()
    model = tiny.cnn(device)
    images, labels = tiny.cnn_batch(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=LEARNING_RATE, momentum=0.9)
    scaler = torch.amp.GradScaler(device.type, enabled=dtype == "float16")
    losses = []
    for _ in range(STEPS):
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=tiny.dtype_of(dtype or "float32"), enabled=dtype is not None):
            loss = F.cross_entropy(model(images), labels)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        losses.append(loss.item())
    return losses, tiny.flat(model.parameters())


@functools.lru_cache(maxsize=1)
def _reference() -> tuple[list[float], torch.Tensor]:
    return _train(torch.device("cpu"), None)


@pytest.mark.parametrize("dtype", rows(WORKLOAD, "autocast", ("float16", "bfloat16")))
def test_autocast(dtype: str, rocm_device: torch.device, record_property) -> None:
    """A few autocast steps track the fp32 run: per-step losses and the parameter update."""
    ref_losses, ref_params = _reference()
    start = tiny.flat(tiny.cnn().parameters())
    losses, params = _train(rocm_device, dtype)
    loss_bound, update_bound = TRACKING[dtype]
    loss_error = max(abs(a - b) / abs(b) for a, b in zip(losses, ref_losses, strict=False))
    update_error = tiny.normwise_error(params - start, ref_params - start)
    record_property(INFO_PROPERTY, {"losses": losses, "fp32_losses": ref_losses})
    record_property(
        PARITY_PROPERTY,
        [
            tiny.record(dtype, "step-losses", loss_error, loss_bound),
            tiny.record(dtype, "parameter-update", update_error, update_bound),
        ],
    )
    assert ref_losses[-1] < 0.95 * ref_losses[0], f"the fp32 run itself does not learn: {ref_losses}"
    assert loss_error <= loss_bound and update_error <= update_bound, (
        f"{dtype} autocast drifts from fp32: step losses rel {loss_error:.3g} (<= {loss_bound}), "
        f"parameter update normwise {update_error:.3g} (<= {update_bound}); losses {losses} vs {ref_losses}"
    )


@pytest.mark.parametrize("dtype", rows(WORKLOAD, "checkpoint", ("float32",)))
def test_checkpoint(dtype: str, rocm_device: torch.device, record_property) -> None:
    """Checkpointed blocks (recomputed in backward) give the same gradients as stored activations."""
    images, labels = tiny.cnn_batch(rocm_device)

    def gradients(checkpointing: bool) -> tuple[torch.Tensor, int]:
        model = tiny.cnn(rocm_device)
        model.checkpointing = checkpointing
        calls = []
        model.block1[0].register_forward_pre_hook(lambda *_: calls.append(1))
        F.cross_entropy(model(images), labels).backward()
        return tiny.flat(p.grad for p in model.parameters()), len(calls)

    tiny.check_recomputed_gradients(gradients, dtype, record_property, "block")
