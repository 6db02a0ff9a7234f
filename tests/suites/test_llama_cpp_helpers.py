"""The llama.cpp row's pure parts (suites/libraries/_llama_cpp.py): the GGUF writer reads back as
written (and quantises where it says), the NMSE metric and its tolerance, llama.cpp's load log
(real recorded logs, tests/data/llama_cpp). The gguf package is in the suites
extra, so these run on CI too, where llama-cpp-python is absent."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from suite_runs import load_suite_module

pytest.importorskip("gguf")

SUITE = Path(__file__).resolve().parents[2] / "suites" / "libraries"
LOGS = Path(__file__).resolve().parents[1] / "data" / "llama_cpp"


def _load(name: str) -> ModuleType:
    return load_suite_module(SUITE, name)


L = _load("_llama_cpp")
SHAPE = L.TinyLlamaShape()


@pytest.fixture
def suite_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The judgements build ``_library_support.ErrorCheck``: the suite folder on sys.path, as the
    suite's conftest puts it."""
    monkeypatch.syspath_prepend(str(SUITE))


def random_weights(seed: int = 0) -> dict[str, np.ndarray]:
    """A Hugging Face Llama state dict of SHAPE (numpy), as LlamaForCausalLM initialises it."""
    g = np.random.default_rng(seed)
    h, f, kv = (
        SHAPE.hidden_size,
        SHAPE.intermediate_size,
        SHAPE.num_key_value_heads * (SHAPE.hidden_size // SHAPE.num_attention_heads),
    )

    def normal(*shape: int) -> np.ndarray:
        return (0.02 * g.standard_normal(shape)).astype(np.float32)

    weights = {"model.embed_tokens.weight": normal(SHAPE.vocab_size, h), "model.norm.weight": np.ones(h, np.float32)}
    for i in range(SHAPE.num_hidden_layers):
        p = f"model.layers.{i}."
        weights |= {
            p + "self_attn.q_proj.weight": normal(h, h),
            p + "self_attn.k_proj.weight": normal(kv, h),
            p + "self_attn.v_proj.weight": normal(kv, h),
            p + "self_attn.o_proj.weight": normal(h, h),
            p + "mlp.gate_proj.weight": normal(f, h),
            p + "mlp.up_proj.weight": normal(f, h),
            p + "mlp.down_proj.weight": normal(h, f),
            p + "input_layernorm.weight": np.ones(h, np.float32),
            p + "post_attention_layernorm.weight": np.ones(h, np.float32),
        }
    weights["lm_head.weight"] = normal(SHAPE.vocab_size, h)
    return weights


def test_tensor_names_are_llama_cpps_and_q_k_are_permuted_for_rope() -> None:
    weights = random_weights()
    tensors = L.gguf_tensors(SHAPE, weights)
    expected = {"token_embd.weight", "output_norm.weight", "output.weight"}
    for i in range(SHAPE.num_hidden_layers):
        names = ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down", "attn_norm", "ffn_norm")
        expected |= {f"blk.{i}.{n}.weight" for n in names}
    assert set(tensors) == expected
    assert np.array_equal(tensors["blk.0.attn_v.weight"], weights["model.layers.0.self_attn.v_proj.weight"])
    q = weights["model.layers.0.self_attn.q_proj.weight"]
    assert not np.array_equal(tensors["blk.0.attn_q.weight"], q)
    # within each 64-row head, rotate-half pairs (r, r + 32) become neighbours (2r, 2r + 1)
    assert np.array_equal(tensors["blk.0.attn_q.weight"][[0, 1, 2]], q[[0, 32, 1]])
    assert np.array_equal(
        tensors["blk.0.attn_k.weight"][[64, 65]], weights["model.layers.0.self_attn.k_proj.weight"][[64, 96]]
    )


def test_rope_permute_interleaves_the_two_halves_of_each_head() -> None:
    rows = np.arange(16, dtype=np.float32)[:, None]
    assert L.rope_permute(rows, 2)[:, 0].tolist() == [0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15]


def q8_0_predicted_nmse(data: np.ndarray) -> float:
    """Q8_0 rounds each block of 32 to steps of absmax/127: uniform error of variance step**2/12."""
    blocks = data.reshape(-1, 32).astype(np.float64)
    step = np.abs(blocks).max(axis=1) / 127
    return float(np.sum(32 * step**2 / 12) / np.sum(blocks**2))


@pytest.mark.parametrize("quant", ["F16", "Q8_0"])
def test_gguf_reads_back_as_written(tmp_path: Path, quant: str) -> None:
    tensors = L.gguf_tensors(SHAPE, random_weights())
    meta, arrays = L.read_gguf(L.write_gguf(tmp_path / f"m-{quant}.gguf", SHAPE, tensors, quant))
    assert meta["general.architecture"] == "llama"
    assert meta["llama.block_count"] == SHAPE.num_hidden_layers
    assert meta["llama.attention.head_count_kv"] == SHAPE.num_key_value_heads
    assert meta["llama.embedding_length"] == SHAPE.hidden_size
    assert meta["general.file_type"] == L.FILE_TYPES[quant]
    assert meta["tokenizer.ggml.model"] == "llama"
    assert set(arrays) == set(tensors)
    for name, original in tensors.items():
        assert arrays[name].shape == original.shape, name
        measured = L.nmse(original, arrays[name])
        if original.ndim == 1:
            assert measured == 0.0, f"{name}: norms are stored in f32, exactly"
        elif quant == "F16":
            # round to nearest f16: relative error at most 2**-11 per value
            assert 0 < measured <= 2.0**-22, name
        else:
            predicted = q8_0_predicted_nmse(original)
            # quantised for real (not f16 passed through), by the error Q8_0's rounding predicts
            assert 0.7 * predicted <= measured <= 1.3 * predicted, f"{name}: {measured:.3g} vs {predicted:.3g}"


def test_write_gguf_refuses_what_only_llama_cpp_can_quantise(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="F16 or Q8_0, not 'Q4_K_M'"):
        L.write_gguf(tmp_path / "m.gguf", SHAPE, {}, "Q4_K_M")


def test_nmse_is_the_relative_squared_error_and_inf_for_garbage() -> None:
    x = np.random.default_rng(0).standard_normal((4, 259))
    assert L.nmse(x, x) == 0.0
    assert L.nmse(x, 1.1 * x) == pytest.approx(0.01)
    assert L.nmse(x, x[:, :-1]) == float("inf")
    broken = x.copy()
    broken[0, 0] = np.nan
    assert L.nmse(x, broken) == float("inf")


def test_tolerance_is_llama_cpps_per_product_allowance_times_the_stages() -> None:
    assert L.PER_PRODUCT_NMSE == 5e-4
    assert L.nmse_tolerance(2) == pytest.approx(4.5e-3)
    assert L.nmse_tolerance(32) == pytest.approx(129 * 5e-4)


@pytest.mark.usefixtures("suite_path")
def test_logits_check_passes_rounding_noise_and_fails_a_corrupted_block() -> None:
    g = np.random.default_rng(1)
    reference = g.standard_normal((24, 259))
    tolerance = L.nmse_tolerance(2)
    # what an honest backend differs by: measured up to 2.4e-4 between CPU paths (Q4_K_M)
    honest = reference + np.sqrt(2.4e-4) * g.standard_normal(reference.shape)
    assert L.logits_check("honest", reference, honest, tolerance).ok
    corrupted = reference.copy()
    corrupted[:, :32] = 0.0  # one 32-wide block of the output head read as zeros
    check = L.logits_check("corrupted", reference, corrupted, tolerance)
    assert not check.ok and "EXCEEDS" in check.line()


def _log(name: str) -> str:
    text = (LOGS / name).read_text()
    assert text.startswith("# SOURCE: https://github.com/"), f"{name} must name its public source"
    return text.split("\n", 1)[1]


@pytest.mark.usefixtures("suite_path")
@pytest.mark.parametrize(
    ("log", "layers", "gpus", "backend"),
    [
        ("rocm_four_gpus_EXCERPT.txt", (63, 63), ["ROCm0", "ROCm1", "ROCm2", "ROCm3"], "rocm"),
        ("rocm_one_gpu_EXCERPT.txt", (25, 25), ["ROCm0"], "rocm"),  # ROCm_Host is host memory
        ("cuda_two_gpus_EXCERPT.txt", (81, 81), ["CUDA0", "CUDA2"], "cuda"),
        ("rocm_partial_offload_EXCERPT.txt", (1, 43), [], "cpu"),  # 2023: "VRAM used", no buffer lines
    ],
)
def test_offload_is_read_from_real_llama_cpp_logs(
    log: str, layers: tuple[int, int], gpus: list[str], backend: str
) -> None:
    text = _log(log)
    assert L.offloaded_layers(text) == layers
    assert L.gpu_buffers(text) == gpus
    assert L.backend_of(text) == backend
    full = L.offload_checks(text, layers[1] - 1)
    assert all(c.ok for c in full) == (layers[0] == layers[1] and bool(gpus))
    split = L.offload_checks(text, layers[1] - 1, gpus_wanted=2)
    assert all(c.ok for c in split) == (layers[0] == layers[1] and len(gpus) >= 2)


@pytest.mark.usefixtures("suite_path")
def test_a_log_without_the_offload_line_is_not_full_offload() -> None:
    checks = L.offload_checks("load_tensors:   CPU_Mapped model buffer size =     2.51 MiB\n", 2)
    assert L.offloaded_layers("") is None
    assert [c.ok for c in checks] == [False, False]
    assert "offloaded 0/3" in checks[0].what and "weights on none" in checks[1].what


def test_model_buffers_add_up_per_device() -> None:
    text = _log("rocm_four_gpus_EXCERPT.txt")
    buffers = L.model_buffers(text)
    assert buffers["CPU"] == pytest.approx(251.85)
    assert buffers["ROCm3"] == pytest.approx(23747.25)
