"""Findings held until the whole target is read: whether a vendored tree is built, or whether
the package's import loads a CUDA finding's sub-package or binary, is known only at the end."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from pytest_rocm.vet.finding import Finding
from pytest_rocm.vet.result import KEEP_PER_RULE, ScanResult
from pytest_rocm.vet.rule import Context, place_of

#: what a held group of findings is: (vendored tree or "", side, member path)
Key = tuple[str, str, str]
_OPTIONAL_WHY = {
    "optional-module": "a part of the package its own import does not load",
    "fallback": "loaded only inside a try whose except carries on",
    "opt-in": "loaded only by code the import path does not run",
}


class Held:
    """Findings whose weight is known only once the whole target is read: those in vendored
    trees (does the package build them?) and CUDA findings (does the package's import load
    their sub-package, their binary?). Bounded: KEEP_PER_RULE kept per group and rule, all counted."""

    def __init__(self) -> None:
        self.kept: dict[Key, list[Finding]] = {}
        self.counts: dict[Key, Counter[tuple[str, Context]]] = {}

    def hold(self, key: Key, finding: Finding) -> None:
        counts = self.counts.setdefault(key, Counter())
        counts[finding.rule, finding.context] += 1
        if counts[finding.rule, finding.context] <= KEEP_PER_RULE:
            self.kept.setdefault(key, []).append(finding)

    def release(self, context_of: Callable[[Key], tuple[Context, str]], result: ScanResult) -> None:
        for key, counts in self.counts.items():
            kept = self.kept.get(key, [])
            context, part = context_of(key)
            for f in kept:
                now = context if context and (context == "vendored" or not f.context) else f.context
                result.add(Finding(f.rule, f.path, f.line, f.text, "info" if now else f.severity, now))
            for (rule, was), n in counts.items():  # the ones beyond the kept examples
                now = context if context and (context == "vendored" or not was) else was
                extra = n - sum(1 for f in kept if f.rule == rule and f.context == was)
                counted = not now and place_of(kept[0].path) in ("runtime", "build")
                (result.counts if counted else result.mentions)[rule] += extra
                if now in _OPTIONAL_WHY and place_of(key[2]) == "runtime":  # named by the part its context comes from
                    result.optional_parts[f"{part if now == context else key[2]}: {_OPTIONAL_WHY[now]}"] += n
