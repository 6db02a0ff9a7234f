"""A corpus row's spec is data like any other (every field of its ``corpus`` block checked, one line
naming the field), a corpus row's script carries the part that rebuilds the sample and no other
script does, and a user's ``mode="model"`` call gets a script that computes the model yardstick
itself: it exits 1 under a low-precision bug and 0 without."""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from kernel_mutants import PerturbsLowPrecision  # noqa: E402
from test_repro_end_to_end import run_script  # noqa: E402

from pytest_rocm import ParityError, assert_parity  # noqa: E402
from pytest_rocm.parity.origin import current, reproducer_sample  # noqa: E402
from pytest_rocm.repro.spec import SpecError, read_spec  # noqa: E402
from pytest_rocm.repro.write import script_source, template_text  # noqa: E402

CORPUS = {"db": "opinfo", "name": "nn.functional.conv2d", "variant": "default", "dtype": "float16", "sample": "s3",
          "torch": "2.13.0+cpu", "passed": [0, 2]}  # fmt: skip
TOL = {"rtol": 0.0, "atol": 1e-5, "normwise": 0.0, "cpu_factor": 10.0, "normwise_factor": 10.0, "accumulation": 0.01}


def corpus_spec() -> dict[str, Any]:
    tensor = {"shape": [2, 3], "dtype": "float16", "stride": [3, 1], "storage_offset": 0, "values": None}
    return {"version": 1, "mode": "model", "dtypes": ["float16"], "op": None, "args": [], "kwargs": {},
            "tensors": [tensor, dict(tensor)], "tolerances": {"float16": dict(TOL)}, "grad": True, "seed": 0,
            "corpus": dict(CORPUS)}  # fmt: skip


def test_a_corpus_spec_without_recorded_ops_reads_back_with_its_sample() -> None:
    checked = read_spec(corpus_spec())
    assert checked["op"] is None and checked["corpus"] == CORPUS
    assert checked["tolerances"]["float16"] == TOL


@pytest.mark.parametrize(
    ("change", "fault"),
    [
        (lambda s: s["corpus"].update(db="evil"), "repro.corpus.db"),
        (lambda s: s["corpus"].update(name="exp'); import os #"), "repro.corpus.name"),
        (lambda s: s["corpus"].update(variant="a b"), "repro.corpus.variant"),
        (lambda s: s["corpus"].update(sample="x1"), "repro.corpus.sample"),
        (lambda s: s["corpus"].update(sample="s1; import os"), "repro.corpus.sample"),
        (lambda s: s["corpus"].update(torch="2.13\nimport os"), "repro.corpus.torch"),
        (lambda s: s["corpus"].update(dtype="float8"), "repro.corpus.dtype"),
        (lambda s: s["corpus"].update(passed=[-1]), "repro.corpus.passed"),
        (lambda s: s["corpus"].update(passed="0"), "repro.corpus.passed"),
        (lambda s: s.update(corpus=[1]), "repro.corpus"),
        (lambda s: s["tolerances"]["float16"].pop("accumulation"), "repro.tolerances.float16.accumulation"),
        (lambda s: s["tolerances"]["float16"].update(normwise_factor=-1), "repro.tolerances.float16.normwise_factor"),
        (lambda s: s.pop("corpus"), "repro.op"),  # without a sample, a spec with no op is no spec
    ],
)
def test_a_corpus_block_not_written_by_callspec_is_refused_naming_the_field(change: Any, fault: str) -> None:
    spec = copy.deepcopy(corpus_spec())
    change(spec)
    with pytest.raises(SpecError, match=r"^" + fault.replace(".", r"\.")):
        read_spec(spec)


def test_only_a_corpus_rows_script_holds_the_part_that_rebuilds_its_sample() -> None:
    corpus = script_source(corpus_spec(), "t", "cpu", {}, template_text())
    assert "def corpus_runner(" in corpus and "# rocm-compat repro: CORPUS\n" not in corpus
    compile(corpus, "corpus.py", "exec")
    plain = {**corpus_spec(), "op": "torch.exp"}
    plain.pop("corpus")
    text = script_source(plain, "t", "cpu", {}, template_text())
    assert "def corpus_runner(" not in text and "op_db" not in text
    compile(text, "plain.py", "exec")


def test_reproducer_sample_names_the_sample_for_the_block_only() -> None:
    assert current() is None
    with reproducer_sample("opinfo", "exp", "default", "float16", "s1", torch.__version__, (0,)):
        assert current() == {"db": "opinfo", "name": "exp", "variant": "default", "dtype": "float16",
                             "sample": "s1", "torch": torch.__version__, "passed": [0]}  # fmt: skip
    assert current() is None
    with pytest.raises(ValueError, match=r"^reproducer_sample: sample 'one' is not one of a corpus row$"):
        reproducer_sample("opinfo", "exp", "default", "float16", "one", "2", ())
    with reproducer_sample("opinfo", "nn.functional.interpolate", "nearest-exact", "float16", "s0", "2", ()):
        assert read_spec({**corpus_spec(), "corpus": current()})["corpus"]["variant"] == "nearest-exact"


def test_a_model_mode_call_records_its_yardsticks_parts_and_its_script_reproduces(tmp_path: Path) -> None:
    x = torch.linspace(-3, 3, 40, dtype=torch.float64).reshape(5, 8).float()
    with PerturbsLowPrecision("aten.exp.default"), pytest.raises(ParityError) as info:
        assert_parity(torch.exp, x, device="cpu", dtypes=("float16",), mode="model")
    assert info.value.result is not None
    (spec,) = [r["repro"] for r in info.value.result.records(with_repro=True) if "repro" in r]
    assert spec["op"] == "torch.exp" and spec["mode"] == "model"
    tol = spec["tolerances"]["float16"]
    assert tol["normwise_factor"] == 2.0 and tol["cpu_factor"] == 3.0 and tol["accumulation"] > 0
    script = tmp_path / "model.py"
    script.write_text(script_source(spec, "exp", "cpu", {}, template_text()))
    broken = run_script(script, bugs=True, bug="PerturbsLowPrecision('aten.exp.default')")
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert "within the model yardstick" not in broken.stdout
    clean = run_script(script, bugs=False)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "within the model yardstick" in clean.stdout
