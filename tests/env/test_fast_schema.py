"""The compiled schema checks (``env.fastschema``) give jsonschema's verdict: valid documents
and every mutation of them, field by field (wrong types, odd values, a field removed, one added),
are accepted or rejected by both alike, so the two cannot drift when a schema changes."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from packaging.version import Version

from pytest_rocm.env import schemas
from pytest_rocm.env.fastschema import Compiler

DATA = Path(__file__).resolve().parents[1] / "data"

#: values put in place of each field: every JSON type, the bounds the schemas name, and strings
#: that pass or fail each format and pattern
ODD: list[Any] = [
    None,
    True,
    False,
    0,
    1,
    -1,
    1.0,
    0.5,
    -0.5,
    1023,
    1024,
    65535,
    65536,
    2**64,
    1125899906842625,
    float("nan"),
    "",
    "x",
    " x",
    "inf",
    "nan",
    "passed",
    "ci",
    "rocm",
    "cpu",
    "forward",
    "gfx1100",
    "gfx90a:xnack-",
    "GFX1100",
    "sm_90",
    "2.6.0+rocm6.2.4",
    "6.2.4-116",
    "6.2.41134-65d174c3e",
    "1.0.0-rc.1",
    "m-0123456789abcdef",
    "m-0123456789abcdef\n",
    "aten.mm.default",
    "abcdef",
    "float32",
    [],
    ["x"],
    [1],
    [{}],
    {},
    {"a": 1},
    {"a": None},
    {"tensor": 1},
    110000,
]


def _listed(node: Any) -> Iterator[str]:
    """Every property name a schema lists, at any depth."""
    if isinstance(node, dict):
        yield from node.get("properties", {}) if isinstance(node.get("properties"), dict) else ()
        for value in node.values():
            yield from _listed(value)
    elif isinstance(node, list):
        for value in node:
            yield from _listed(value)


#: names added to each object that lacks them: every name a schema lists, and one none does
NAMES = sorted({key for name in schemas.SCHEMA_FILES for key in _listed(schemas.schema(name))} | {"extra"})


def _shrunk(document: Any, limit: int) -> Any:
    """Lists cut to ``limit`` items: every shape of item stays, the mutations stay few."""
    if isinstance(document, dict):
        return {k: _shrunk(v, limit) for k, v in document.items()}
    if isinstance(document, list):
        return [_shrunk(v, limit) for v in document[:limit]]
    return document


def _paths(node: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield at
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*at, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _paths(value, (*at, i))


def _get(node: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        node = node[part]
    return node


def mutations(document: Any) -> Iterator[Any]:
    """The document with one change: each field replaced by each odd value, each key of an
    object removed, each listed name added to each object."""
    for path in _paths(document):
        target = _get(document, path[:-1]) if path else None
        for value in ODD:
            if path:
                changed = copy.deepcopy(document)
                _get(changed, path[:-1])[path[-1]] = value
                yield changed
            else:
                yield value
        if path and isinstance(target, dict):
            changed = copy.deepcopy(document)
            del _get(changed, path[:-1])[path[-1]]
            yield changed
        node = _get(document, path)
        if isinstance(node, dict):
            for name in NAMES:
                if name not in node:
                    for value in (None, "x", {}):  # wrong for every name somewhere
                        changed = copy.deepcopy(document)
                        _get(changed, path)[name] = value
                        yield changed


def _workload() -> dict[str, Any]:
    tensor = {"shape": [2, 3], "stride": [3, 1], "offset": 0, "dtype": "float32", "device": "cuda"}
    signature = {
        "id": "abcdef12",
        "op": "aten.mm.default",
        "phase": "forward",
        "grad": False,
        "autocast": {"device_type": "cuda", "dtype": "float16"},
        "args": [{"tensor": tensor}, {"list": [{"float": "inf"}, {"complex": [1.0, 2.0]}]}],
        "kwargs": {"alpha": {"opaque": "1"}},
        "calls": 5,
    }
    return {
        "schema": "pytest-rocm/workload/1",
        "captured_on": {"torch": "2.6.0", "backend": "cuda"},
        "signatures": [signature],
    }


def _report_with_every_field() -> dict[str, Any]:
    report = _shrunk(json.loads((DATA / "report" / "cpu_run.json").read_text()), 2)
    devices = json.loads((DATA / "envs" / "mi210_4.json").read_text())["devices"][:1]  # across the $ref
    report["environment"] = {"schema": "pytest-rocm/environment/1", "torch": "2.6.0", "devices": devices}
    report["machine"] = {"id": "m-0123456789abcdef", "basis": "1002:740f gfx90a", "host": "node1"}
    report["tool"] = {"name": "pytest-rocm", "version": "1.0"}
    report["selection"] = {"args": ["suites"], "keyword": None, "markers": "x", "deselected": 2}
    perf = {"median_s": 0.1, "reps": 3, "work": {"flops": 1e9}, "peak": 1.0, "discarded": 1, "unit": "GB/s"}
    report["results"] = [
        {**report["results"][0], "perf": perf, "device_variant": "cuda"},
        {"nodeid": "t.py::a", "feature": "f", "outcome": "passed", "parity": [{"dtype": "float16", "max_rel": "inf"}]},
    ]
    return report


CASES: list[tuple[str, str, Any]] = [
    ("environment", "", _shrunk(json.loads((DATA / "envs" / name).read_text()), 1))
    for name in ("mi210_4.json", "rx6700xt_override.json", "nvidia_cuda.json")
]
CASES += [
    ("report", "", _report_with_every_field()),
    ("report", "/$defs/result", _report_with_every_field()["results"][0]),
    ("workload", "", _workload()),
]


@pytest.mark.parametrize(("name", "pointer", "document"), CASES, ids=lambda c: c if isinstance(c, str) else "")
def test_the_fast_check_and_jsonschema_agree_on_every_mutation(name: str, pointer: str, document: Any) -> None:
    assert schemas.conforms(name, document, pointer), "the unchanged document is valid"
    tried = rejected = 0
    for changed in mutations(document):
        expected = schemas.problem_by_jsonschema(name, changed, "#" + pointer) is None
        assert schemas.conforms(name, changed, pointer) == expected, changed
        tried, rejected = tried + 1, rejected + (not expected)
    assert rejected > tried // 10, "the mutations reach the checks"  # most odd values are wrong somewhere


@given(st.from_regex(schemas._PLAIN_VERSION_RE, fullmatch=True))
def test_a_version_the_plain_pattern_takes_is_pep_440(text: str) -> None:
    Version(text)  # raises InvalidVersion for a string that is not


@pytest.mark.parametrize("keyword", [{"oneOf": [{}]}, {"patternProperties": {}}, {"items": [{}]}, {"enum": [1]}])
def test_a_keyword_outside_the_subset_is_refused_when_compiled(keyword: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"not supported|only strings"):
        Compiler({"s": {"type": "object", "properties": {"a": keyword}}}, {}).compile("s")


def test_reading_valid_reports_and_environments_never_imports_jsonschema_or_packaging() -> None:
    """What the fast checks are for: 0.5 G instructions of imports for each table or diff."""
    code = (
        "import sys, glob\n"
        "from pytest_rocm.report.load import load_report\n"
        "from pytest_rocm.env.model import Environment\n"
        f"[load_report(p) for p in glob.glob({str(DATA / 'report' / '*.json')!r})]\n"
        f"[Environment.load(p) for p in glob.glob({str(DATA / 'envs' / '*.json')!r})]\n"
        "print(sorted(m for m in ('jsonschema', 'packaging', 'referencing') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
