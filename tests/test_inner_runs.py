"""In-process pytester runs in one process: what the tests' own conftest keeps across them."""

from __future__ import annotations

import importlib.util

import pytest

IMPORTS_BITSANDBYTES = """
def test_imports_bitsandbytes():
    import bitsandbytes  # registers its torch operators in this process

    assert bitsandbytes.__name__ == "bitsandbytes"
"""


def test_two_inner_runs_that_import_bitsandbytes_both_pass(pytester: pytest.Pytester) -> None:
    # without tests/conftest.py's early import the second run re-imports bitsandbytes after the
    # first run's snapshot dropped it, and torch refuses its operators a second time
    if importlib.util.find_spec("bitsandbytes") is None:  # not importorskip: that imports it here
        pytest.skip("bitsandbytes is not installed")
    pytester.makepyfile(test_bnb=IMPORTS_BITSANDBYTES)
    for _ in range(2):
        pytester.runpytest_inprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
