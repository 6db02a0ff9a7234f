"""``rocm-compat vet TARGET [--json] [--run]``: can we adopt this library on AMD?

A static scan of an installed distribution, a wheel, an sdist or a source folder (read as bytes,
never imported or built) for CUDA-only constructs and for signs of a ROCm path, a verdict (class
1-4 with the evidence and next steps), and with ``--run`` a live check here whose records fit the
compatibility report. Exit 0 when the scan ran (whatever the class), 2 on bad input.
"""

from __future__ import annotations

from pytest_rocm.vet.result import ScanResult
from pytest_rocm.vet.rules import RULES, Finding, Rule
from pytest_rocm.vet.scan import scan
from pytest_rocm.vet.sources import open_target
from pytest_rocm.vet.target import BadTarget, Limits, Target
from pytest_rocm.vet.verdict import Verdict, decide

__all__ = [
    "RULES",
    "BadTarget",
    "Finding",
    "Limits",
    "Rule",
    "ScanResult",
    "Target",
    "Verdict",
    "decide",
    "open_target",
    "scan",
    "vet",
]


def vet(spec: str, limits: Limits | None = None) -> tuple[Target, ScanResult, Verdict]:
    """Scan and judge one target (raises BadTarget on bad input)."""
    target = open_target(spec, limits)
    result = scan(target)
    if result.files == result.not_read and not result.findings:  # a verdict about nothing would read "pure Python"
        raise BadTarget(f"{spec}: empty {target.origin}, nothing to scan")
    return target, result, decide(target, result)
