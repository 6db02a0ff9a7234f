"""The JSON Schemas shipped in the package (data/schemas) agree with the code and the docs."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import jsonschema
import pytest

from pytest_rocm.env import schemas
from pytest_rocm.env.model import Device, Environment, SystemGpu, SystemInfo
from pytest_rocm.report.outcomes import OUTCOMES

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", sorted(schemas.SCHEMA_FILES))
def test_each_schema_is_a_valid_json_schema_and_published(name: str) -> None:
    document = schemas.schema(name)
    jsonschema.validators.validator_for(document).check_schema(document)
    assert schemas.SCHEMA_FILES[name].split("/")[-1] in (ROOT / "docs" / "design.md").read_text(encoding="utf-8")


def test_the_report_schema_lists_the_outcomes_of_the_code() -> None:
    result = schemas.schema("report")["$defs"]["result"]["properties"]
    assert tuple(result["outcome"]["enum"]) == OUTCOMES


def test_every_property_the_environment_schema_checks_is_a_field_of_the_model() -> None:
    """A schema property the model lacks would check a key nobody reads (a renamed field)."""
    defs = schemas.schema("environment")["$defs"]
    for key, cls in (
        ("environment", Environment),
        ("device", Device),
        ("system_gpu", SystemGpu),
        ("system", SystemInfo),
    ):
        names = {f.name for f in fields(cls)} | {"schema"}
        assert set(defs[key]["properties"]) <= names, key


@pytest.mark.parametrize("path", sorted((ROOT / "tests" / "data" / "envs").glob("*.json")), ids=lambda p: p.stem)
def test_every_recorded_environment_is_valid(path: Path) -> None:
    assert schemas.first_problem("environment", json.loads(path.read_text(encoding="utf-8"))) is None


@pytest.mark.parametrize("path", sorted((ROOT / "tests" / "data" / "report").glob("*.json")), ids=lambda p: p.stem)
def test_every_recorded_report_is_valid(path: Path) -> None:
    assert schemas.first_problem("report", json.loads(path.read_text(encoding="utf-8"))) is None


@pytest.mark.parametrize(
    ("value", "format_name", "ok"),
    [
        ("gfx1100", "gfx", True),
        ("gfx90a", "gfx", True),
        ("gfx11OO", "gfx", False),
        ("gfx١١00", "gfx", False),
        ("gfx١١00", "arch", False),
        ("gfx90a:xnack-", "gfx", False),
        ("gfx90a:sramecc+:xnack-", "arch", True),
        ("sm_90", "arch", True),
        (" gfx1100", "arch", False),
        ("2.6.0+rocm6.2.4", "pep440", True),
        ("6.2.3-122", "pep440", True),
        ("not.a.version", "pep440", False),
        (110000, "gfx-target-version", True),
        (90010, "gfx-target-version", True),
        (-1, "gfx-target-version", False),
        (999999999, "gfx-target-version", False),
    ],
)
def test_formats(value: object, format_name: str, ok: bool) -> None:
    check = {"gfx": schemas.is_gfx, "arch": schemas.is_arch, "pep440": schemas.is_pep440}.get(
        format_name, schemas.is_target_version
    )
    assert check(value) is ok


def _recorded(name: str) -> dict:
    return json.loads((ROOT / "tests" / "data" / "envs" / name).read_text())


@pytest.mark.parametrize("count", [1025, 10_000])
def test_a_list_too_long_says_so_however_long_it_is(count: int) -> None:
    """The recorded MI300X environment with its one device repeated: the line keeps its reason."""
    env = _recorded("mi300x_8.json")
    env["devices"] = [dict(env["devices"][0], index=i) for i in range(count)]
    problem = schemas.first_problem("environment", env)
    assert problem is not None and problem.endswith(f"({count} items): too long, at most 1024"), problem
    assert problem.startswith("devices is [") and len(problem) < 160


def test_the_rocm_env_option_shows_the_whole_reason(pytester: pytest.Pytester) -> None:
    env = _recorded("mi300x_8.json")
    env["devices"] = [dict(env["devices"][0], index=i) for i in range(10_000)]
    path = pytester.path / "huge.json"
    path.write_text(json.dumps(env))
    pytester.makepyfile(test_x="def test_a(): pass\n")
    result = pytester.runpytest(f"--rocm-env={path}", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    text = "\n".join(result.errlines + result.outlines)
    assert "(10000 items): too long, at most 1024" in text, text[-2000:]


def test_a_string_too_long_says_so() -> None:
    (error,) = jsonschema.Draft202012Validator({"maxLength": 200}).iter_errors("x" * 5000)
    line = schemas.describe(error)
    assert line.endswith("(5000 characters): too long, at most 200") and len(line) < 120, line
