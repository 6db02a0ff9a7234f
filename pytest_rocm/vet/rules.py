"""The rule table of ``rocm-compat vet``: what counts as CUDA-only, what shows a ROCm path.

Rules are data: :class:`rule.Rule` says what one is (and how much the verdict makes of each
tier); the tables are by topic, in ``rules_cuda`` (CUDA sources, binaries, builds),
``rules_rocm`` (HIP and ROCm paths) and ``rules_deps`` (requirements, vendor libraries loaded at
run time, Python's CUDA assumptions, what a package builds on); ``registry`` joins them by id.
This module keeps the names the rest of vet imports.
"""

from __future__ import annotations

from pytest_rocm.vet.finding import Finding, safety_finding
from pytest_rocm.vet.kinds import (
    ARCHIVE,
    BINARY,
    BUILD,
    CUDA_SRC,
    METADATA,
    NATIVE,
    PYTHON,
    REQUIREMENTS,
    SUBMODULES,
    WHEEL,
    FileKind,
    kind_of,
)
from pytest_rocm.vet.registry import ALL_RULES, RULES, RULES_BY_ID
from pytest_rocm.vet.rule import (
    DERIVED,
    INCOMPLETE,
    NEEDED,
    PARTIAL,
    PATH,
    SAFETY,
    SAFETY_RULES,
    SECTION,
    SEVERITIES,
    TEXT,
    Context,
    Rule,
    Severity,
    Side,
    Subject,
    Tier,
)
from pytest_rocm.vet.rules_deps import ECOSYSTEM, GPU_LIBRARIES

__all__ = [
    "ALL_RULES",
    "ARCHIVE",
    "BINARY",
    "BUILD",
    "CUDA_SRC",
    "DERIVED",
    "ECOSYSTEM",
    "GPU_LIBRARIES",
    "INCOMPLETE",
    "METADATA",
    "NATIVE",
    "NEEDED",
    "PARTIAL",
    "PATH",
    "PYTHON",
    "REQUIREMENTS",
    "RULES",
    "RULES_BY_ID",
    "SAFETY",
    "SAFETY_RULES",
    "SECTION",
    "SEVERITIES",
    "SUBMODULES",
    "TEXT",
    "WHEEL",
    "Context",
    "FileKind",
    "Finding",
    "Rule",
    "Severity",
    "Side",
    "Subject",
    "Tier",
    "kind_of",
    "safety_finding",
]
