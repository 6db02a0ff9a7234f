"""report.features.row_of: the report's one per-test naming call gives what feature_of and
suite_of give apart (it splits the node id once), and its cheap stem is pathlib's."""

from __future__ import annotations

from pathlib import PurePosixPath

from hypothesis import given
from hypothesis import strategies as st

from pytest_rocm.report.features import _stem, row_of, suite_of

PART = st.text(alphabet="ab._-", min_size=1, max_size=6).filter(lambda s: s not in (".", ".."))


@given(PART)
def test_the_stem_is_pathlibs(name: str) -> None:
    assert _stem(name) == PurePosixPath(name).stem


@given(
    st.lists(st.sampled_from(["suites", "_suites", "operators", "tests", "unit", "a.b"]), max_size=3),
    st.sampled_from(["test_a.py", "t.py", "a..py", "test_.py", "x"]),
    st.sampled_from(["", "::test_b", "::TestC::test_d[cuda:0-float32]", "::test_e[cpu]"]),
)
def test_row_of_names_a_test_as_before(folders: list[str], module: str, rest: str) -> None:
    nodeid = "/".join([*folders, module]) + rest
    _, suite = row_of(nodeid)
    assert suite == suite_of(nodeid)
    assert row_of(nodeid, "sdpa/flash") == ("sdpa/flash", suite)  # a marker names the row, not the section


def test_known_rows() -> None:
    assert row_of("test_gen_00.py::test_a[3]") == ("gen_00/a[3]", "gen_00")
    assert row_of("suites/operators/test_gemm.py::TestMM::test_mm[cuda:0-bf16]") == (
        "operators/MM.mm[cuda:0-bf16]",  # bundled rows keep their ids (device tokens are foreign suites' concern)
        "operators",
    )
    assert row_of("tests/unit/test_k.py::test_b[cuda:0-float32]") == (
        "tests/unit/test_k::test_b[device-float32]",
        "tests/unit",
    )
    assert row_of("tests/unit/test_k.py::test_b[cpu-xla]", None, ("xla",)) == (
        "tests/unit/test_k::test_b[cpu-device]",
        "tests/unit",
    )
