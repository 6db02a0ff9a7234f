"""The tiny Llama split across two GPUs with ``device_map="auto"`` generates what one GPU does.

accelerate places whole decoder layers on each device and moves activations between them; the
tokens must not change. Skips where fewer than two GPUs are present (the ``gpus(2)`` marker).
Row: ``models/tiny-llama/multi-gpu[float32]``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_rocm import INFO_PROPERTY, not_installed_reason

torch = pytest.importorskip("torch", reason=not_installed_reason("torch"))

from . import tiny  # noqa: E402
from .rows import rows  # noqa: E402

WORKLOAD = "tiny-llama"
pytestmark = [
    pytest.mark.rocm_requires("transformers"),
    pytest.mark.rocm_requires("accelerate"),
    pytest.mark.rocm_gpus(2),
]


@pytest.mark.parametrize("dtype", rows(WORKLOAD, "multi-gpu", ("float32",)))
def test_multi_gpu(dtype: str, rocm_device: torch.device, tmp_path: Path, record_property) -> None:
    from transformers import LlamaForCausalLM

    tiny.llama("cpu", dtype).save_pretrained(tmp_path)  # safetensors, loaded back below: no download
    split = LlamaForCausalLM.from_pretrained(
        tmp_path, device_map="auto", max_memory=tiny.two_device_max_memory()
    ).eval()
    placement = dict(split.hf_device_map)
    record_property(INFO_PROPERTY, {"device_map": {k: str(v) for k, v in placement.items()}})
    assert {0, 1} <= set(placement.values()), f"device_map='auto' did not use both GPUs: {placement}"
    single = tiny.greedy(tiny.llama(rocm_device, dtype))
    across = tiny.greedy(split)
    assert across == single, f"tokens across two GPUs {across} != on one device {single}"
