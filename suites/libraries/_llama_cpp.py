"""llama.cpp's row, the pure parts: a tiny Llama written as GGUF (the ``gguf`` package), the
parity metric and its tolerance, what llama.cpp's load log says about offload. (The install line
per machine is ``pytest_rocm.setup.llama``: the noxfile builds with it too.)

Nothing here imports llama_cpp or torch: the row (``test_llama_cpp.py``) passes in what it loaded
(the judgements return ``_library_support.ErrorCheck``), so tests/suites/test_llama_cpp_helpers.py
can write GGUFs, break logits and read recorded logs without llama-cpp-python (CI). See
docs/inference.md.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

#: the quantisations the row runs: f16 as written, Q8_0 quantised by the gguf package here,
#: Q4_K_M by llama.cpp's own quantiser from the f16 file (the gguf package cannot write K-quants)
QUANTS = ("F16", "Q8_0", "Q4_K_M")

#: llama_ftype values (llama.h: LLAMA_FTYPE_MOSTLY_F16 = 1, _Q8_0 = 7, _Q4_K_M = 15)
FILE_TYPES = {"F16": 1, "Q8_0": 7, "Q4_K_M": 15}

#: llama.cpp's own backend test (tests/test-backend-ops.cpp, ``test_mul_mat::max_nmse_err``)
#: accepts a matrix product on another backend within this NMSE of the CPU backend's result
PER_PRODUCT_NMSE = 5e-4

#: transformers' float32 logits against llama.cpp's CPU logits of the F16 file written from the
#: same weights: f16 storage rounds each weight by a relative rms of 2**-11/sqrt(3), an NMSE of
#: 8e-8 per matrix, ~1e-6 over the model's products and f16 KV cache (measured 4.5e-7 to 6.0e-7
#: over 3 seeds); 10x that. A writer bug (q/k rows not permuted for rope, tensors swapped) is O(1).
WRITER_NMSE_BOUND = 1e-5


def nmse_tolerance(n_layers: int) -> float:
    """The NMSE the device's logits may differ from llama.cpp's CPU logits by (docs/inference.md,
    "Parity"): a token's logits pass through 4 weight-matrix stages per layer (q/k/v, attention
    output, gate/up, down) and the output head; each may differ by ``PER_PRODUCT_NMSE`` on an
    honest backend, and the errors add: (4 * n_layers + 1) * 5e-4, 4.5e-3 for the tiny model.
    Measured between honest CPU paths: at most 2.4e-4 (Q4_K_M, flash attention on)."""
    return (4 * n_layers + 1) * PER_PRODUCT_NMSE


#: the byte-level SentencePiece vocabulary the tiny model uses: <unk>, <s>, </s>, <0x00>..<0xFF>
#: (llama.cpp tokenises any text with it through byte fallback; the row feeds token ids anyway)
SPECIAL_TOKENS = ("<unk>", "<s>", "</s>")
VOCAB_SIZE = len(SPECIAL_TOKENS) + 256


@dataclass(frozen=True)
class TinyLlamaShape:
    """The tiny model's shape. 256-wide rows: K-quants (Q4_K, Q6_K) pack 256 values per block,
    so every matrix row must be a multiple of 256 for Q4_K_M to quantise every tensor."""

    hidden_size: int = 256
    intermediate_size: int = 512
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    max_position_embeddings: int = 128
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    vocab_size: int = VOCAB_SIZE

    def config_kwargs(self) -> dict[str, Any]:
        """The ``transformers.LlamaConfig`` arguments of this shape."""
        return {
            "hidden_size": self.hidden_size,
            "intermediate_size": self.intermediate_size,
            "num_hidden_layers": self.num_hidden_layers,
            "num_attention_heads": self.num_attention_heads,
            "num_key_value_heads": self.num_key_value_heads,
            "max_position_embeddings": self.max_position_embeddings,
            "rms_norm_eps": self.rms_norm_eps,
            "rope_theta": self.rope_theta,
            "vocab_size": self.vocab_size,
            "bos_token_id": 1,
            "eos_token_id": 2,
            "tie_word_embeddings": False,
        }


def rope_permute(weight: np.ndarray, n_head: int) -> np.ndarray:
    """Reorder q/k projection rows from Hugging Face's rotate-half layout to GGUF's interleaved
    one (what convert_hf_to_gguf.py does for Llama): within each head the two halves of the rotary
    pairs become adjacent rows."""
    rows = weight.shape[0]
    return weight.reshape(n_head, 2, rows // n_head // 2, *weight.shape[1:]).swapaxes(1, 2).reshape(weight.shape)


def _vocabulary() -> tuple[list[str], list[float], list[int]]:
    import gguf

    tokens = [*SPECIAL_TOKENS, *(f"<0x{b:02X}>" for b in range(256))]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL]
    types += [gguf.TokenType.BYTE] * 256
    return tokens, [0.0] * len(tokens), [int(t) for t in types]


def gguf_tensors(shape: TinyLlamaShape, weights: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """GGUF tensor name -> float32 array, from a Hugging Face Llama state dict (numpy arrays)."""
    import gguf

    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, shape.num_hidden_layers)
    out: dict[str, np.ndarray] = {}
    for hf_name, array in weights.items():
        if hf_name.endswith("rotary_emb.inv_freq"):
            continue  # recomputed by llama.cpp from rope_theta
        name = names.get_name(hf_name, try_suffixes=(".weight", ".bias"))
        if name is None:
            raise ValueError(f"no GGUF name for the Llama tensor {hf_name!r}")
        data = np.asarray(array, dtype=np.float32)
        if hf_name.endswith("q_proj.weight"):
            data = rope_permute(data, shape.num_attention_heads)
        elif hf_name.endswith("k_proj.weight"):
            data = rope_permute(data, shape.num_key_value_heads)
        out[name] = data  # get_name keeps the suffix it matched
    return out


def write_gguf(path: Path, shape: TinyLlamaShape, tensors: Mapping[str, np.ndarray], quant: str = "F16") -> Path:
    """Write ``tensors`` (GGUF names, float32) as a llama GGUF: 1-D tensors (norms) in f32, the
    matrices in ``quant`` (``F16`` or ``Q8_0``: the ones the gguf package can quantise)."""
    import gguf

    if quant not in ("F16", "Q8_0"):
        raise ValueError(f"write_gguf writes F16 or Q8_0, not {quant!r} (Q4_K_M: quantize_with_llama_cpp)")
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("pytest-rocm tiny llama")
    writer.add_context_length(shape.max_position_embeddings)
    writer.add_embedding_length(shape.hidden_size)
    writer.add_block_count(shape.num_hidden_layers)
    writer.add_feed_forward_length(shape.intermediate_size)
    writer.add_head_count(shape.num_attention_heads)
    writer.add_head_count_kv(shape.num_key_value_heads)
    writer.add_rope_dimension_count(shape.hidden_size // shape.num_attention_heads)
    writer.add_rope_freq_base(shape.rope_theta)
    writer.add_layer_norm_rms_eps(shape.rms_norm_eps)
    writer.add_vocab_size(shape.vocab_size)
    writer.add_file_type(FILE_TYPES[quant])
    tokens, scores, types = _vocabulary()
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_unk_token_id(0)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    for name, data in tensors.items():
        if data.ndim == 1:
            writer.add_tensor(name, data.astype(np.float32))
        elif quant == "F16":
            writer.add_tensor(name, data.astype(np.float16))
        else:
            kind = gguf.GGMLQuantizationType.Q8_0
            writer.add_tensor(name, gguf.quants.quantize(data, kind), raw_dtype=kind)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def read_gguf(path: Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """(scalar metadata, tensor name -> dequantised float32 array in numpy's row-major shape)."""
    import gguf

    reader = gguf.GGUFReader(str(path))
    meta: dict[str, Any] = {}
    for field in reader.fields.values():
        if len(field.types) == 1 and field.types[0] != gguf.GGUFValueType.ARRAY:
            meta[field.name] = field.contents()
    arrays = {
        t.name: gguf.quants.dequantize(t.data, t.tensor_type).reshape(tuple(int(d) for d in reversed(t.shape)))
        for t in reader.tensors
    }
    return meta, arrays


def quantize_with_llama_cpp(llama_cpp: Any, source: Path, target: Path, quant: str = "Q4_K_M") -> Path:
    """``target`` = llama.cpp's own quantisation of ``source`` (``llama_model_quantize``)."""
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = FILE_TYPES[quant]
    status = llama_cpp.llama_model_quantize(str(source).encode(), str(target).encode(), params)
    if status != 0 or not target.exists():
        raise RuntimeError(f"llama_model_quantize({source.name} -> {quant}) returned {status}")
    return target


# -- judging ---------------------------------------------------------------------------------------
def nmse(reference: np.ndarray, candidate: np.ndarray) -> float:
    """Normalised mean squared error ||candidate - reference||^2 / ||reference||^2 (float64), the
    metric llama.cpp's test-backend-ops compares backends with; inf when the shapes differ or the
    candidate is not finite."""
    ref = np.asarray(reference, dtype=np.float64)
    got = np.asarray(candidate, dtype=np.float64)
    if ref.shape != got.shape or not np.isfinite(got).all():
        return float("inf")
    denominator = float(np.sum(ref * ref))
    return float(np.sum((got - ref) ** 2)) / max(denominator, 1e-300)


def logits_check(what: str, reference: np.ndarray, candidate: np.ndarray, bound: float) -> Any:
    """``ErrorCheck`` of the candidate's logits NMSE against the reference's."""
    from _library_support import ErrorCheck

    return ErrorCheck(f"{what} logits NMSE", nmse(reference, candidate), bound)


_OFFLOADED = re.compile(r"offloaded (\d+)/(\d+) layers to GPU")
_BUFFER = re.compile(r"(\S+) model buffer size =\s*([0-9.]+) MiB")


def offloaded_layers(log: str) -> tuple[int, int] | None:
    """(offloaded, offloadable) from llama.cpp's ``offloaded N/M layers to GPU`` line (the last
    one, if the log holds several loads); None when the log has none."""
    found = _OFFLOADED.findall(log)
    return (int(found[-1][0]), int(found[-1][1])) if found else None


def model_buffers(log: str) -> dict[str, float]:
    """Buffer name (``ROCm0``, ``CUDA1``, ``CPU_Mapped``, ``ROCm_Host``) -> MiB of model weights."""
    buffers: dict[str, float] = {}
    for name, size in _BUFFER.findall(log):
        buffers[name] = buffers.get(name, 0.0) + float(size)
    return buffers


def gpu_buffers(log: str) -> list[str]:
    """The GPU devices holding model weights (``ROCm0``...): not the host's ``CPU*``/``*_Host`` buffers."""
    return sorted(n for n in model_buffers(log) if not n.startswith("CPU") and not n.endswith("_Host"))


def offload_checks(log: str, n_layers: int, gpus_wanted: int = 1) -> list[Any]:
    """Full offload, read from llama.cpp's load log (never assumed): every layer reported on the
    GPU (``offloaded N/N``; llama.cpp counts the output head as a layer, N = n_layers + 1; no line
    at all counts as none offloaded) and model weights on ``gpus_wanted`` GPUs."""
    from _library_support import ErrorCheck

    layers = offloaded_layers(log)
    offloaded, offloadable = layers if layers is not None else (0, n_layers + 1)
    on_gpu = gpu_buffers(log)
    return [
        ErrorCheck(f"layers left on the CPU (offloaded {offloaded}/{offloadable})", offloadable - offloaded, 0),
        ErrorCheck(
            f"GPUs without model weights (weights on {', '.join(on_gpu) or 'none'})", gpus_wanted - len(on_gpu), 0
        ),
    ]


def backend_of(log: str) -> str:
    """The ggml backend holding the weights, lower case: ``rocm``, ``cuda``, ``vulkan``... from the
    GPU buffers' names (``ROCm0``), ``cpu`` when none is on a GPU."""
    names = {re.sub(r"\d+$", "", n).lower() for n in gpu_buffers(log)}
    return ",".join(sorted(names)) or "cpu"


class CapturedLog:
    """What llama.cpp wrote to stderr inside :func:`captured_stderr`, once it has ended."""

    text: str = ""


@contextlib.contextmanager
def captured_stderr() -> Iterator[CapturedLog]:
    """Capture llama.cpp's log: its C code writes to file descriptor 2, llama-cpp-python's log
    callback to ``sys.stderr``; both are redirected (and restored) for the block. Only around
    loading, quantising and freeing, which log: a process that aborts inside the block loses what
    it wrote there, so evaluation (where a GPU kernel would abort) is never captured."""
    captured = CapturedLog()
    with tempfile.TemporaryFile() as sink, contextlib.redirect_stderr(io.StringIO()) as python_side:
        saved = os.dup(2)
        os.dup2(sink.fileno(), 2)
        try:
            yield captured
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            captured.text = sink.read().decode(errors="replace") + python_side.getvalue()
