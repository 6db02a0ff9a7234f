"""Full rows that miss their bound on the CPU baseline for a reason of the CPU's own kernels are
marked, visibly and with their figures, as known limits of the CPU backend (suites/operators/cpu_limits.py)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
importlib.import_module("torch._dynamo")  # once, before pytester's runs (see test_operators.py)

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "suites" / "operators"
sys.path.insert(0, str(SUITE))
sys.path.insert(0, str(ROOT / "tests"))
import cpu_limits  # noqa: E402
from suite_runs import run_suite  # noqa: E402

pytestmark = pytest.mark.timeout(600)


def test_the_known_limits_name_their_rows_and_figures() -> None:
    assert "4.7 eps" in (cpu_limits.known_limit("norm_sweep", "layer_norm-f3584", "bfloat16") or "")
    assert cpu_limits.known_limit("norm_sweep", "layer_norm-f3584", "float32") is None
    assert cpu_limits.known_limit("norm_sweep", "rms_norm-f4096", "float16") is None
    assert "29 (bf16)" in (cpu_limits.known_limit("sdpa_sweep", "llama3_8b_s2048", "bfloat16", "flash") or "")
    assert cpu_limits.known_limit("sdpa_sweep", "llama3_8b_s2048", "float16", "flash") is None
    assert cpu_limits.known_limit("sdpa_sweep", "llama3_8b_s2048", "bfloat16", "math") is None


def test_a_full_cpu_row_with_a_known_limit_is_an_xfail_with_its_figures(pytester: pytest.Pytester) -> None:
    target = SUITE / "test_norm.py"
    rows = run_suite(
        pytester, target, "--rocm-scale=full", "-k", "norm_sweep and (layer_norm-f3584 or rms_norm-f3584) and float16"
    )
    layer = rows["operators/norm_sweep[layer_norm-f3584-float16]"]
    assert layer["outcome"] == "xfailed", layer
    assert "known limit of the CPU backend" in layer["reason"] and "4.7 eps" in layer["reason"]
    assert layer["info"]["cpu_known_limit"].startswith("CPU LayerNorm backward")
    assert rows["operators/norm_sweep[rms_norm-f3584-float16]"]["outcome"] == "passed"
    # ci rows of the same test judge as usual
    ci = run_suite(pytester, target, "--rocm-scale=ci", "-k", "norm_sweep and layer_norm-f3584 and float16")
    assert ci["operators/norm_sweep[layer_norm-f3584-float16]"]["outcome"] == "passed"
