"""pytest-rocm/workload/1 on load: a bad file is one line naming the file and the field, everywhere it is read."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_rocm.workload.schema import SCHEMA, WorkloadError, load_workload, validate
from pytest_rocm.workload.signature import row_name, signature_id, signature_text

TENSOR = {"shape": [8, 4], "stride": [1, 8], "offset": 0, "dtype": "float32", "device": "cuda", "requires_grad": False}


def signature(**changes: Any) -> dict[str, Any]:
    sig: dict[str, Any] = {
        "op": "aten.mm.default",
        "phase": "forward",
        "grad": False,
        "inplace": False,
        "autocast": None,
        "args": [{"tensor": dict(TENSOR)}, {"tensor": {**TENSOR, "shape": [4, 2], "stride": [2, 1]}}],
        "kwargs": {},
    }
    sig.update(changes)
    sig["id"] = signature_id(sig)
    sig["calls"] = 5
    sig["not_replayable"] = None
    return sig


def document(*signatures: dict[str, Any]) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "captured_on": {"torch": "2.6.0+cu124", "backend": "cuda", "device": "NVIDIA H100", "arch": "sm_90"},
        "signatures": list(signatures) or [signature()],
    }


def test_a_valid_document_loads(tmp_path: Path) -> None:
    path = tmp_path / "ops.json"
    path.write_text(json.dumps(document()))
    assert load_workload(path)["signatures"][0]["calls"] == 5


def test_the_id_is_independent_of_where_and_how_often_it_was_seen() -> None:
    a, b = signature(), signature()
    b["calls"], b["not_replayable"] = 99, "something"
    assert a["id"] == b["id"] and len(a["id"]) == 10
    assert signature(phase="backward")["id"] != a["id"]
    assert signature(kwargs={"alpha": {"value": 2}})["id"] != a["id"]


def test_the_readable_signature_shows_layouts_and_the_row_name_the_id() -> None:
    sig = signature(phase="backward")
    assert signature_text(sig) == "aten.mm.default(f32[8,4]{s=1,8}, f32[4,2]) [in backward]"
    assert row_name(sig) == f"workload/aten.mm.default[{sig['id']}]"


def _broken(path_in_doc: list[Any], value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(document())
    target = doc
    for key in path_in_doc[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path_in_doc[-1]]
    else:
        target[path_in_doc[-1]] = value
    return doc


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (["not", "an", "object"], "ops.json: expected a JSON object, got list"),
        (
            {"schema": "pytest-rocm/report/1"},
            "ops.json: schema is 'pytest-rocm/report/1', expected 'pytest-rocm/workload/1'",
        ),
        (_broken(["captured_on"], KeyError), "ops.json: document: field 'captured_on' is missing"),
        (
            _broken(["signatures", 0, "args", 0, "tensor", "shape", 1], -4),
            "ops.json: signatures[0].args[0].tensor.shape[1] is -4, expected at least 0",
        ),
        (
            _broken(["signatures", 0, "phase"], "sideways"),
            "ops.json: signatures[0].phase is 'sideways', expected one of",
        ),
        (_broken(["signatures", 0, "calls"], 0), "ops.json: signatures[0].calls is 0, expected at least 1"),
        (_broken(["signatures", 0, "op"], "mm"), "ops.json: signatures[0].op is 'mm', expected an op overload name"),
        (
            _broken(["signatures", 0, "args", 0, "tensor", "stride"], [1]),
            "ops.json: signatures[0].args[0].tensor: 2 sizes but 1 strides",
        ),
        (document(signature(), signature()), "ops.json: signature id"),
    ],
)
def test_a_bad_document_is_one_line_naming_the_field(doc: Any, message: str) -> None:
    with pytest.raises(WorkloadError) as info:
        validate(doc, "ops.json")
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


def test_a_file_that_is_not_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "ops.json"
    path.write_text('{"schema":\n  oops}')
    with pytest.raises(WorkloadError, match=r"ops.json: not valid JSON \(line 2, column 3"):
        load_workload(path)
    with pytest.raises(WorkloadError, match="no such file"):
        load_workload(tmp_path / "missing.json")


def test_the_plugin_and_the_cli_refuse_a_bad_file_in_one_line(pytester: pytest.Pytester) -> None:
    bad = pytester.path / "ops.json"
    bad.write_text(json.dumps(_broken(["signatures", 0, "grad"], "yes")))
    result = pytester.runpytest_subprocess(f"--rocm-workload={bad}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --rocm-workload: {bad}: signatures[0].grad is 'yes', expected boolean"])
    assert "Traceback" not in result.stderr.str()
    done = subprocess.run(
        [sys.executable, "-m", "pytest_rocm.cli", "run", "--workload", str(bad)], capture_output=True, text=True
    )
    assert done.returncode == 2
    assert done.stderr.strip() == f"rocm-compat run: --workload {bad}: signatures[0].grad is 'yes', expected boolean"


def test_the_environment_variable_and_the_ini_value_name_themselves(pytester: pytest.Pytester) -> None:
    bad = pytester.path / "ops.json"
    bad.write_text("[]")
    pytester.makeini(f"[pytest]\nrocm_workload = {bad}\n")
    result = pytester.runpytest_subprocess()
    result.stderr.fnmatch_lines([f"ERROR: rocm_workload in tox.ini: {bad}: expected a JSON object, got list"])
