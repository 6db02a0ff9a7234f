"""Every entry of PyTorch's databases (op_db, module_db, optim_db) has a place: a catalogue op of
the boundary generator that varies it, or the reason it is not varied; a new optimizer in optim_db
that the generator neither steps nor lists fails here, and the coverage map names every corpus op
the generator does not vary, with why."""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("expecttest")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "suites" / "corpus"))
import corpus_db  # noqa: E402

from pytest_rocm.coverage.catalogue import CATALOGUE  # noqa: E402
from pytest_rocm.coverage.catalogue_more import OPTIMIZERS  # noqa: E402
from pytest_rocm.coverage.families import NOT_STEPPED, place  # noqa: E402
from pytest_rocm.table.boundary_map import coverage_map, markdown_section  # noqa: E402


def test_every_optimizer_of_optim_db_is_stepped_or_listed_with_why() -> None:
    from torch.testing._internal.common_optimizers import optim_db

    names = {info.optim_cls.__name__ for info in optim_db}
    assert names == set(OPTIMIZERS) | set(NOT_STEPPED), "an optimizer of optim_db has no place"
    by_name = {info.optim_cls.__name__: info for info in optim_db}
    for name, impls in OPTIMIZERS.items():  # each forced implementation is one the optimizer offers
        offered = {"foreach", "fused"} & set(inspect.signature(getattr(torch.optim, name).__init__).parameters)
        assert set(impls) == offered, name
        # and the one optim_db says it supports, fused on a GPU too (where the rows force it)
        assert set(impls) == {"foreach", "fused"} & set(by_name[name].supported_impls), name
        if "fused" in impls:
            assert "cuda" in by_name[name].supports_fused_on, name
        assert place("optiminfo", name).varied_as == f"optimizer/{name.lower()}"
    assert all(place("optiminfo", n).why == why for n, why in NOT_STEPPED.items())


def test_every_op_and_module_entry_has_a_place_and_each_family_is_reached() -> None:
    placed = {}
    for (name, _), entry in corpus_db.entries("opinfo").items():
        placed[name] = place("opinfo", name, type(entry).__name__)
    for name, _ in corpus_db.entries("moduleinfo"):
        placed[name] = place("moduleinfo", name)
    for name, p in placed.items():
        assert (p.varied_as is None) == bool(p.why), name  # varied, or a reason: never both, never neither
        assert p.varied_as is None or p.varied_as in CATALOGUE
    reached = {p.varied_as.split("/")[0] for p in placed.values() if p.varied_as}
    assert {"fft", "linalg", "conv", "pooling", "norm", "matmul", "indexing", "elementwise"} <= reached
    assert placed["fft.fft"].varied_as == "fft/fft" and placed["linalg.solve"].varied_as == "linalg/solve"
    assert placed["fft.fft2"].family == "fft" and "fft, hfft" in placed["fft.fft2"].why
    assert placed["sin"].family == "elementwise"  # by its OpInfo class, not a name list
    # an op with arithmetic is in a family with its own reason, never "no boundary family"
    expected = {"argsort": "sorting", "kthvalue": "sorting", "nn.LSTM": "rnn", "nn.ReLU": "elementwise",
                "nn.functional.cross_entropy": "loss", "nn.ReflectionPad2d": "padding", "cdist": "distance",
                "histc": "histogram", "bernoulli": "random", "addcmul": "elementwise",
                "torch._scaled_mm": "matmul", "nn.functional.unfold": "conv"}  # fmt: skip
    for name, family in expected.items():
        assert placed[name].family == family and placed[name].why, name
    assert placed["sort"].varied_as == "sorting/sort" and placed["topk"].varied_as == "sorting/topk"
    assert "sort, topk" in placed["argsort"].why and "no recurrent family" in placed["nn.LSTM"].why
    no_family = sorted(n for n, p in placed.items() if p.family is None)
    assert "flip" in no_family and "reshape" in no_family and "arange" in no_family
    assert all("no arithmetic" in placed[n].why for n in no_family)
    families = {key.split("/")[0] for key in CATALOGUE}
    assert {"fft", "linalg", "optimizer", "clipping", "sorting"} <= families


@pytest.mark.parametrize("name", ["nn.functional.fancy_new_op", "nn.FancyNewModule", "fancy_new_op"])
def test_an_entry_no_family_names_has_no_place(name: str) -> None:
    """A new entry of op_db or module_db that no family and no no-family rule names is not waved
    through as "other": it has neither a catalogue op nor a reason, which the test above fails on."""
    p = place("opinfo", name, "OpInfo")
    assert p.family is None and p.varied_as is None and p.why == ""


def test_the_coverage_map_lists_corpus_ops_the_generator_does_not_vary() -> None:
    def row(op: str, cls: str) -> dict:
        info = {"op": op, "corpus": "opinfo", "dims": {"dtype": "float32"}, "entry_class": cls}
        return {"feature": f"opinfo/{op}[default-float32-s0]", "outcome": "passed", "info": info}

    cov = coverage_map(
        [{"results": [row("fft.fft", "SpectralFuncInfo"), row("flip", "OpInfo"), row("cos", "UnaryUfuncInfo")]}]
    )
    assert cov is not None
    listed = dict(cov.not_varied)
    assert set(listed) == {"opinfo/flip", "opinfo/cos"}
    assert "no boundary family" in listed["opinfo/flip"] and "elementwise" in listed["opinfo/cos"]
    text = "\n".join(markdown_section(cov))
    assert "Not varied by the boundary generator (2 corpus ops)" in text and "- opinfo/flip: no boundary family" in text
