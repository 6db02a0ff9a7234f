"""The llama.cpp row judged from outside (suites/libraries/test_llama_cpp.py run in-process from
its real location): without llama-cpp-python every row is ``not-installed`` with this machine's
install line (what CI sees); with it, the row builds the tiny GGUF and passes on the CPU, and the
same weights perturbed on the device side only fail the parity rows while the reference stays right.

The GPU-only rows (full offload, two-GPU split) cannot run on a CPU machine, so their glue runs
against a fake llama_cpp: a module that "loads" by writing a real recorded llama.cpp log
(tests/data/llama_cpp) to file descriptor 2, on a recorded environment (``--rocm-env``).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("gguf")
# imported here, before any in-process run: pytester drops the modules a run imported, and a second
# import of torch._dynamo (which building the transformers model pulls in) in one process aborts it
import torch._dynamo  # noqa: F401
import transformers  # noqa: F401  (kept loaded across the runs: each would import it again)
from suite_runs import run_suite

ROW = Path(__file__).resolve().parents[2] / "suites" / "libraries" / "test_llama_cpp.py"
DATA = Path(__file__).resolve().parents[1] / "data"
PREFIX = "libraries/accelerated-port/llama_cpp/"
HAVE_LLAMA_CPP = importlib.util.find_spec("llama_cpp") is not None
if HAVE_LLAMA_CPP:
    # likewise: a second import would load llama.cpp's native library and its backends again
    import llama_cpp  # noqa: F401

needs_llama_cpp = pytest.mark.skipif(
    not HAVE_LLAMA_CPP, reason="llama-cpp-python is not installed here (CI: not built)"
)

#: a plugin's hooks that put ``{replacement}`` in ``sys.modules["llama_cpp"]`` for the inner run
#: (None: ``import llama_cpp`` raises ModuleNotFoundError) and put the outer run's back after it
SWAP_LLAMA_CPP = """
_saved = {{}}


def pytest_configure(config):
    _saved["llama_cpp"] = sys.modules.get("llama_cpp")
    sys.modules["llama_cpp"] = {replacement}


def pytest_unconfigure(config):
    if _saved["llama_cpp"] is None:
        sys.modules.pop("llama_cpp", None)
    else:
        sys.modules["llama_cpp"] = _saved["llama_cpp"]
"""

#: llama-cpp-python absent for the inner run
HIDE_LLAMA_CPP = "import sys\n" + SWAP_LLAMA_CPP.format(replacement="None")

#: the device side loads blk.0's matrices with Gaussian noise of 10% of each one's RMS (a kernel
#: reading one layer's weights wrong); the reference side keeps the true weights. Measured NMSE
#: 0.019 to 0.081 over 5 seeds and the three quantisations: 4x the tolerance or more
PERTURB_DEVICE = """
import numpy as np


def _perturbed(tensors):
    g = np.random.default_rng(7)
    out = dict(tensors)
    for name, data in tensors.items():
        if name.startswith("blk.0.") and data.ndim == 2:
            noise = 0.1 * np.sqrt(np.mean(data**2)) * g.standard_normal(data.shape)
            out[name] = (data + noise).astype(np.float32)
    return out


def pytest_collection_modifyitems(items):
    for item in items:
        module = getattr(item, "module", None)
        if module is not None and hasattr(module, "device_tensors"):
            module.device_tensors = _perturbed
"""


def _rows(rows: dict[str, dict]) -> dict[str, dict]:
    return {k.removeprefix(PREFIX): v for k, v in rows.items() if k.startswith(PREFIX)}


def test_without_llama_cpp_python_every_row_is_not_installed_with_the_install_line(pytester: pytest.Pytester) -> None:
    # on a recorded RX 7900 XTX machine: the HIP build for its gfx
    env = DATA / "envs" / "rx7900xtx_rocm6.json"
    rows = _rows(run_suite(pytester, ROW, f"--rocm-env={env}", plugin=HIDE_LLAMA_CPP))
    assert len(rows) == 12, sorted(rows)
    line = 'build it for this machine: CMAKE_ARGS="-DGGML_HIP=on -DGPU_TARGETS=gfx1100" pip install llama-cpp-python'
    for name, row in rows.items():
        assert row["outcome"] == "not-installed", (name, row["reason"])
        assert row["reason"].startswith("not installed: llama-cpp-python (`import llama_cpp` found no module")
        assert line in row["reason"]


@needs_llama_cpp
def test_the_row_builds_the_tiny_gguf_and_passes_on_the_cpu(pytester: pytest.Pytester) -> None:
    rows = _rows(run_suite(pytester, ROW))
    outcomes = {name: row["outcome"] for name, row in rows.items()}
    assert outcomes.pop("full_offload") == outcomes.pop("two_gpu_split") == "skipped"
    assert set(outcomes.values()) == {"passed"}, outcomes
    assert rows["gguf_matches_transformers"]["info"]["nmse"] < 1e-5
    for quant in ("F16", "Q8_0", "Q4_K_M"):
        parity = rows[f"parity[{quant}]"]["info"]
        assert parity["compared"].startswith("no GPU backend in this build") and parity["backend"] == "cpu"
        assert parity["nmse"] <= parity["tolerance"] == pytest.approx(4.5e-3)
        for kind in ("prompt_speed", "generation_speed"):
            perf = rows[f"{kind}[{quant}]"]["perf"]
            assert perf["unit"] == "tokens/s" and perf["throughput"] > 0, perf
            assert perf["device"] == "llama.cpp cpu"


@needs_llama_cpp
def test_weights_perturbed_on_the_device_side_only_fail_the_parity_rows(pytester: pytest.Pytester) -> None:
    rows = _rows(run_suite(pytester, ROW, "-k", "parity or transformers", plugin=PERTURB_DEVICE))
    assert rows["gguf_matches_transformers"]["outcome"] == "passed"  # the reference is untouched
    for quant in ("F16", "Q8_0", "Q4_K_M"):
        row = rows[f"parity[{quant}]"]
        assert row["outcome"] == "failed", (quant, row["reason"])
        assert f"{quant} logits NMSE" in row["reason"] and "EXCEEDS" in row["reason"]
        assert row["info"]["nmse"] > 4 * row["info"]["tolerance"]


#: a llama_cpp with a GPU backend whose load log is the recorded file FAKE_LLAMA_LOG names, and whose
#: logits are a fixed function of the tokens (the same on both sides: parity holds)
FAKE_LLAMA_CPP = """
import os
import sys
import types

import numpy as np

fake = types.ModuleType("llama_cpp")
fake.__version__ = "0.0.0+fake"
fake.LLAMA_SPLIT_MODE_LAYER = 1
fake.llama_supports_gpu_offload = lambda: True
fake.llama_print_system_info = lambda: b"ROCm : fake | "


class _Params:
    ftype = 0


def _quantize(source, target, params):
    with open(source, "rb") as src, open(target, "wb") as dst:
        dst.write(src.read())
    return 0


fake.llama_model_quantize_default_params = _Params
fake.llama_model_quantize = _quantize


class Llama:
    def __init__(self, model_path, n_ctx=128, **settings):
        self.settings = settings
        with open(os.environ["FAKE_LLAMA_LOG"], encoding="utf-8") as log:
            os.write(2, log.read().split("\\n", 1)[1].encode())  # past the SOURCE line
        self.n_tokens = 0
        self.scores = np.zeros((n_ctx, 259), dtype=np.float32)

    def reset(self):
        self.n_tokens = 0

    def eval(self, tokens):
        rows = np.asarray(tokens, dtype=np.float32)[:, None] * np.arange(1, 260, dtype=np.float32)
        self.scores[self.n_tokens : self.n_tokens + len(tokens)] = np.sin(rows / 97)
        self.n_tokens += len(tokens)

    def close(self):
        pass


fake.Llama = Llama
""" + SWAP_LLAMA_CPP.format(replacement="fake")


@pytest.mark.parametrize(
    ("env", "log", "expected"),
    [
        ("mi210_4.json", "rocm_four_gpus_EXCERPT.txt", {"full_offload": "passed", "two_gpu_split": "passed"}),
        (
            "rx7900xtx_rocm6.json",
            "rocm_partial_offload_EXCERPT.txt",
            {"full_offload": "failed", "two_gpu_split": "skipped"},
        ),
    ],
)
def test_the_gpu_rows_judge_llama_cpps_load_log(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, env: str, log: str, expected: dict[str, str]
) -> None:
    monkeypatch.setenv("FAKE_LLAMA_LOG", str(DATA / "llama_cpp" / log))
    rows = _rows(
        run_suite(pytester, ROW, f"--rocm-env={DATA / 'envs' / env}", "-k", "offload or split", plugin=FAKE_LLAMA_CPP)
    )
    assert {name: row["outcome"] for name, row in rows.items()} == expected, {n: r["reason"] for n, r in rows.items()}
    if expected["full_offload"] == "failed":
        assert "layers left on the CPU (offloaded 1/43): 42 vs bound 0 (EXCEEDS)" in rows["full_offload"]["reason"]
    if expected["two_gpu_split"] == "failed" and expected["full_offload"] == "passed":
        assert (
            "GPUs without model weights (weights on ROCm0): 1 vs bound 0 (EXCEEDS)" in rows["two_gpu_split"]["reason"]
        )
    if expected["two_gpu_split"] == "skipped":
        assert "needs two GPUs for tensor_split=[1, 1]: this machine has 1" in rows["two_gpu_split"]["reason"]
