"""The vet rules are data: keyword-only frozen records, and one explicit registry by id."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import pkgutil
from pathlib import Path

import pytest

import pytest_rocm.vet
from pytest_rocm.vet import registry
from pytest_rocm.vet.rule import SAFETY_RULES, Rule

VET = Path(pytest_rocm.vet.__file__).parent


def _vet_modules() -> list[str]:
    return [f"pytest_rocm.vet.{m.name}" for m in pkgutil.iter_modules([str(VET)])]


def _rules_in(value: object) -> list[Rule]:
    if isinstance(value, Rule):
        return [value]
    if isinstance(value, tuple | list | frozenset | set):
        return [r for item in value for r in _rules_in(item)]
    return []


def test_a_rule_is_built_by_keyword_only_and_cannot_change() -> None:
    with pytest.raises(TypeError):
        Rule("x", "text", "a", "cuda", "source", "error", "m")  # type: ignore[misc]
    rule = Rule(id="x", subject="text", pattern="a", side="cuda", tier="source", severity="error", message="m")
    with pytest.raises(dataclasses.FrozenInstanceError):
        rule.id = "y"  # type: ignore[misc]


def test_the_registry_refuses_two_rules_with_one_id() -> None:
    rule = registry.RULES_BY_ID["cuda-runtime-api"]
    with pytest.raises(ValueError, match="'cuda-runtime-api' is defined twice"):
        registry.registry((*registry.ALL_RULES, dataclasses.replace(rule, message="another")))


def test_rule_ids_are_unique_and_the_registry_is_read_only() -> None:
    ids = [r.id for r in registry.ALL_RULES]
    assert len(ids) == len(set(ids)) == len(registry.RULES_BY_ID)
    with pytest.raises(TypeError):
        registry.RULES_BY_ID["new"] = registry.ALL_RULES[0]  # type: ignore[index]


def test_every_rule_defined_anywhere_in_vet_is_registered() -> None:
    """A rule left out of the registry's tuple would never be scanned for, and a finding naming it
    would fail to render: every Rule a vet module holds (by name or in a table) is the registered
    one, and the source holds no ``Rule(...)`` beyond those in the tables and the safety rules."""
    seen = 0
    for name in _vet_modules():
        for value in vars(importlib.import_module(name)).values():
            for rule in _rules_in(value):
                assert registry.RULES_BY_ID.get(rule.id) is rule, f"{name}: rule {rule.id!r} is not registered"
                seen += 1
    assert seen
    calls = 0
    for path in VET.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Rule":
                assert not node.args, f"{path.name}:{node.lineno}: Rule(...) with positional arguments"
                calls += path.name != "rule.py"  # rule.py's one call builds every safety rule
    assert calls + len(SAFETY_RULES) == len(registry.ALL_RULES)


def test_every_rule_id_the_code_writes_is_registered() -> None:
    """A finding made by id (``safety_finding("unreadable", ...)``, ``Finding("cuda-jit-...", ...)``)
    names a registered rule: its ``spec`` looks the id up."""
    written: set[tuple[str, str]] = set()
    for path in VET.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("Finding", "safety_finding")
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                written.add((f"{path.name}:{node.lineno}", node.args[0].value))
    assert written
    assert [w for w in written if w[1] not in registry.RULES_BY_ID] == []
