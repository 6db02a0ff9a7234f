"""The model suite's builders and judges (suites/models/tiny.py, rows.py), checked directly."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

SUITES = str(Path(__file__).resolve().parents[2] / "suites")


@pytest.fixture(scope="module")
def tiny():
    sys.path.insert(0, SUITES)
    try:
        from models import tiny as module
    finally:
        sys.path.remove(SUITES)
    return module


def test_llama_is_the_stated_tiny_gqa_config(tiny) -> None:
    cfg = tiny.llama_config()
    assert (cfg.num_hidden_layers, cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads) == (2, 64, 4, 2)
    assert 128 <= cfg.vocab_size <= 256


def test_models_are_seeded_copies(tiny) -> None:
    a, b = tiny.llama("cpu", "float32"), tiny.llama("cpu", "float32")
    assert a is not b and all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters(), strict=False))
    assert next(tiny.llama().parameters()).dtype == torch.float64
    assert all(torch.equal(x, y) for x, y in zip(tiny.cnn().parameters(), tiny.cnn().parameters(), strict=False))


def test_reference_margins_dwarf_fp32_rounding(tiny) -> None:
    """Exact fp32 token equality is fair only if no greedy step is a near-tie."""
    margins = tiny.reference_margins()
    assert len(margins) == tiny.NEW_TOKENS
    # margins are relative to the largest |logit|; the fp32 forward's worst logit error is ~5e-7
    # on that scale (1.9e-6 of the logits' rms), so 1e-4 leaves a factor of 200 (measured min: 5.8e-4)
    assert float(margins.min()) > 1e-4


def test_attention_matters_to_the_logits(tiny) -> None:
    """The model must be able to show a broken attention: zeroing it moves the logits a lot."""
    model = tiny.llama()
    # the class the model really uses: an in-process pytester run elsewhere in this worker can
    # leave a re-imported transformers module behind, whose LlamaAttention is another class
    attention = type(model.model.layers[0].self_attn)
    seq = torch.tensor([tiny.PROMPT + tiny.reference_tokens()])
    with torch.no_grad():
        healthy = model(seq).logits
        original = attention.forward
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(
                attention,
                "forward",
                lambda self, *a, **k: (lambda out: (out[0] * 0, *out[1:]))(original(self, *a, **k)),
            )
            silenced = model(seq).logits
    assert tiny.normwise_error(silenced, healthy) > 0.5


def test_teacher_forcing_with_and_without_cache_agree_in_float64(tiny) -> None:
    model = tiny.llama()
    tokens = tiny.reference_tokens()
    cached = tiny.teacher_forced_logits(model, tokens, use_cache=True)
    full = tiny.teacher_forced_logits(model, tokens, use_cache=False)
    assert cached.shape == (tiny.NEW_TOKENS, tiny.VOCAB)
    assert tiny.normwise_error(cached, full) < 1e-12
    assert tiny.ranks_of(full, tokens) == [0] * tiny.NEW_TOKENS  # greedy: the argmax every step


def test_ranks_of_counts_strictly_better_tokens(tiny) -> None:
    logits = torch.tensor([[0.1, 0.9, 0.5], [3.0, 1.0, 2.0]])
    assert tiny.ranks_of(logits, (1, 1)) == [0, 2]


def test_normwise_error(tiny) -> None:
    ref = torch.tensor([3.0, 4.0])
    assert tiny.normwise_error(ref, ref) == 0.0
    assert tiny.normwise_error(torch.tensor([3.0, 4.5]), ref) == pytest.approx(0.1)


def test_two_device_max_memory_splits_the_decoder_stack(tiny) -> None:
    accelerate = pytest.importorskip("accelerate")
    model = tiny.llama("cpu", "float32")
    placement = accelerate.infer_auto_device_map(
        model, max_memory=tiny.two_device_max_memory(), no_split_module_classes=model._no_split_modules
    )
    assert placement.get("model.layers.0") == 0 and placement.get("model.layers.1") == 1, dict(placement)


def test_rows_carry_the_feature_marker() -> None:
    sys.path.insert(0, SUITES)
    try:
        from models.rows import rows
    finally:
        sys.path.remove(SUITES)
    params = rows("cnn", "autocast", ("float16",))
    assert params[0].id == "float16"
    assert params[0].marks[0].args == ("models/cnn/autocast[float16]",)
