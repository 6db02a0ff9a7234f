"""llama.cpp (accelerated port: its HIP backend serves GGUF models on Radeon/Instinct), through
llama-cpp-python, on a tiny Llama written as GGUF here (f16, Q8_0, Q4_K_M; never downloaded).

Rows (docs/inference.md): the GGUF equals the transformers model it was written from; the GPU
backend's logits equal llama.cpp's own CPU backend's within a derived NMSE, per quantisation; all
layers are offloaded (read from llama.cpp's log), and split over two GPUs where two are present;
prompt-processing and generation tokens/s go into the report's perf records. Where this
llama-cpp-python has no GPU backend the parity rows compare two CPU paths and say so.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import _llama_cpp as L
import numpy as np
import pytest
from _library_support import assert_checks, import_library, require_torch

from pytest_rocm.suite_support import llama_cpp_install_line

torch = require_torch()

pytestmark = [pytest.mark.library("llama_cpp", "accelerated-port"), pytest.mark.timeout(300)]

SHAPE = L.TinyLlamaShape()
#: the parity prompt: under 32 tokens, so a GPU build's reference run (n_gpu_layers=0) never hands
#: its batch to the GPU (llama.cpp offloads host-weight matmuls of 32+ tokens; op_offload=False too)
PROMPT = [int(t) for t in np.random.default_rng(0).integers(len(L.SPECIAL_TOKENS), L.VOCAB_SIZE, 24)]
PERF_PROMPT = [int(t) for t in np.random.default_rng(1).integers(len(L.SPECIAL_TOKENS), L.VOCAB_SIZE, 96)]
GENERATED = 16
N_CTX = SHAPE.max_position_embeddings

#: how llama.cpp's CPU reference runs: one thread, the prompt in one batch, no flash attention
REFERENCE = {"n_gpu_layers": 0, "n_threads": 1, "n_batch": N_CTX, "flash_attn": False, "op_offload": False}
#: the device side on a GPU build: every layer on the GPU, llama.cpp's defaults otherwise
GPU_SIDE = {"n_gpu_layers": -1}
#: the device side on a CPU-only build: another CPU path (threads, micro-batches of 4, flash
#: attention), so the row still compares two computations; it says so in ``compared``
CPU_SIDE = {"n_gpu_layers": 0, "n_threads": 2, "n_batch": 4, "n_ubatch": 4, "flash_attn": True}


def device_tensors(tensors: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The weights the device side loads: the reference's own (one file). Tests replace this to
    perturb the device side only and watch the parity rows fail."""
    return tensors


def _machine(env: Any) -> tuple[str, list[str]]:
    """(``rocm``/``cuda``/``cpu``, gfx targets) of this machine, for the install line: torch's
    view, else the kernel's AMD GPUs (a CPU torch on an AMD machine still wants the HIP build)."""
    if env.backend != "cpu":
        return env.backend, [d.gfx for d in env.devices if d.gfx.startswith("gfx")]
    amd = [g.gfx for g in env.system.gpus if g.gfx]
    return ("rocm", amd) if amd else ("cpu", [])


@pytest.fixture(scope="module")
def llama_cpp(rocm_env: Any) -> ModuleType:
    backend, gfx = _machine(rocm_env)
    return import_library(
        "llama-cpp-python", "llama_cpp", f"build it for this machine: {llama_cpp_install_line(backend, gfx)}"
    )


@pytest.fixture
def llama(llama_cpp: ModuleType, library_info: dict) -> ModuleType:
    """llama_cpp, with what this build can do recorded on the row."""
    library_info["gpu_offload"] = bool(llama_cpp.llama_supports_gpu_offload())
    library_info["system_info"] = llama_cpp.llama_print_system_info().decode(errors="replace").strip(" |")
    return llama_cpp


@dataclass
class Models:
    """The GGUF files of the module: quantisation -> path, for the reference and the device side."""

    reference: dict[str, Path]
    device: dict[str, Path]
    hf_logits: Any


def _write_all(llama_cpp: ModuleType, folder: Path, tensors: dict[str, np.ndarray]) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    files = {q: L.write_gguf(folder / f"tiny-{q}.gguf", SHAPE, tensors, q) for q in ("F16", "Q8_0")}
    with L.captured_stderr():  # llama_model_quantize prints a line per tensor
        files["Q4_K_M"] = L.quantize_with_llama_cpp(llama_cpp, files["F16"], folder / "tiny-Q4_K_M.gguf")
    return files


@pytest.fixture(scope="module")
def models(llama_cpp: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Models:
    transformers = import_library("transformers", "transformers")
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**SHAPE.config_kwargs())).eval()
    with torch.no_grad():
        hf_logits = model(torch.tensor([PROMPT])).logits[0].double().numpy()
    tensors = L.gguf_tensors(SHAPE, {k: v.detach().numpy() for k, v in model.state_dict().items()})
    folder = tmp_path_factory.mktemp("gguf")
    reference = _write_all(llama_cpp, folder / "reference", tensors)
    on_device = device_tensors(tensors)
    device = reference if on_device is tensors else _write_all(llama_cpp, folder / "device", on_device)
    return Models(reference, device, hf_logits)


@dataclass
class Loaded:
    llm: Any
    log: str


@pytest.fixture
def load(llama: ModuleType) -> Iterator[Callable[..., Loaded]]:
    """``load(path, **settings)`` -> the model and llama.cpp's load log; freed after the test."""
    opened: list[Any] = []

    def _load(path: Path, **settings: Any) -> Loaded:
        with L.captured_stderr() as log:
            llm = llama.Llama(str(path), n_ctx=N_CTX, seed=0, verbose=True, **settings)
        opened.append(llm)
        return Loaded(llm, log.text)

    yield _load
    for llm in opened:
        with L.captured_stderr():
            llm.close()


def _logits(loaded: Loaded, tokens: list[int]) -> np.ndarray:
    # not captured: evaluating logs nothing, and a kernel that aborts must leave its message
    loaded.llm.reset()
    loaded.llm.eval(tokens)
    return np.array(loaded.llm.scores[: len(tokens)], dtype=np.float64)


def _device_side(llama: ModuleType, library_info: dict) -> dict[str, Any]:
    """The device side's settings for a parity row, and what is compared recorded on the row."""
    gpu = bool(llama.llama_supports_gpu_offload())
    library_info["compared"] = (
        "GPU backend (all layers offloaded) vs llama.cpp's CPU backend"
        if gpu
        else "no GPU backend in this build: CPU with 2 threads, micro-batches of 4, flash attention"
        " vs CPU with 1 thread, one batch, no flash attention"
    )
    return {"logits_all": True, **(GPU_SIDE if gpu else CPU_SIDE)}


def _served(llama: ModuleType, library_info: dict) -> dict[str, Any]:
    """How a perf row loads the model: as llama-server would, every layer on the GPU where there is
    one, llama.cpp's own defaults (threads, batch sizes, flash attention) otherwise."""
    return {"n_gpu_layers": -1 if llama.llama_supports_gpu_offload() else 0}


def test_gguf_matches_transformers(llama: ModuleType, models: Models, load: Any, library_info: dict) -> None:
    """The F16 file is the transformers model it was written from (names, rope layout, norms)."""
    got = _logits(load(models.reference["F16"], logits_all=True, **REFERENCE), PROMPT)
    check = L.logits_check("llama.cpp CPU F16 vs transformers float32", models.hf_logits, got, L.WRITER_NMSE_BOUND)
    library_info["nmse"] = check.measured
    assert_checks([check], "tiny Llama written as GGUF")


@pytest.mark.parametrize("quant", L.QUANTS)
def test_parity(llama: ModuleType, models: Models, load: Any, library_info: dict, quant: str) -> None:
    reference = _logits(load(models.reference[quant], logits_all=True, **REFERENCE), PROMPT)
    device = load(models.device[quant], **_device_side(llama, library_info))
    library_info["backend"] = L.backend_of(device.log)
    check = L.logits_check(quant, reference, _logits(device, PROMPT), L.nmse_tolerance(SHAPE.num_hidden_layers))
    library_info.update(nmse=check.measured, tolerance=check.bound, gpu_buffers=L.gpu_buffers(device.log))
    assert_checks([check], f"llama.cpp {library_info['compared']}")


def _require_gpu_backend(llama: ModuleType) -> None:
    if not llama.llama_supports_gpu_offload():
        pytest.skip(
            "needs llama.cpp's GPU backend: this llama-cpp-python is a CPU build (llama_supports_gpu_offload() is False)"
        )


def test_full_offload(llama: ModuleType, models: Models, load: Any, library_info: dict) -> None:
    _require_gpu_backend(llama)
    loaded = load(models.device["Q4_K_M"], **GPU_SIDE)
    library_info.update(offloaded=L.offloaded_layers(loaded.log), buffers=L.model_buffers(loaded.log))
    assert_checks(L.offload_checks(loaded.log, SHAPE.num_hidden_layers), "llama.cpp n_gpu_layers=-1")


def _gpu_count(env: Any) -> int:
    return len(env.devices) or sum(1 for g in env.system.gpus if g.gfx)


def test_two_gpu_split(llama: ModuleType, models: Models, load: Any, library_info: dict, rocm_env: Any) -> None:
    _require_gpu_backend(llama)
    if _gpu_count(rocm_env) < 2:
        pytest.skip(f"needs two GPUs for tensor_split=[1, 1]: this machine has {_gpu_count(rocm_env)}")
    reference = _logits(load(models.reference["Q4_K_M"], logits_all=True, **REFERENCE), PROMPT)
    split = load(
        models.device["Q4_K_M"],
        logits_all=True,
        n_gpu_layers=-1,
        split_mode=llama.LLAMA_SPLIT_MODE_LAYER,
        tensor_split=[1.0, 1.0],
    )
    parity = L.logits_check("Q4_K_M", reference, _logits(split, PROMPT), L.nmse_tolerance(SHAPE.num_hidden_layers))
    library_info.update(nmse=parity.measured, buffers=L.model_buffers(split.log))
    checks = [*L.offload_checks(split.log, SHAPE.num_hidden_layers, gpus_wanted=2), parity]
    assert_checks(checks, "llama.cpp split over two GPUs (-ts 1,1)")


def _record_perf(perf: Any, fn: Callable[[], Any], tokens: int, name: str, library_info: dict, loaded: Loaded) -> None:
    library_info["backend"] = L.backend_of(loaded.log)
    facts = {"llama_cpp": library_info.get("version"), "gpu_buffers": L.gpu_buffers(loaded.log)}
    # llama.cpp returns when the tokens are evaluated (the logits are read back), so the
    # fixture's host clock (device="cpu") times the GPU's work too
    record = perf(fn, work={"tokens": tokens}, name=name, device="cpu", backend=facts)
    # the record is the one already on the test: say what ran, not the host clock's device
    record["device"] = f"llama.cpp {library_info['backend']}"


@pytest.mark.parametrize("quant", L.QUANTS)
def test_prompt_speed(llama: ModuleType, models: Models, load: Any, library_info: dict, perf: Any, quant: str) -> None:
    loaded = load(models.device[quant], **_served(llama, library_info))

    def prompt() -> None:
        loaded.llm.n_tokens = 0  # eval() drops the KV cells past n_tokens: the prompt again
        loaded.llm.eval(PERF_PROMPT)

    _record_perf(perf, prompt, len(PERF_PROMPT), f"pp{len(PERF_PROMPT)} {quant}", library_info, loaded)


@pytest.mark.parametrize("quant", L.QUANTS)
def test_generation_speed(
    llama: ModuleType, models: Models, load: Any, library_info: dict, perf: Any, quant: str
) -> None:
    loaded = load(models.device[quant], **_served(llama, library_info))
    loaded.llm.eval(PROMPT[:8])
    continuation = PERF_PROMPT[:GENERATED]

    def generate() -> None:
        loaded.llm.n_tokens = 8  # back to the end of the prompt; then one token per decode, as served
        for token in continuation:
            loaded.llm.eval([token])

    _record_perf(perf, generate, GENERATED, f"tg{GENERATED} {quant}", library_info, loaded)
