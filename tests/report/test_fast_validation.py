"""The report loader's fast path: records of the plain shape skip the jsonschema descent, every
other record meets the schema, so every message stays the schema's own. The fast check must never
accept what the schema rejects: a property test holds it to that."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_rocm.env.schemas import problem_by_jsonschema
from pytest_rocm.report.load import ReportError, plainly_valid, validate

ENV = json.loads((Path(__file__).parents[1] / "data" / "envs" / "cpu_only.json").read_text())

WORDS = st.sampled_from(["", "x", "passd", "passed", "failed", "inf", "-inf", "nan", "bfloat16"])
NEGATIVE = st.one_of(st.integers(-3, -1), st.floats(-1.0, -1e-9))
ODD = st.one_of(
    WORDS,
    WORDS,
    NEGATIVE,
    NEGATIVE,
    st.none(),
    st.booleans(),
    st.integers(0, 3),
    st.floats(allow_nan=False, allow_infinity=True),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.sampled_from(["a", "dtype"]), st.integers(), max_size=2),
)
PARITY = st.dictionaries(
    st.sampled_from(["dtype", "max_abs", "max_rel", "normwise", "rtol", "atol", "ok", "name", "extra"]), ODD, max_size=6
)
#: a plain record with some of its fields replaced by odd values, so most draws reach every check
RECORD = st.builds(
    lambda base, odd, drop: {k: v for k, v in {**base, **odd}.items() if k not in drop},
    st.fixed_dictionaries(
        {
            "nodeid": st.sampled_from(["t.py::a", "x"]),
            "feature": st.sampled_from(["operators/a", "f"]),
            "outcome": st.sampled_from(["passed", "failed", "not-installed"]),
        },
        optional={"parity": st.lists(PARITY, max_size=3), "suite": st.just("operators")},
    ),
    st.dictionaries(
        st.sampled_from(["nodeid", "feature", "suite", "outcome", "reason", "duration", "info", "parity", "extra"]),
        st.one_of(ODD, st.lists(PARITY, max_size=3)),
        min_size=1,
        max_size=2,
    ),
    st.sets(st.sampled_from(["nodeid", "feature", "outcome"]), max_size=1),
)


@settings(max_examples=1000, deadline=None)
@given(RECORD)
def test_the_fast_check_never_accepts_what_the_schema_rejects(record: dict[str, Any]) -> None:
    if plainly_valid(record):
        assert problem_by_jsonschema("report", record, "#/$defs/result") is None, record


def _report(results: list[Any]) -> dict[str, Any]:
    return {"schema": "pytest-rocm/report/1", "label": "x", "environment": ENV, "results": results}


PLAIN = {
    "nodeid": "t.py::test_a",
    "feature": "operators/a",
    "suite": "operators",
    "outcome": "passed",
    "reason": None,
    "duration": 0.01,
    "parity": [{"dtype": "float16", "max_abs": 1e-3, "max_rel": "inf", "normwise": None, "ok": True}],
    "info": {},
}


def test_the_plain_shape_every_writer_produces_takes_the_fast_path() -> None:
    assert plainly_valid(PLAIN)
    assert not plainly_valid({**PLAIN, "perf": {"median_s": 1.0, "reps": 3}})  # the schema decides


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"outcome": "passd"}, "results[1].outcome is 'passd', expected"),
        ({"duration": -1}, "results[1].duration"),
        ({"parity": [{"dtype": 3}]}, "results[1].parity[0].dtype is 3, expected string"),
        ({"parity": [{"max_abs": "big"}]}, "results[1].parity[0].max_abs is 'big', expected one of"),
        ({"perf": {"reps": 3}}, "results[1].perf: field 'median_s' is missing"),
    ],
)
def test_a_bad_record_is_named_by_the_schema_with_its_place(bad: dict[str, Any], message: str) -> None:
    second = {**PLAIN, "nodeid": "t.py::test_b", **bad}
    with pytest.raises(ReportError, match=r"^r\.json: " + message.replace("[", r"\[").replace("]", r"\]")):
        validate(_report([PLAIN, second]), "r.json")


def test_results_that_are_not_a_list_are_the_schemas_to_name() -> None:
    with pytest.raises(ReportError, match=r"results is 5, expected array"):
        validate(_report(5), "r.json")  # type: ignore[arg-type]
