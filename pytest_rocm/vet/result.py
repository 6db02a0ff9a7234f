"""What a scan found: :class:`ScanResult`, the findings (a bounded number kept per rule, all
counted) and what the verdict needs beside them (binaries by side, gfx targets, optional parts)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from pytest_rocm.vet.finding import Finding
from pytest_rocm.vet.ggml import GgmlEvidence

#: findings kept per (rule, context); all matches are counted
KEEP_PER_RULE = 200
#: paths of members not read that the report names (all are counted)
KEEP_NOT_READ = 10


@dataclass
class ScanResult:
    findings: list[Finding] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)  # evidence matches per rule
    mentions: Counter[str] = field(default_factory=Counter)  # comment/optional/vendored matches per rule
    files: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0
    #: binaries by what they were built for (NEEDED libraries and fatbin sections): the
    #: evidence of what was built, which outranks what header text says could be built
    cuda_binaries: set[str] = field(default_factory=set)
    rocm_binaries: set[str] = field(default_factory=set)
    #: CUDA-built binaries on an optional path (a fallback or opt-in load): not what the import
    #: loads, but still what was built, so HIP text next to them is no ROCm path either
    optional_cuda_binaries: set[str] = field(default_factory=set)
    #: why the package is its own optional CUDA path (:mod:`purpose`): "" when it is not, None
    #: when no CUDA finding asked
    purpose: str | None = None
    #: AMD code-object targets per binary (``amdgcn-amd-amdhsa--gfx1100``), from HIP fatbins
    gfx_targets: dict[str, list[str]] = field(default_factory=dict)
    gfx_notes: dict[str, str] = field(default_factory=dict)  # what could not be read of them
    #: vendored trees whose findings did not count (the package does not build them)
    vendored_unbuilt: set[str] = field(default_factory=set)
    #: members whose kind no rule reads (docs, data, licences, a script without a suffix): how
    #: many, and the first ``KEEP_NOT_READ`` paths, so the report says what the verdict did not see
    not_read: int = 0
    not_read_examples: list[str] = field(default_factory=list)
    #: CUDA findings in optional code, by the part they are in ("numba/cuda/: a sub-package the
    #: package's import does not load"): a caveat, not the verdict
    optional_parts: Counter[str] = field(default_factory=Counter)
    #: CUDA/ROCm findings in the package's tests and examples (not counted), by place, and the first
    elsewhere: Counter[str] = field(default_factory=Counter)
    elsewhere_first: dict[str, str] = field(default_factory=dict)
    #: which backends a GGML build (llama.cpp and what vendors it) can target or ships
    ggml: GgmlEvidence = field(default_factory=GgmlEvidence)

    def add(self, finding: Finding) -> None:
        tally = self.counts if finding.counts else self.mentions
        tally[finding.rule] += 1
        if not finding.context and finding.spec.side in ("cuda", "rocm") and not finding.counts:
            self.elsewhere[finding.place] += 1
            self.elsewhere_first.setdefault(finding.place, finding.path)
        if tally[finding.rule] <= KEEP_PER_RULE:
            self.findings.append(finding)
