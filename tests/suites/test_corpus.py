"""The corpus suite (suites/corpus): rows from torch's OpInfo and ModuleInfo databases.

- a database that is missing, an entry that is missing, an entry whose fields changed: each is a
  skip that says so, never a collection error (a fake database injected into a fresh process);
- row names and the dimensions each row records, from the real databases of the installed torch;
- a device-side break (tests/corpus_mutants.py) fails exactly the rows that reach its condition,
  and nothing fails without it.
"""

from __future__ import annotations

import importlib
import inspect
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("expecttest")
importlib.import_module("torch._dynamo")  # once, before pytester's runs (see test_operators.py)

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "suites" / "corpus"
sys.path.insert(0, str(SUITE))
sys.path.insert(0, str(ROOT / "tests"))
import corpus_db  # noqa: E402
import corpus_dims  # noqa: E402
import corpus_mutants  # noqa: E402
import corpus_rows  # noqa: E402
from suite_runs import run_suite  # noqa: E402

from pytest_rocm import assert_parity  # noqa: E402

pytestmark = pytest.mark.timeout(600)

FAKE_DB = '''
import sys, types
import torch

class Sample:
    def __init__(self, input, *args, **kwargs):
        self.input, self.args, self.kwargs = input, args, kwargs

class FakeOp:
    """The fields the adapter reads, as OpInfo has them."""
    def __init__(self, name, op, broken=False):
        self.name, self.variant_test_name, self.op, self.broken = name, "", op, broken
        self.supports_autograd, self.decorators, self.reference_inputs_func = True, (), None
    def supported_dtypes(self, device_type):
        return {torch.float32, torch.float16, torch.bfloat16}
    supported_backward_dtypes = supported_dtypes
    def sample_inputs(self, device, dtype, requires_grad=False):
        if self.broken:
            raise TypeError("sample_inputs_matmul() got an unexpected keyword argument 'requires_grad'")
        g = torch.Generator().manual_seed(0)
        a = torch.randn(3, 4, generator=g).to(dtype).requires_grad_(requires_grad)
        b = torch.randn(4, 5, generator=g).to(dtype).requires_grad_(requires_grad)
        yield Sample(a, b)
        yield Sample(a.t().contiguous().t()[:, :4], b.t().contiguous().t())

mod = types.ModuleType("torch.testing._internal.common_methods_invocations")
# "matmul" works; "addmm" changed (its sample function has a new signature); the rest are missing
mod.op_db = [FakeOp("matmul", torch.matmul), FakeOp("addmm", torch.addmm, broken=True)]
sys.modules[mod.__name__] = mod
sys.modules["torch.testing._internal.common_modules"] = None  # an ImportError: the module moved
'''


@pytest.fixture
def suite(pytester: pytest.Pytester) -> Path:
    target = pytester.path / "suites" / "corpus"
    shutil.copytree(SUITE, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def records(report: Path) -> dict[str, dict[str, Any]]:
    return {r["feature"]: r for r in json.loads(report.read_text())["results"]}


def test_a_changed_or_missing_database_is_a_skip_that_says_so(pytester: pytest.Pytester, suite: Path) -> None:
    pytester.makepyfile(fake_torch_db=FAKE_DB)
    report = pytester.path / "report.json"
    result = pytester.runpytest_subprocess(
        str(suite), "--rocm-device=cpu", "--rocm-scale=ci", "-p", "no:cacheprovider", "-p", "fake_torch_db",
        f"--rocm-report={report}", "-rs",
    )  # fmt: skip
    assert result.ret == 0, result.stdout.str()[-3000:]
    rows = records(report)
    assert {r["outcome"] for r in rows.values()} <= {"passed", "skipped"}
    # the entry that works runs, named as the contract says, with its dimensions
    ok = rows["opinfo/matmul[default-float32-s0]"]
    assert ok["outcome"] == "passed" and ok["parity"]
    assert ok["info"]["op"] == "matmul"
    assert ok["info"]["dims"] == {
        "dtype": "float32", "variant": "default", "sample": "s0", "layout": "contiguous", "rank": "2", "numel": "small",
    }  # fmt: skip
    assert rows["opinfo/matmul[default-bfloat16-s1]"]["info"]["dims"]["layout"] == "transposed"
    # an entry whose sample function changed
    changed = rows["opinfo/addmm[default-float32-s-none]"]
    assert changed["outcome"] == "skipped"
    assert "OpInfo entry 'addmm' changed in this torch: TypeError: sample_inputs_matmul()" in changed["reason"]
    # an entry the installed torch does not have
    missing = rows["opinfo/nn.functional.conv2d[default-float16-none]"]
    assert missing["outcome"] == "skipped"
    assert "OpInfo has no entry 'nn.functional.conv2d' (variant 'default') in this torch" in missing["reason"]
    # a database that cannot be imported: one skip per listed module, dtype and mode
    gone = rows["moduleinfo/nn.LSTM[train-float32-none]"]
    assert gone["outcome"] == "skipped"
    assert "cannot import torch.testing._internal.common_modules" in gone["reason"]
    assert len([f for f in rows if f.startswith("moduleinfo/")]) == len(corpus_rows.CI_MODULES) * 2 * 3


def test_the_real_database_names_rows_and_records_dims(
    pytester: pytest.Pytester, suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTEST_ROCM_CORPUS_OPS", "softmax, log_softmax,nn.Layer*")  # rows of these entries only
    rows = run_suite(pytester, suite, "--rocm-scale=ci", "-k", "softmax-default or LayerNorm-eval-float32")
    assert {r["info"]["op"] for r in rows.values()} == {"softmax", "log_softmax", "nn.LayerNorm"}
    assert "opinfo/softmax[default-float32-s0]" in rows
    assert "opinfo/log_softmax[default-bfloat16-s1]" in rows
    assert "moduleinfo/nn.LayerNorm[eval-float32-s0]" in rows
    for feature, row in rows.items():
        assert row["outcome"] == "passed", (feature, row["reason"])
        assert row["suite"] == "corpus"
        dims = row["info"]["dims"]
        assert {"dtype", "variant", "sample", "layout", "rank"} <= set(dims), feature
        assert feature.endswith(f"-{dims['dtype']}-{dims['sample']}]")
        assert row["info"]["op"] in feature
    assert rows["moduleinfo/nn.LayerNorm[eval-float32-s0]"]["info"]["dims"]["mode"] == "eval"


def test_the_entry_filter_matches_names_by_glob() -> None:
    only = corpus_rows.patterns(" nn.functional.conv*, nn.BatchNorm2d ,")
    assert only == ("nn.functional.conv*", "nn.BatchNorm2d")
    assert corpus_rows.wanted("nn.functional.conv2d", only) and corpus_rows.wanted("nn.BatchNorm2d", only)
    assert not corpus_rows.wanted("nn.BatchNorm1d", only) and not corpus_rows.wanted("matmul", only)
    assert corpus_rows.wanted("anything", corpus_rows.patterns(""))


def test_the_ci_pick_keeps_new_conditions_in_order() -> None:
    dims = [{"rank": "2"}, {"rank": "2"}, {"rank": "3"}, {"rank": "3", "layout": "transposed"}, {"rank": "1"}]
    assert corpus_dims.pick_diverse(iter(enumerate(dims)), 3) == [0, 2, 3]
    assert corpus_dims.pick_diverse(iter(enumerate(dims)), None) == [0, 1, 2, 3, 4]


def test_ci_reaches_every_entry_of_both_databases_or_says_why() -> None:
    """The gate runs ``ci``: an entry outside it is one the gate never checks. Computed from the
    installed torch's op_db and module_db, so an entry a new torch adds cannot be forgotten: every
    (op, variant) and every module has a ci row, and an entry none of whose rows can run here
    carries the reason in its row (the report prints it as the skip)."""
    ops = corpus_rows.opinfo_rows("ci", "cpu", "cpu")
    modules = corpus_rows.moduleinfo_rows("ci")
    by_entry: dict[tuple[str, str], list[corpus_db.Row]] = {}
    for row in ops:
        by_entry.setdefault((row.name, row.variant), []).append(row)
    for row in modules:
        by_entry.setdefault((row.name, "module"), []).append(row)
    entries = set(corpus_db.entries("opinfo")) | {(n, "module") for n, _ in corpus_db.entries("moduleinfo")}
    assert entries - set(by_entry) == set(), "entries of the databases without a ci row"
    silent = [k for k, rows in by_entry.items() if all(r.problem is not None for r in rows) and not all(
        r.problem and k[0] in r.problem for r in rows
    )]  # fmt: skip
    assert silent == []
    runnable = [k for k, rows in by_entry.items() if any(r.problem is None for r in rows)]
    assert len(runnable) >= 0.95 * len(by_entry)  # what cannot run here is the exception, not the rule
    # the thin tier: one row per entry outside the deep lists, not always the first sample
    deep = set(corpus_rows.ci_ops()) | {(n, "module") for n in corpus_rows.CI_MODULES}
    thin = [rows for k, rows in by_entry.items() if k not in deep]
    assert all(len(rows) in (1, 2) and len({r.dtype for r in rows}) == len(rows) for rows in thin)
    picked = [rows[0].sample for rows in thin if rows[0].problem is None]
    assert picked.count("s0") < len(picked) / 4
    # the second row: half precision, fp16 and bf16 both, mostly on another sample than the first
    pairs = [rows for rows in thin if len(rows) == 2]
    assert len(pairs) >= 0.8 * len(picked)
    assert {rows[1].dtype for rows in pairs} == {"float16", "bfloat16"}
    assert sum(rows[0].sample != rows[1].sample for rows in pairs) >= 0.5 * len(pairs)


def test_the_thin_pick_prefers_a_new_condition_holding_values() -> None:
    empty = {"rank": "1", "layout": "contiguous", "numel": "empty"}
    plain = {"rank": "2", "layout": "contiguous", "numel": "small"}
    assert corpus_dims.pick_new_condition([empty, plain, {**plain, "layout": "transposed"}], "a") == 2
    assert corpus_dims.pick_new_condition([empty, plain, plain, {**plain, "kwargs": "dim"}], "a") == 3
    same = [plain] * 5
    picks = {corpus_dims.pick_new_condition(same, name) for name in ("abs", "sin", "cos", "exp", "tan", "log")}
    assert len(picks) > 1 and picks <= set(range(5))  # rotated over the indices, by name
    assert corpus_dims.pick_new_condition([empty], "a") == 0 and corpus_dims.pick_new_condition([], "a") is None
    # a second row of the entry: another sample, of another condition where there is one
    kinds = [plain, {**plain, "rank": "3"}, plain, {**plain, "kwargs": "dim"}]
    assert corpus_dims.pick_new_condition(kinds, "a") == 1
    assert corpus_dims.pick_new_condition(kinds, "a", taken=(1,)) == 3
    assert corpus_dims.pick_new_condition([plain, plain], "a", taken=(0,)) == 1
    assert corpus_dims.pick_new_condition([plain], "a", taken=(0,)) == 0  # nothing else: the same one


@pytest.mark.parametrize("op", ["nn.functional.conv2d", "linalg.solve", "addcmul"])
def test_the_fast_sample_iteration_makes_the_same_samples(op: str) -> None:
    """The adapter skips OpInfo's stack walk and its seeding of every device type (the ci
    collection's main cost): the samples must be the very ones OpInfo makes without that."""
    entry = corpus_db.entries("opinfo")[(op, "default")]

    def make() -> list[torch.Tensor]:
        corpus_db.seeded(0)
        samples = list(entry.sample_inputs("cpu", torch.float32, requires_grad=True))[:6]
        return corpus_dims.tensors([(s.input, s.args, s.kwargs) for s in samples])

    plain = make()
    with corpus_db._no_test_lookup():
        fast = make()
    assert len(plain) == len(fast) > 0
    assert all(torch.equal(a, b) and a.stride() == b.stride() for a, b in zip(plain, fast, strict=True))
    # a thin row's window is the head of the full list, sample for sample
    head, full = (corpus_db.op_samples(op, "default", "float32", "s", n) for n in (3, None))
    both = [corpus_dims.tensors([(s.input, s.args, s.kwargs) for s in x]) for x in (head, full[:3])]
    assert all(torch.equal(a, b) for a, b in zip(*both, strict=True))


def test_the_layout_of_a_sample_survives_the_move_to_the_device() -> None:
    import corpus_calls

    base = torch.arange(40.0).reshape(5, 8)
    for like in (base[1:, 2:], base.t(), base[:, ::2]):
        out = corpus_calls.relayout(like.contiguous(), like)
        assert out.stride() == like.stride() and out.storage_offset() == like.storage_offset()
        assert torch.equal(out, like)
    assert corpus_dims.layout_of(base[1:, 2:]) == "storage_offset"
    assert corpus_dims.layout_of(base.t()) == "transposed"
    assert corpus_dims.layout_of(base[:, ::2]) == "noncontiguous"


def test_a_lazily_conjugated_output_is_compared_as_its_values() -> None:
    """fft.ifft / fft.ihfft* return a conjugate view (its conj bit set): view_as_real refused it,
    and 22 full rows failed on that error instead of on numbers."""
    import corpus_calls

    z = torch.complex(torch.tensor([1.0, 2.0]), torch.tensor([3.0, -4.0]))
    out = corpus_calls.as_outputs((z.conj(), torch.fft.ihfft(torch.arange(4.0))))
    assert torch.equal(out[0], torch.tensor([[1.0, -3.0], [2.0, 4.0]]))
    assert torch.allclose(out[1], torch.view_as_real(torch.fft.ihfft(torch.arange(4.0)).resolve_conj()))
    rows = corpus_rows.opinfo_rows("full", "cpu", "cpu", ("fft.ifft", "fft.ihfft"))
    for row in [r for r in rows if r.dtype == "float32"][:6]:
        call = corpus_calls.op_call(row, "cpu", "cpu")
        assert assert_parity(call.fn, *call.args, dtypes=("float32",), grad=call.grad, device="cpu").ok, row.id


@pytest.mark.parametrize("mutant", ["bn_running_mean_drift"])
def test_a_device_side_break_fails_the_rows_that_reach_it(
    pytester: pytest.Pytester, suite: Path, monkeypatch: pytest.MonkeyPatch, mutant: str
) -> None:
    """Training batch norm whose running mean drifts (MIOpen): the module rows in train mode fail,
    on the state they leave behind; the OpInfo rows of F.batch_norm compare outputs only and pass;
    eval rows and an unbroken run pass."""
    monkeypatch.setenv("PYTEST_ROCM_CORPUS_OPS", "nn.functional.batch_norm,nn.BatchNorm*")
    select = ("--rocm-scale=ci",)
    clean = run_suite(pytester, suite, *select)
    assert clean and {r["outcome"] for r in clean.values()} <= {"passed", "skipped"}
    monkeypatch.setenv("CORPUS_MUTANT", mutant)
    broken = run_suite(pytester, suite, *select, plugin=inspect.getsource(corpus_mutants))
    failed = {f for f, r in broken.items() if r["outcome"] == "failed"}
    expected = {
        f for f, r in clean.items()
        if f.startswith("moduleinfo/nn.BatchNorm") and "[train-" in f and r["info"]["dims"]["numel"] != "empty"
    }  # fmt: skip
    assert failed == expected and len(expected) >= 6
    for feature in failed:  # caught on the running mean, by a parity comparison
        bad = [p for p in broken[feature]["parity"] if not p["ok"]]
        assert bad and all("running_mean" in p["name"] for p in bad), (feature, bad)


def test_the_cpu_baseline_catches_a_wrong_low_precision_result(
    pytester: pytest.Pytester, suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug of the CPU's own kernels (every fp32/fp16/bf16 run of training batch norm drifts its
    running mean by 5 %, the float64 runs are right): a same-dtype CPU yardstick (``cpu-relative``)
    carries the same bug and could not fail; the CPU baseline's model criterion fails exactly the
    rows that reach the condition, and the clean run is green."""
    monkeypatch.setenv("PYTEST_ROCM_CORPUS_OPS", "nn.functional.batch_norm,nn.BatchNorm*")
    clean = run_suite(pytester, suite, "--rocm-scale=ci")
    assert clean and {r["outcome"] for r in clean.values()} <= {"passed", "skipped"}
    monkeypatch.setenv("CORPUS_MUTANT", "bn_running_mean_drift")
    monkeypatch.setenv(corpus_mutants.SCOPE, "dtype")
    broken = run_suite(pytester, suite, "--rocm-scale=ci", plugin=inspect.getsource(corpus_mutants))
    failed = {f for f, r in broken.items() if r["outcome"] == "failed"}
    expected = {
        f for f, r in clean.items()
        if f.startswith("moduleinfo/nn.BatchNorm") and "[train-" in f and r["info"]["dims"]["numel"] != "empty"
    }  # fmt: skip
    assert failed == expected and {clean[f]["info"]["dims"]["dtype"] for f in failed} == {
        "float32", "float16", "bfloat16"
    }  # fmt: skip
    for feature in failed:  # caught on the running mean, against the computed yardstick
        bad = [p for p in broken[feature]["parity"] if not p["ok"]]
        assert bad and all("running_mean" in p["name"] and p["mode"] == "model" for p in bad), (feature, bad)
    assert corpus_calls_module().criterion("cuda") == "cpu-relative"  # a GPU keeps PyTorch's criterion


#: a bug of one op outside the deep lists: atan2's result 5 % off in every fp32/fp16/bf16 run (the
#: CPU's same-dtype run included), float64 untouched (the reference and the yardstick)
BREAK_ATAN2 = """
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

LOW = (torch.float32, torch.float16, torch.bfloat16)


class Break(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func in (torch.ops.aten.atan2.default, torch.ops.aten.atan2.out) and out.dtype in LOW:
            return out * 1.05
        return out


@pytest.fixture(autouse=True)
def broken_atan2():
    with Break():
        yield
"""


def test_a_thin_ci_row_catches_a_wrong_low_precision_result(
    pytester: pytest.Pytester, suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """atan2 is in no deep list: its two thin ci rows (float32 and fp16, one sample each) fail on
    the CPU baseline when atan2's low-precision result is wrong; hypot's rows (not broken) pass,
    and the clean run is green."""
    monkeypatch.setenv("PYTEST_ROCM_CORPUS_OPS", "atan2,hypot")
    select = ("--rocm-scale=ci", "-k", "test_opinfo")
    clean = run_suite(pytester, suite, *select)
    assert {f.split("[")[0] for f in clean} == {"opinfo/atan2", "opinfo/hypot"} and len(clean) == 4
    assert {r["outcome"] for r in clean.values()} == {"passed"}
    broken = run_suite(pytester, suite, *select, plugin=BREAK_ATAN2)
    failed = {f for f, r in broken.items() if r["outcome"] == "failed"}
    atan2 = {f for f in clean if f.startswith("opinfo/atan2[")}
    assert failed == atan2 and {clean[f]["info"]["dims"]["dtype"] for f in atan2} == {"float32", "float16"}
    for feature in failed:  # caught on atan2's output, against the computed yardstick
        bad = [p for p in broken[feature]["parity"] if not p["ok"]]
        assert bad and all(p["name"] == "atan2" and p["mode"] == "model" for p in bad), bad


def corpus_calls_module() -> Any:
    import corpus_calls

    return corpus_calls
