"""The doctor's check ids are constants of ``doctor.ids``: every check is built with one, every
declared one is used, and what the doctor reports is one of them."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest_rocm
from pytest_rocm.doctor import ids
from pytest_rocm.doctor.checks import CHECKS, Extras
from pytest_rocm.doctor.render import known_errors
from pytest_rocm.env.model import Environment

PACKAGE = Path(pytest_rocm.__file__).parent
DECLARED = {name: value for name, value in vars(ids).items() if name.isupper() and isinstance(value, str)}


def _check_calls() -> list[tuple[str, ast.expr]]:
    """The first argument of every ``Check(...)`` in the package, with where it is."""
    calls = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Check":
                first = node.args[0] if node.args else next(k.value for k in node.keywords if k.arg == "id")
                calls.append((f"{path.relative_to(PACKAGE)}:{node.lineno}", first))
    return calls


def test_every_check_is_built_with_a_declared_constant() -> None:
    calls = _check_calls()
    assert len(calls) > 50
    spelled = [(where, ast.unparse(arg)) for where, arg in calls if not _is_declared(arg)]
    assert spelled == []  # a check id written as a string (or computed) instead of ids.NAME


def _is_declared(arg: ast.expr) -> bool:
    return (
        isinstance(arg, ast.Attribute)
        and isinstance(arg.value, ast.Name)
        and arg.value.id == "ids"
        and arg.attr in DECLARED
    )


def test_every_declared_id_is_used_once_and_listed() -> None:
    used = {arg.attr for _, arg in _check_calls() if isinstance(arg, ast.Attribute)}
    assert set(DECLARED) == used  # a declared id no check reports is a stale name
    assert len(set(DECLARED.values())) == len(DECLARED)  # two names for one id
    assert sorted(ids.CHECK_IDS) == sorted(DECLARED.values())


def test_the_checks_report_the_declared_ids_in_order() -> None:
    reported = tuple(check(Environment(), Extras()).id for check in CHECKS)
    assert reported == ids.CHECK_IDS


def test_known_errors_name_declared_checks() -> None:
    named = {e["check"] for e in known_errors() if e["check"]}
    assert named and named <= set(ids.CHECK_IDS)
