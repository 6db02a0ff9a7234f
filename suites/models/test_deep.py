"""Deep, narrow Llama: the logits of a model as deep as the ones users run, judged by parity's model
criterion (``mode="model"``, docs/parity.md).

Rows: ``models/deep-llama/forward[<dtype>]``. Depth is what real models have and toys lack: 12
decoder layers in the ``ci`` profile, 32 (Llama-2-7B's and Llama-3-8B's count) in ``full``; width
stays narrow (hidden 64, 4 query heads over 2 key/value heads), so the rows are cheap on a CPU.
One op's tolerances do not hold for a deep model on any machine: in float16 and bfloat16 a few
logits of thousands land outside them on the CPU itself. The model criterion instead allows the
device at most k times the error that the dtype costs this very model (the float64 reference
recomputed with every op's result rounded to the dtype), normwise and for every element.
"""

from __future__ import annotations

import pytest

from pytest_rocm import INFO_PROPERTY, not_installed_reason

torch = pytest.importorskip("torch", reason=not_installed_reason("torch"))

from . import tiny  # noqa: E402
from .rows import rows  # noqa: E402

WORKLOAD = "deep-llama"
pytestmark = pytest.mark.rocm_requires("transformers")

#: decoder layers per scale profile
LAYERS = {"ci": 12, "full": 32}
TOKENS = 16


def deep_llama(layers: int) -> torch.nn.Module:
    """The toy Llama's width (tiny.py) at ``layers`` depth, seeded, float32, eval mode."""
    from transformers import LlamaConfig, LlamaForCausalLM

    settings = tiny.llama_config().to_dict()
    settings.update(num_hidden_layers=layers, initializer_range=0.02)  # the configs' default: deep and stable
    tiny.seed_everything()
    return LlamaForCausalLM(LlamaConfig(**settings)).eval()


@pytest.mark.parametrize("dtype", rows(WORKLOAD, "forward", tiny.DTYPES))
def test_forward(dtype: str, parity, rocm_scale: str, record_property) -> None:
    """Logits of TOKENS tokens against float64, by the model criterion."""
    layers = LAYERS[rocm_scale]
    model = deep_llama(layers)
    ids = torch.tensor([(tiny.PROMPT * 2)[:TOKENS]], dtype=torch.long)
    record_property(INFO_PROPERTY, {"layers": layers, "tokens": TOKENS, "hidden": model.config.hidden_size})
    with torch.no_grad():
        parity(
            lambda x: model(x, use_cache=False).logits, ids, module=model, mode="model", dtypes=(dtype,), name="logits"
        )
