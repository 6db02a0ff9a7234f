"""What a finding is: a rule's match in one member of a target, and what the rule says of it."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_rocm.vet import registry
from pytest_rocm.vet.rule import Context, Place, Rule, Severity, place_of


@dataclass(frozen=True)
class Finding:
    rule: str
    path: str
    line: int | None
    text: str
    severity: Severity
    #: "comment", "optional", "vendored" (see Context) or "" for evidence
    context: Context = ""

    @property
    def spec(self) -> Rule:
        # read through the module, so a test can stand a rule of its own beside the tables
        return registry.RULES_BY_ID[self.rule]

    @property
    def place(self) -> Place:
        return place_of(self.path)

    @property
    def counts(self) -> bool:
        """Whether it is evidence for the verdict: not in a comment, an optional extra, a
        vendored tree or an opt-in path, and in the package's runtime code or build (its tests
        and examples say how it is tested and used, not what it is). Safety findings always count."""
        return not self.context and (self.spec.side == "safety" or self.place in ("runtime", "build"))

    def to_json(self) -> dict[str, object]:
        rule = self.spec
        return {
            "rule": self.rule,
            "path": self.path,
            "line": self.line,
            "text": self.text,
            "severity": self.severity,
            "side": rule.side,
            "tier": rule.tier,
            "context": self.context or None,
            "place": self.place,
            "message": rule.message,
        }


def safety_finding(rule: str, path: str, detail: str) -> Finding:
    return Finding(rule, path, None, detail, registry.RULES_BY_ID[rule].severity)
