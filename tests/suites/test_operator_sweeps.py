"""The operator sweeps catch wrong numbers that appear only under one shape or layout condition.

For each sweep axis an op is broken under that condition alone, and the suite file of that family
runs in the ``ci`` profile on the CPU (pytester, in process, with ``--rocm-report``): exactly the
rows whose shape meets the condition must fail, every other row of the file must pass (or skip as
it does unbroken, e.g. SDPA backends the CPU does not offer). The expected rows are computed from
the suite's own shape tables (suites/operators/shapes.py), with the same predicate as the break.

Breaking only the device under test: parity compares a float64 CPU reference with the run on the
device, and with ``--rocm-device=cpu`` both run here. The conftest wraps
``pytest_rocm.parity.check._run`` so the break is active only inside the runs whose dtype is not
float64, i.e. the device runs (forward, backward and parity's gradient projection).

How each break is made: a ``TorchDispatchMode`` sees the aten ops below autograd (mm, convolution,
native_layer_norm, sum, threshold_backward...); SDPA and RMSNorm are patched at
``torch.nn.functional`` instead, because below autograd they are no single op (the math backend
and the CPU's RMSNorm are composites that decompose into matmuls, softmax, pow and mean).
"""

from __future__ import annotations

import importlib
import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
# torch._dynamo (it brings triton) imported once, before pytester's runs: see tests/suites/test_operators.py
importlib.import_module("torch._dynamo")

SUITE = Path(__file__).resolve().parents[2] / "suites" / "operators"
sys.path.insert(0, str(SUITE))
import shapes  # noqa: E402  (the suite's shape tables: the suite folder is not a package)

pytestmark = pytest.mark.timeout(600)

CONFTEST = """
import pytest, torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

import pytest_rocm.parity.check as check

BREAK = {name!r}
FACTOR = {factor!r}
aten = torch.ops.aten


def scaled(out):
    if isinstance(out, torch.Tensor):
        return out * FACTOR
    return type(out)(scaled(o) if i == 0 else o for i, o in enumerate(out))  # (output, stats...)


def numel(t):
    return t.numel() if isinstance(t, torch.Tensor) else 0


CONDITIONS = {{
    # GEMMs whose reduction dimension K is >= 4096
    "gemm_k4096": lambda f, a: f in (aten.mm.default, aten.bmm.default) and a[0].shape[-1] >= 4096
    or f in (aten.addmm.default, aten.baddbmm.default) and a[1].shape[-1] >= 4096,
    # convolutions of a channels_last (not plainly contiguous) input
    "conv_channels_last": lambda f, a: f == aten.convolution.default
    and a[0].dim() == 4
    and a[0].is_contiguous(memory_format=torch.channels_last)
    and not a[0].is_contiguous(),
    # ReLU's backward (threshold_backward), everywhere: a 1 % error
    "relu_backward": lambda f, a: f == aten.threshold_backward.default,
    # LayerNorm / GroupNorm normalizing >= 4096 elements (RMSNorm: patched below)
    "norm_4096": lambda f, a: f == aten.native_layer_norm.default
    and a[0].shape[-len(a[1]) :].numel() >= 4096
    or f == aten.native_group_norm.default and a[4] // a[6] * a[5] >= 4096,
    # reductions and scans over inputs of >= 2^16 elements
    "reduction_2p16": lambda f, a: f
    in (
        aten.sum.default,
        aten.sum.dim_IntList,
        aten.mean.default,
        aten.mean.dim,
        aten.var.correction,
        aten.linalg_vector_norm.default,
        aten.amax.default,
        aten.cumsum.default,
    )
    and numel(a[0]) >= 1 << 16,
}}


class Break(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {{}}))
        condition = CONDITIONS.get(BREAK)
        return scaled(out) if condition is not None and condition(func, args) else out


def broken_sdpa(real):
    def sdpa(q, k, v, *args, **kwargs):
        out = real(q, k, v, *args, **kwargs)
        return out * FACTOR if q.shape[-1] >= 128 else out  # head_dim >= 128
    return sdpa


def broken_rms_norm(real):
    def rms_norm(x, normalized_shape, *args, **kwargs):
        out = real(x, normalized_shape, *args, **kwargs)
        return out * FACTOR if torch.Size(normalized_shape).numel() >= 4096 else out
    return rms_norm


@pytest.fixture(autouse=True)
def break_the_device_run(monkeypatch):
    real_run = check._run
    patches = {{"sdpa_head_dim_128": ("scaled_dot_product_attention", broken_sdpa), "norm_4096": ("rms_norm", broken_rms_norm)}}

    def run(fn, args, kwargs, dev, dtype, *rest):
        if dtype == torch.float64:  # parity's CPU reference: left alone
            return real_run(fn, args, kwargs, dev, dtype, *rest)
        with pytest.MonkeyPatch.context() as mp:
            if BREAK in patches:
                name, wrap = patches[BREAK]
                mp.setattr(F, name, wrap(getattr(F, name)))
            with Break():
                return real_run(fn, args, kwargs, dev, dtype, *rest)

    monkeypatch.setattr(check, "_run", run)
"""


@pytest.fixture
def suite(pytester: pytest.Pytester) -> Path:
    target = pytester.path / "suites" / "operators"
    shutil.copytree(SUITE, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def run_broken(pytester: pytest.Pytester, name: str, factor: float, *files: str) -> dict[str, dict[str, Any]]:
    """Run suite files with one break in the ci profile; {feature: record} from the report."""
    (pytester.path / "conftest.py").write_text(CONFTEST.format(name=name, factor=factor))
    report = pytester.path / "report.json"
    args = [f"suites/operators/{f}" for f in files]
    pytester.runpytest(
        "--rocm-device=cpu", "--rocm-scale=ci", "-p", "no:cacheprovider", f"--rocm-report={report}", *args
    )
    document = json.loads(report.read_text())
    assert document["scale"] == "ci"
    return {r["feature"]: r for r in document["results"]}


def sweep_rows(test: str, table: dict[str, tuple[Any, Any]], condition: Callable[[Any], bool]) -> set[str]:
    """Row-id prefixes (``operators/<test>[<case>-``) of the ci cases whose shape meets the condition."""
    return {f"operators/{test}[{case}-" for case, (ci, _) in table.items() if ci is not None and condition(ci)}


def assert_exactly(outcomes: dict[str, str], matching: set[str], count: int) -> None:
    """The rows named by the prefixes in ``matching`` (except those skipped) fail, all others pass."""
    assert matching and count > 0
    hit = {f for f in outcomes if any(f.startswith(p) for p in matching)}
    failed = {f for f, o in outcomes.items() if o == "failed"}
    expected = {f for f in hit if outcomes[f] != "skipped"}
    assert failed == expected, {
        "unexpected failures": sorted(failed - expected),
        "not caught": sorted(expected - failed),
    }
    assert len(failed) == count, sorted(failed)
    others = {o for f, o in outcomes.items() if f not in hit}
    assert others <= {"passed", "skipped"}, others


def assert_caught_by_parity(records: dict[str, dict[str, Any]]) -> None:
    """Each failed row failed a parity comparison (a wrong number measured against the float64
    reference), not an error the break provoked some other way."""
    for feature, record in records.items():
        if record["outcome"] == "failed":
            assert any(not p["ok"] for p in record["parity"]), (feature, record["parity"], record["reason"])


# (break, factor, suite file, row prefixes that must fail, how many rows): the same predicates as
# the breaks, on the suite's shape tables; the control run below checks them unbroken
BREAKS: dict[str, tuple[float, str, set[str], int]] = {
    # hd128 to hd512 (8 cases with the causal ones) and the mask, GQA, layout and decode rows, which
    # run at Llama's head_dim 128: 19 cases x math, flash x 3 dtypes
    "sdpa_head_dim_128": (
        1.1,
        "test_attention.py",
        sweep_rows("sdpa_sweep", shapes.ATTENTION, lambda a: a.head_dim >= 128),
        19 * 2 * 3,
    ),
    # k4096, k14336, k18944 and the first version's K = 8192 large_k row, in 3 dtypes
    "gemm_k4096": (
        1.1,
        "test_gemm.py",
        sweep_rows("matmul_sweep", shapes.GEMM, lambda g: g.k >= 4096) | {"operators/matmul[large_k-"},
        4 * 3,
    ),
    # k3, k1, k3s2 x batch 1, 8, in 3 dtypes
    "conv_channels_last": (
        1.1,
        "test_conv.py",
        sweep_rows("conv_sweep", shapes.CONV, lambda c: c.channels_last),
        6 * 3,
    ),
    "relu_backward": (
        1.01,
        "test_activations.py",
        {"operators/activation[relu-", "operators/activation[relu_inplace-"},
        2 * 3,
    ),
    # layer/rms at 4096 and 8192, group norm with 4096 and 8192 per group; 3584 features pass
    "norm_4096": (1.1, "test_norm.py", sweep_rows("norm_sweep", shapes.NORM, lambda n: n.per_group >= 4096), 6 * 3),
    # sweep: 5 whole-tensor, rows, 2 columns, cumsum over 65537 = 9; first version: 5 *_long rows
    "reduction_2p16": (
        1.1,
        "test_reductions.py",
        sweep_rows("reduction_sweep", shapes.REDUCTION, lambda r: r.numel >= 1 << 16)
        | {f"operators/reduction[{op}_long-" for op in ("sum", "mean", "var", "norm", "cumsum")},
        (9 + 5) * 3,
    ),
}


def broken(pytester: pytest.Pytester, name: str) -> dict[str, str]:
    """Run the suite file of break ``name`` with it; assert exactly its rows fail, through parity."""
    factor, file, matching, count = BREAKS[name]
    records = run_broken(pytester, name, factor, file)
    outcomes = {f: r["outcome"] for f, r in records.items()}
    assert_exactly(outcomes, matching, count)
    assert_caught_by_parity(records)
    return outcomes


@pytest.mark.slow
def test_sdpa_broken_at_head_dim_128_and_above(pytester, suite) -> None:
    outcomes = broken(pytester, "sdpa_head_dim_128")
    assert outcomes["operators/sdpa_sweep[hd96-math-float32]"] == "passed"
    assert outcomes["operators/sdpa[flash-bfloat16]"] == "passed"  # head_dim 32


def test_gemm_broken_for_k_4096_and_above(pytester, suite) -> None:
    outcomes = broken(pytester, "gemm_k4096")
    assert outcomes["operators/matmul_sweep[unaligned_odd-bfloat16]"] == "passed"


def test_conv_broken_in_channels_last_only(pytester, suite) -> None:
    outcomes = broken(pytester, "conv_channels_last")
    assert outcomes["operators/conv_sweep[k3-contiguous-b8-float16]"] == "passed"


def test_relu_backward_off_by_one_percent(pytester, suite) -> None:
    """The issue's case: a 1 % error in ReLU's gradient, forward untouched; fp32 fails, and with
    the piecewise-linear activations held to 1 eps, so do fp16 and bf16."""
    outcomes = broken(pytester, "relu_backward")
    assert outcomes["operators/activation[relu-float32]"] == "failed"
    assert outcomes["operators/activation[leaky_relu-float32]"] == "passed"


def test_norms_broken_from_4096_features(pytester, suite) -> None:
    outcomes = broken(pytester, "norm_4096")
    assert outcomes["operators/norm_sweep[rms_norm-f3584-bfloat16]"] == "passed"


def test_reductions_broken_from_2_to_the_16_elements(pytester, suite) -> None:
    outcomes = broken(pytester, "reduction_2p16")
    assert outcomes["operators/reduction_sweep[cumsum-row4096-float16]"] == "passed"  # 16384 elements


@pytest.mark.slow
def test_unbroken_run_passes_the_rows_each_break_fails(pytester, suite) -> None:
    """The control: the same files through the same conftest with no break. Nothing fails, and
    the rows each break must fail pass here (as many as it counts), measured by parity: so the
    failures above are the break's, not rows that fail (or are not checked) anyway."""
    files = sorted({file for _, file, _, _ in BREAKS.values()})
    records = run_broken(pytester, "none", 1.0, *files)
    outcomes = {f: r["outcome"] for f, r in records.items()}
    assert set(outcomes.values()) <= {"passed", "skipped"}, sorted(
        f for f, o in outcomes.items() if o != "passed" and o != "skipped"
    )
    for name, (_, _, matching, count) in BREAKS.items():
        rows = [f for f in outcomes if any(f.startswith(p) for p in matching) and outcomes[f] == "passed"]
        assert len(rows) == count, (name, sorted(rows))
        assert all(records[f]["parity"] and all(p["ok"] for p in records[f]["parity"]) for f in rows), name


def test_ci_and_full_rows_keep_their_ids() -> None:
    """A row is the same feature in both profiles (only its shape changes), so a ci report and a
    full one line up in the table; full-only rows are the real-model shapes."""
    tables = (
        shapes.ATTENTION,
        shapes.GEMM,
        shapes.CONV,
        shapes.NORM,
        shapes.SOFTMAX,
        shapes.REDUCTION,
        shapes.EMBEDDING,
    )
    for table in tables:
        for case, (ci, full) in table.items():
            assert full is not None, case  # every condition has a full-size row
            if ci is not None:
                assert type(ci) is type(full), case
            assert shapes.SOURCES.get(case), f"{case}: full shape without a source"
    full_only = {case for case, (ci, _) in shapes.ATTENTION.items() if ci is None}
    assert {"llama3_8b_s2048", "llama3_8b_s8192", "qwen25_7b_s4096", "sdxl_64x64"} == full_only
    # the conditions each ci row keeps from its full row (only sizes shrink)
    for case, (ci, full) in shapes.ATTENTION.items():
        if ci is not None:
            same = ("causal", "mask", "gqa", "layout", "head_dim")
            assert all(getattr(ci, f) == getattr(full, f) for f in same), case
    for case, (ci, full) in shapes.CONV.items():
        if ci is not None:
            assert (ci.channels_last, ci.batch, ci.kernel, ci.stride) == (
                full.channels_last,
                full.batch,
                full.kernel,
                full.stride,
            ), case
