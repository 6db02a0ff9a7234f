"""The mutant check of the boundary suite: bug classes nobody wrote a row for are caught by its rows.

For a device-only mutant (tests/suites/boundary_mutants.py) the boundary rows of the family its
ops belong to run in the ``ci`` profile on the CPU (pytester, in process); at least one row must
fail, each failure must be a parity failure, and the control run (no mutant, every family) must have
no failure at all. Here: one mutant per kind of condition (a value pattern, a keyword with unequal
shapes, a layout, a keyword of pooling), so the check stays within CI's time; every mutant, in both
profiles, with the caught / tried figure: ``python benchmarks/bench_boundary_mutants.py``.
"""

from __future__ import annotations

import importlib
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
importlib.import_module("torch._dynamo")  # imported once, before pytester's runs (see test_operators.py)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from boundary_mutants import CONFTEST, MUTANTS  # noqa: E402

SUITE = Path(__file__).resolve().parents[2] / "suites" / "operators"
pytestmark = pytest.mark.timeout(900)


@pytest.fixture
def suite(pytester: pytest.Pytester) -> Path:
    target = pytester.path / "suites" / "operators"
    shutil.copytree(SUITE, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def run_boundary(pytester: pytest.Pytester, mutant: str, family: str | None) -> dict[str, dict[str, Any]]:
    (pytester.path / "conftest.py").write_text(CONFTEST.format(name=mutant))
    report = pytester.path / "report.json"
    select = ["-k", f"test_boundary and {family}/"] if family else []
    pytester.runpytest(
        "--rocm-device=cpu",
        "--rocm-scale=ci",
        "-p",
        "no:cacheprovider",
        f"--rocm-report={report}",
        "suites/operators/test_boundary.py",
        *select,
    )
    return {r["feature"]: r for r in json.loads(report.read_text())["results"]}


def test_without_a_mutant_no_boundary_row_fails(pytester: pytest.Pytester, suite: Path) -> None:
    records = run_boundary(pytester, "none", None)
    assert len(records) > 600
    failed = sorted(f for f, r in records.items() if r["outcome"] not in ("passed", "xfailed", "xpassed"))
    assert failed == []
    # an expected failure is only ever a known limit of the CPU backend, said in its reason
    expected = [r for r in records.values() if r["outcome"] in ("xfailed", "xpassed")]
    assert all(
        "known limit of the CPU backend" in (r.get("reason") or "") for r in expected if r["outcome"] == "xfailed"
    )
    assert all(r["info"]["dims"] and r["feature"].startswith("boundary/") for r in records.values())


#: one per kind of condition; the benchmark runs all of MUTANTS
IN_CI = ("gemm_fp16_ftz", "sdpa_causal_alignment", "elementwise_unaligned", "max_pool_ceil_mode")


@pytest.mark.parametrize("mutant", IN_CI)
def test_a_mutant_is_caught_by_a_generated_row(pytester: pytest.Pytester, suite: Path, mutant: str) -> None:
    family, source = MUTANTS[mutant]
    records = run_boundary(pytester, mutant, family)
    assert records and all(f.startswith(f"boundary/{family}/") for f in records)
    failed = {f: r for f, r in records.items() if r["outcome"] == "failed"}
    print(f"{mutant}: {len(failed)}/{len(records)} {family} rows fail ({source})")
    assert failed, f"{mutant} ({source}) was not caught by any {family} row"
    for feature, record in failed.items():
        assert any(not p["ok"] for p in record["parity"]), (feature, record["reason"])
