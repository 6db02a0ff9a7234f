"""Every vet rule by id: one mapping built from one explicit tuple of the tables.

Nothing registers itself on import: the tables are plain tuples of data (``rules_cuda``,
``rules_deps``, ``rules_rocm`` and the readers' ``SAFETY_RULES``), and :func:`registry` joins
them here, refusing two rules with one id (the later one would silently replace the first).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType

from pytest_rocm.vet.rule import SAFETY_RULES, Rule
from pytest_rocm.vet.rules_cuda import CUDA_RULES
from pytest_rocm.vet.rules_deps import DEPS_RULES
from pytest_rocm.vet.rules_rocm import ROCM_RULES

#: the rules a scan matches against files (the safety rules are reported by the readers)
RULES: tuple[Rule, ...] = CUDA_RULES + DEPS_RULES + ROCM_RULES
#: every rule vet knows: what a finding's id may name
ALL_RULES: tuple[Rule, ...] = SAFETY_RULES + RULES


def registry(rules: Iterable[Rule]) -> Mapping[str, Rule]:
    """The rules by id, read-only; a ``ValueError`` naming the id when two rules share one."""
    by_id: dict[str, Rule] = {}
    for rule in rules:
        if rule.id in by_id:
            raise ValueError(f"vet rule id {rule.id!r} is defined twice")
        by_id[rule.id] = rule
    return MappingProxyType(by_id)


RULES_BY_ID: Mapping[str, Rule] = registry(ALL_RULES)
