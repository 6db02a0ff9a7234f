"""Property: the environment and report loaders, fed random and mutated JSON, give a valid
object or their one-line error, never anything else (issue 19)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_rocm.env.model import Environment, EnvironmentFileError
from pytest_rocm.env.textfile import UserFileError, parse_json
from pytest_rocm.report.load import ReportError, validate

DATA = Path(__file__).resolve().parents[1] / "data"
ENV = json.loads((DATA / "envs" / "mi300x_8.json").read_text(encoding="utf-8"))
REPORT = json.loads((DATA / "report" / "gfx1100.json").read_text(encoding="utf-8"))

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["gfx1100", "gfx11OO", "2.6.0+rocm6.2.4", "banana", "inf", "nan", "passed", "-1", "٣"]),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=20,
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside a document (to pick one to mutate)."""
    out = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            out += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out += _paths(value, (*prefix, i))
    return out


@st.composite
def mutated(draw: st.DrawFn, base: dict[str, Any]) -> Any:
    """The valid document with one to three values replaced, deleted or duplicated."""
    document = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(document) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent: Any = document
        for part in path[:-1]:
            parent = parent[part]
        action = draw(st.sampled_from(["replace", "delete", "copy-sibling"]))
        if action == "delete" and isinstance(parent, dict):
            del parent[path[-1]]
        elif action == "copy-sibling" and isinstance(parent, list) and parent:
            parent.append(copy.deepcopy(parent[0]))
        else:
            parent[path[-1]] = draw(json_values)
    return document


def _one_line(error: Exception, prefix: str = "") -> None:
    text = str(error)
    assert text.startswith(prefix) and "\n" not in text and len(text) < 600, text


def check_environment(document: Any) -> None:
    try:
        env = Environment.from_dict(copy.deepcopy(document), "rec.json")
    except EnvironmentFileError as exc:
        _one_line(exc, "rec.json: ")
        return
    # what loaded is a usable Environment: it writes back out and loads again the same
    assert isinstance(env, Environment)
    assert Environment.from_dict(json.loads(env.to_json()), "again") == env


def check_report(document: Any) -> None:
    try:
        report = validate(copy.deepcopy(document), "r.json")
    except ReportError as exc:
        _one_line(exc, "r.json: ")
        return
    assert isinstance(report["label"], str) and report["label"]
    assert len({r["nodeid"] for r in report["results"]}) == len(report["results"])
    assert all(isinstance(r["suite"], str) for r in report["results"])


FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(json_values)
def test_random_json_to_the_environment_loader(document: Any) -> None:
    check_environment(document)


@FAST
@given(mutated(ENV))
def test_mutated_environment(document: Any) -> None:
    check_environment(document)


@pytest.mark.parametrize("field", ["schema", "backend"])
def test_a_huge_wrong_value_is_cut_short_in_the_error(field: str) -> None:
    # what hypothesis drew once (not every run): a nested value whose repr ran to thousands of
    # characters, all of it in the one-line error
    document = copy.deepcopy(ENV)
    document[field] = [{"k" * 50: ["v" * 50] * 20}] * 20
    check_environment(document)


@FAST
@given(json_values)
def test_random_json_to_the_report_loader(document: Any) -> None:
    check_report(document)


@FAST
@given(mutated(REPORT))
def test_mutated_report(document: Any) -> None:
    check_report(document)


@FAST
@given(st.binary(max_size=200) | st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")))
def test_random_bytes_to_the_json_reader(raw: bytes) -> None:
    """Bytes as a file would hold them: decoded and parsed, or one line saying why not."""
    try:
        data = parse_json(raw.decode("utf-8"), "f.json")
    except UnicodeDecodeError:
        return  # read_text's decode is tested with real files in tests/cli/test_bad_inputs.py
    except UserFileError as exc:
        _one_line(exc)
        return
    check_environment(data)
    check_report(data)
