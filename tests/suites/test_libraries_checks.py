"""The library suites' judgements catch wrong numbers: each check passes what the library promises
and fails a deliberately broken result; the interpreter decision; a broken triton kernel fails."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest
from suite_runs import load_suite_module

torch = pytest.importorskip("torch")

SUITE = Path(__file__).resolve().parents[2] / "suites" / "libraries"


def _load(name: str) -> ModuleType:
    return load_suite_module(SUITE, name)


support = _load("_library_support")


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def int8_emulated_linear(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """LLM.int8() with threshold 0, emulated: row-wise absmax int8 for weights and inputs."""
    sw = w.abs().amax(1, keepdim=True) / 127
    sx = x.abs().amax(1, keepdim=True) / 127
    return ((x / sx).round() * sx) @ ((w / sw).round() * sw).T + b


def test_int8_bound_accepts_int8_rounding_and_rejects_a_3_percent_error() -> None:
    x, w, b = torch.randn(32, 256, generator=_gen(0)), torch.randn(64, 256, generator=_gen(1)) / 16, torch.randn(64)
    out = int8_emulated_linear(x, w, b)
    assert all(c.ok for c in support.int8_linear_checks(x, w, b, out, 2.0**-24))
    broken = support.int8_linear_checks(x, w, b, out * 1.03, 2.0**-24)
    assert not all(c.ok for c in broken)
    garbage = support.int8_linear_checks(x, w, b, out.flip(0), 2.0**-24)  # rows swapped: wrong wave mapping
    assert not garbage[0].ok


NF4 = torch.tensor(
    [
        -1.0,
        -0.6962,
        -0.5251,
        -0.3949,
        -0.2844,
        -0.1848,
        -0.0911,
        0.0,
        0.0796,
        0.1609,
        0.2461,
        0.3379,
        0.4407,
        0.5626,
        0.7230,
        1.0,
    ]
)


def nf4_roundtrip(w: torch.Tensor, blocksize: int, code: torch.Tensor = NF4) -> torch.Tensor:
    blocks = w.reshape(-1, blocksize)
    absmax = blocks.abs().amax(1, keepdim=True)
    nearest = ((blocks / absmax)[..., None] - code).abs().argmin(-1)
    return (code[nearest] * absmax).reshape(w.shape)


def test_4bit_bound_accepts_nf4_and_rejects_a_wrong_scale_or_code() -> None:
    w = torch.randn(64, 256, generator=_gen(2))
    assert all(c.ok for c in support.blockwise_4bit_checks(w, nf4_roundtrip(w, 64), 64, "nf4"))
    assert not all(c.ok for c in support.blockwise_4bit_checks(w, nf4_roundtrip(w, 64) * 1.2, 64, "nf4"))
    coarse = torch.linspace(-1, 1, 5)  # a 5-level code where 16 were promised
    assert not all(c.ok for c in support.blockwise_4bit_checks(w, nf4_roundtrip(w, 64, coarse), 64, "nf4"))


def _adam_trajectory(lr: float, steps: int = 30) -> tuple[list[torch.Tensor], list[float]]:
    g = _gen(3)
    x, target = torch.randn(128, 32, generator=g), torch.randn(128, 8, generator=g)
    w = torch.nn.Parameter(torch.zeros(8, 32))
    opt = torch.optim.Adam([w], lr=lr)
    snaps, losses = [w.detach().clone()], []
    for _ in range(steps):
        opt.zero_grad()
        loss = ((x @ w.T - target) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        snaps.append(w.detach().clone())
    return snaps, losses


def test_trajectory_check_rejects_a_drifting_or_idle_optimizer() -> None:
    ref, losses = _adam_trajectory(5e-2)
    assert all(c.ok for c in support.trajectory_checks(ref, ref, losses, 0.06, loss_ratio_bound=0.9))
    drifted, _ = _adam_trajectory(5.5e-2)  # a 10% learning-rate error
    assert not support.trajectory_checks(ref, drifted, losses, 0.06)[0].ok
    idle = [ref[0]] * len(ref)
    flat = [losses[0]] * len(losses)
    assert not any(c.ok for c in support.trajectory_checks(ref, idle, flat, 0.06))


def _qkv(dtype: torch.dtype, hkv: int = 4) -> list[torch.Tensor]:
    g = _gen(4)
    return [torch.randn(1, 64, h, 32, generator=g).to(dtype) for h in (4, hkv, hkv)]


@pytest.mark.parametrize("causal", [False, True])
def test_attention_judge_accepts_plain_attention_and_rejects_a_skewed_one(causal: bool) -> None:
    q, k, v = _qkv(torch.bfloat16, hkv=2)

    def plain(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        return support.attention_math(a, b, c, causal)

    assert all(c.ok for c in support.attention_checks(plain, q, k, v, causal))

    def wrong_scale(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        return support.attention_math(a, b, c, causal, scale=1.1 * a.shape[-1] ** -0.5)

    assert not all(c.ok for c in support.attention_checks(wrong_scale, q, k, v, causal))


def test_attention_math_matches_torch_sdpa_with_gqa_and_causal_mask() -> None:
    q, k, v = _qkv(torch.float64, hkv=2)
    ours = support.attention_math(q, k, v, causal=True)
    rep = [t.repeat_interleave(2, dim=2).transpose(1, 2) for t in (k, v)]
    theirs = torch.nn.functional.scaled_dot_product_attention(q.transpose(1, 2), *rep, is_causal=True).transpose(1, 2)
    torch.testing.assert_close(ours, theirs)


def _load_suites_conftest() -> ModuleType:
    spec = importlib.util.spec_from_file_location("suites_root_conftest", SUITE.parent / "conftest.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_triton_interpret_decision() -> None:
    conftest = _load_suites_conftest()
    no_gpu, gpu = (lambda: False), (lambda: True)

    def unused() -> bool:
        raise AssertionError("must not probe for a GPU")

    assert conftest.triton_interpret_decision({}, "cpu", unused) == (True, "--rocm-device=cpu")
    assert conftest.triton_interpret_decision({}, "cuda:1", unused)[0] is False
    assert conftest.triton_interpret_decision({"TRITON_INTERPRET": "0"}, "cpu", unused)[0] is False
    assert conftest.triton_interpret_decision({"TRITON_INTERPRET": "1"}, None, unused)[0] is True
    assert conftest.triton_interpret_decision({}, None, no_gpu)[0] is True
    assert conftest.triton_interpret_decision({}, None, gpu)[0] is False


def test_conftest_forces_the_hub_offline_even_when_the_user_allowed_it(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.setenv(var, "0")
    _load("conftest")
    assert [os.environ[v] for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE")] == ["1"] * 3


def _skip_without_triton() -> None:
    # Never import triton here: imported without TRITON_INTERPRET, its standard library (tl.max)
    # is decorated for the compiler for the rest of this process, and the suite refuses to mix.
    if importlib.util.find_spec("triton") is None:
        pytest.skip("triton is not installed")


def _copy_triton_suite(root: Path) -> Path:
    """suites/conftest.py and the triton files of suites/libraries under ``root``."""
    suite = root / "suites" / "libraries"
    suite.mkdir(parents=True)
    shutil.copy(SUITE.parent / "conftest.py", suite.parent / "conftest.py")
    for name in ("conftest.py", "_library_support.py", "_triton_kernels.py", "test_triton.py"):
        shutil.copy(SUITE / name, suite / name)
    return suite


def test_triton_runs_interpreted_when_an_earlier_suite_imported_triton_at_collection(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The corpus suite (collected before libraries/) imports torch.testing._internal, which imports
    # triton: decided in libraries/conftest.py, the interpreter came too late for tl.max and every
    # kernel failed with "Cannot call @triton.jit'd outside of the scope of a kernel".
    _skip_without_triton()
    suite = _copy_triton_suite(pytester.path)
    early = suite.parent / "aaa_imports_triton"
    early.mkdir()
    (early / "test_first.py").write_text("import triton.language\n\ndef test_nothing():\n    pass\n")
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.setenv(var, "1")
    result = pytester.runpytest_subprocess(
        "suites", "--rocm-device=cpu", "-p", "no:cacheprovider", "-k", "softmax and float32 or nothing"
    )
    result.assert_outcomes(passed=2)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnknownMarkWarning")  # the suite's marker, registered by its conftest
def test_kernels_in_the_other_mode_than_triton_standard_library_is_named_not_a_triton_bug() -> None:
    sys.path.insert(0, str(SUITE))
    try:
        suite_module = _load("test_triton")  # imports triton only inside its fixtures
    finally:
        sys.path.remove(str(SUITE))
    for mode in (True, False):
        assert suite_module.standard_library_mode_problem(mode, mode) is None
        problem = suite_module.standard_library_mode_problem(mode, not mode)
        assert problem and "before TRITON_INTERPRET was decided" in problem and "TRITON_INTERPRET=1" in problem


def test_a_wrong_triton_kernel_fails_its_parity_check(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _skip_without_triton()
    suite = _copy_triton_suite(pytester.path)
    kernels = suite / "_triton_kernels.py"
    source = kernels.read_text()
    assert "x + y, mask=mask" in source
    kernels.write_text(source.replace("x + y, mask=mask", "x + y * 1.01, mask=mask"))
    for var in ("TRITON_INTERPRET", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.setenv(var, "1")
    result = pytester.runpytest_subprocess("--rocm-device=cpu", "-p", "no:cacheprovider", "-k", "vector_add")
    result.assert_outcomes(failed=2, skipped=1)  # float32 and float16 caught; bf16: interpreter skip
    result.stdout.fnmatch_lines(["*parity mismatch: triton vector_add*"])
