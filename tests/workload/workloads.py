"""Realistic workloads of kinds the docs/examples scripts are not, built from tiny configs (nothing
downloaded): each is a function run under ``pytest_rocm.capture()`` by ``conftest.py``.

- ``lora``: a peft LoRA step on a 2-layer Qwen2 with gradient checkpointing and a fused AdamW;
- ``generate``: ``generate()`` with a KV cache on a 2-layer GPT-NeoX (an inference decode loop);
- ``autocast``: a 2-layer BERT forward and backward under ``torch.autocast("cpu", bfloat16)``;
- ``vision``: a CLIP vision tower and a conv stem in ``channels_last`` under bf16 autocast.
"""

from __future__ import annotations

from collections.abc import Callable

import torch


def lora() -> None:
    from peft import LoraConfig, get_peft_model
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=128,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=32,
    )
    model = Qwen2ForCausalLM(config)
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.enable_input_require_grads()
    model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"]))
    model.train()
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3, fused=True)
    tokens = torch.randint(0, config.vocab_size, (2, 12))
    loss = model(input_ids=tokens, labels=tokens).loss
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()


def generate() -> None:
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    torch.manual_seed(0)
    config = GPTNeoXConfig(
        vocab_size=128,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        max_position_embeddings=64,
    )
    model = GPTNeoXForCausalLM(config).eval()
    prompt = torch.randint(0, config.vocab_size, (1, 6))
    with torch.inference_mode():
        model.generate(prompt, max_new_tokens=4, do_sample=False, use_cache=True, pad_token_id=0)


def autocast() -> None:
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=128,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        max_position_embeddings=32,
        num_labels=3,
    )
    model = BertForSequenceClassification(config)
    tokens = torch.randint(0, config.vocab_size, (2, 10))
    labels = torch.tensor([0, 2])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = model(input_ids=tokens, labels=labels).loss
    loss.backward()


def vision() -> None:
    from transformers import CLIPVisionConfig, CLIPVisionModel

    torch.manual_seed(0)
    config = CLIPVisionConfig(
        hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4, image_size=16, patch_size=4
    )
    model = CLIPVisionModel(config).to(memory_format=torch.channels_last)
    stem = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.SiLU(), torch.nn.Conv2d(8, 3, 1)
    ).to(memory_format=torch.channels_last)
    pixels = torch.randn(2, 3, 16, 16).to(memory_format=torch.channels_last)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        features = stem(pixels)
        out = model(pixel_values=features).pooler_output
    out.float().sum().backward()


WORKLOADS: dict[str, Callable[[], None]] = {"lora": lora, "generate": generate, "autocast": autocast, "vision": vision}
