"""The report's names and vocabularies: one of each, public where tests and suites need them."""

from __future__ import annotations

import subprocess
import sys
from typing import get_args

import pytest_rocm
from pytest_rocm.parity import tolerances
from pytest_rocm.report import outcomes
from pytest_rocm.table.model import STATUSES, Cell, Status


def test_info_property_and_not_installed_helpers_are_public() -> None:
    assert pytest_rocm.INFO_PROPERTY == outcomes.INFO_PROPERTY == "rocm_info"
    assert pytest_rocm.not_installed_reason("flash_attn", "needs >=2.6") == "not installed: flash_attn (needs >=2.6)"
    assert {"INFO_PROPERTY", "not_installed_reason", "skip_not_installed"} <= set(pytest_rocm.__all__)


def test_the_public_names_import_neither_pytest_nor_torch() -> None:
    code = (
        "import sys\n"
        "from pytest_rocm import INFO_PROPERTY, not_installed_reason, skip_not_installed\n"
        "print(sorted(m for m in ('pytest', '_pytest', 'torch') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_outcomes_and_statuses_are_their_literal_types() -> None:
    assert get_args(outcomes.Outcome) == outcomes.OUTCOMES
    assert outcomes.OUTCOMES[0] == "passed" and "not-installed" in outcomes.OUTCOMES
    assert get_args(Status) == STATUSES


def test_the_table_prints_the_dtype_table_s_short_names() -> None:
    errors = {name: 1e-3 for name in tolerances.DTYPE_NAMES}
    assert Cell("passed", None, errors).figure() == "fp64 1.0e-03 fp32 1.0e-03 fp16 1.0e-03 bf16 1.0e-03"
    assert Cell("passed", None, {"int8": 0.5}).figure() == "int8 5.0e-01"  # unknown names stay
    for name, short in tolerances.DTYPE_SHORT.items():
        assert tolerances.canonical_dtype(short) == name  # every short name is also an alias
    assert set(tolerances.DEFAULT_DTYPES) | set(tolerances.LOW_PRECISION_DTYPES) <= set(tolerances.DTYPE_NAMES)
