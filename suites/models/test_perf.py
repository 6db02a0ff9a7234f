"""Measured model rows: tokens/s of prefill and decode, steps/s of training (docs/perf.md).

``models/perf/<check>[<dtype>]``. The model is the seeded Llama of ``tiny.py``: the toy ``tiny``
variant in the ``ci`` profile (cheap on 2 CPU cores), ``hd128`` (head_dim 128, 4 query heads per
key/value head, hidden 512: real attention shapes) with a longer prompt in ``full``. Prefill is one
forward pass over the prompt (tokens = prompt length x batch); decode is one token against a KV
cache of the prompt (tokens = batch); the training step is forward, backward and an SGD update
under autocast in the low-precision dtype (AMP; ``float32``: plain). Speed only: the parity of
these paths is the other model rows' job.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_rocm import not_installed_reason, scale_cases

torch = pytest.importorskip("torch", reason=not_installed_reason("torch"))


from . import tiny  # noqa: E402
from .rows import rows  # noqa: E402

WORKLOAD = "perf"
pytestmark = pytest.mark.rocm_requires("transformers")

# (variant, batch, prompt length)
MODEL = scale_cases("setup", {"llama": (("tiny", 1, 16), ("hd128", 4, 512))})


def _model_and_prompt(setup: tuple[str, int, int], dtype: str, device: Any) -> tuple[Any, Any]:
    variant, batch, length = setup
    model = tiny.llama(device, dtype, variant)
    generator = torch.Generator().manual_seed(tiny.SEED)
    ids = torch.randint(0, tiny.VOCAB, (batch, length), generator=generator).to(device)
    return model, ids


@pytest.mark.parametrize("dtype", rows(WORKLOAD, "prefill-tokens", tiny.DTYPES))
@MODEL
def test_prefill_tokens_per_second(setup: tuple[str, int, int], dtype: str, rocm_device: Any, perf: Any) -> None:
    model, ids = _model_and_prompt(setup, dtype, rocm_device)
    with torch.no_grad():
        record = perf(
            lambda: model(ids, use_cache=False), work={"tokens": ids.numel()}, dtype=dtype, device=rocm_device
        )
    assert record["unit"] == "tokens/s"


@pytest.mark.parametrize("dtype", rows(WORKLOAD, "decode-tokens", tiny.DTYPES))
@MODEL
def test_decode_tokens_per_second(setup: tuple[str, int, int], dtype: str, rocm_device: Any, perf: Any) -> None:
    """One new token per sequence against the prompt's KV cache (the cache is not grown between
    repetitions: each step is the same decode at the same length)."""
    import copy

    model, ids = _model_and_prompt(setup, dtype, rocm_device)
    with torch.no_grad():
        cache = tiny._cache_of(model(ids[:, :-1], use_cache=True))
        last = ids[:, -1:]
        position = torch.full_like(last, ids.shape[1] - 1)

        def step() -> Any:
            # a copy of the prompt's cache per step, so every repetition decodes at the same length
            kwargs = {tiny._cache_argument(model): copy.deepcopy(cache)}
            return model(last, position_ids=position, use_cache=True, **kwargs)

        perf(step, work={"tokens": ids.shape[0]}, dtype=dtype, device=rocm_device)


@pytest.mark.parametrize("dtype", rows(WORKLOAD, "amp-train-steps", tiny.DTYPES))
@MODEL
def test_training_steps_per_second(setup: tuple[str, int, int], dtype: str, rocm_device: Any, perf: Any) -> None:
    model, ids = _model_and_prompt(setup, "float32", rocm_device)
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
    low = dtype != "float32"

    def train_step() -> None:
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(rocm_device.type, dtype=tiny.dtype_of(dtype), enabled=low):
            loss = model(ids, labels=ids).loss
        loss.backward()
        optimizer.step()

    perf(train_step, work={"steps": 1}, dtype=dtype, device=rocm_device)
