"""The tolerance marker, the parity / parity_dtype fixtures and what they record (pytester)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from pytest_rocm.report.outcomes import PARITY_PROPERTY

#: plugins this suite does not need; loading them costs ~2 s per in-process run (no pyc cache there)
FAST = (
    "-p",
    "no:cacheprovider",
    "-p",
    "no:hypothesispytest",
    "-p",
    "no:anyio",
    "-p",
    "no:benchmark",
    "--rocm-device=cpu",
)

HEADER = """
import pytest, torch

X = torch.randn(500, generator=torch.Generator().manual_seed(0))

def identity(t):
    return t * 1

def off(t):
    return t * 1.005
"""


def _run(pytester: pytest.Pytester, body: str, *args: str) -> pytest.RunResult:
    pytester.makepyfile(test_it=HEADER + body)
    return pytester.runpytest(*FAST, *args)


def _parity_properties(reprec: pytest.HookRecorder) -> dict[str, list]:
    out = {}
    for rep in reprec.getreports("pytest_runtest_logreport"):
        if rep.when == "call" or (rep.when == "setup" and rep.skipped):
            out[rep.nodeid.split("::")[-1]] = [v for k, v in rep.user_properties if k == PARITY_PROPERTY]
    return out


@pytest.mark.parametrize(
    ("marker", "shown"),
    [
        ('"float17", rtol=1e-3', "unknown dtype 'float17'"),
        ('"float16", rtol=-0.1', "rtol=-0.1 must be a finite number >= 0"),
        ('"bfloat16", atol="tight"', "atol='tight' is not a number"),
        ('"float16", rtl=0.1', "unexpected keyword argument 'rtl'"),
        ('"float16"', "sets none of rtol, atol, normwise"),
    ],
)
def test_bad_tolerance_marker_is_a_collection_error_naming_test_and_value(pytester, marker, shown):
    result = _run(
        pytester,
        f"""
@pytest.mark.tolerance({marker})
def test_bad(parity):
    parity(identity, X)

def test_fine():
    pass
""",
    )
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*ERROR collecting test_it.py*", f"test_it.py::test_bad: tolerance(*{shown}*"])
    assert "Traceback" not in result.stdout.str()
    result.assert_outcomes(errors=1)  # a collection error: nothing ran


def test_marker_is_registered_for_strict_markers(pytester):
    result = _run(
        pytester,
        """
@pytest.mark.tolerance("float32", rtol=1e-2)
def test_marked():
    pass
""",
        "--strict-markers",
    )
    result.assert_outcomes(passed=1)


def test_marker_widens_and_call_kwargs_override_it(pytester):
    result = _run(
        pytester,
        """
def test_default(parity):
    parity(off, X, dtypes=("float32",), reference_fn=identity)

@pytest.mark.tolerance("float32", rtol=1e-2)
def test_marked(parity):
    parity(off, X, dtypes=("float32",), reference_fn=identity)

@pytest.mark.tolerance("float32", rtol=1e-2)
def test_call_wins(parity):
    parity(off, X, dtypes=("float32",), reference_fn=identity, rtol=1e-6)

@pytest.mark.tolerance("float32", rtol=1e-6)
class TestClass:
    @pytest.mark.tolerance("float32", rtol=1e-2)
    def test_closest_marker_wins(self, parity):
        parity(off, X, dtypes=("float32",), reference_fn=identity)
""",
    )
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(["FAILED *test_default*", "FAILED *test_call_wins*"])


def test_parity_records_every_call_even_when_failing(pytester):
    pytester.makepyfile(
        test_it=HEADER
        + """
def test_two_calls(parity):
    parity(identity, X, name="first")
    parity(off, X, dtypes=("float32",), reference_fn=identity, name="second")
"""
    )
    reprec = pytester.inline_run(*FAST)
    reprec.assertoutcome(failed=1)
    calls = _parity_properties(reprec)["test_two_calls"]
    assert [len(c) for c in calls] == [3, 1]
    assert [r["dtype"] for r in calls[0]] == ["float32", "float16", "bfloat16"]
    assert all(r["ok"] for r in calls[0]) and calls[0][0]["name"] == "first"
    assert calls[1][0]["ok"] is False and calls[1][0]["kind"] == "mismatch"


def test_parity_dtype_parametrizes_with_readable_ids(pytester):
    pytester.makepyfile(
        test_it=HEADER
        + """
def test_low(parity, parity_dtype):
    result = parity(identity, X)
    assert [c.dtype for c in result.comparisons] == [parity_dtype]
"""
    )
    result = pytester.runpytest(*FAST, "-v")
    result.stdout.fnmatch_lines(["*test_low[[]float16[]] PASSED*", "*test_low[[]bfloat16[]] PASSED*"])


def test_unsupported_dtype_skips_naming_op_dtype_and_backend(pytester):
    pytester.makepyfile(
        test_it=HEADER
        + """
def test_bessel(parity):
    parity(torch.special.bessel_j0, X.abs())
"""
    )
    reprec = pytester.inline_run(*FAST)
    reprec.assertoutcome(skipped=1)
    (rep,) = [r for r in reprec.getreports("pytest_runtest_logreport") if r.skipped]
    reason = rep.longrepr[2]
    assert "bessel_j0: dtype float16, bfloat16 not supported on cpu" in reason
    assert "not implemented for 'Half'" in reason
    # the dtype that did run is still recorded
    assert [r["dtype"] for k, v in rep.user_properties if k == PARITY_PROPERTY for r in v] == ["float32"]


def test_parity_uses_the_device_under_test(pytester):
    result = _run(
        pytester,
        """
def test_device(parity):
    assert str(parity(identity, X, dtypes=("float32",)).device) == "cpu"
    assert str(parity.device) == "cpu"
""",
    )
    result.assert_outcomes(passed=1)


def test_parity_skips_with_the_device_reason_when_there_is_no_device(pytester):
    pytester.makepyfile(
        test_it=HEADER
        + """
def test_device(parity):
    parity(identity, X)
"""
    )
    result = pytester.runpytest(*FAST[:-1], "-rs", "--rocm-gfx=gfx1100")  # a plan: no device here
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*plan for*gfx1100*"])


def test_bad_marker_on_a_class_is_found_for_its_methods(pytester):
    result = _run(
        pytester,
        """
@pytest.mark.tolerance("float16", atol=float("nan"))
class TestOps:
    @pytest.mark.parametrize("n", [1, 2])
    def test_op(self, n):
        pass
""",
    )
    result.stdout.fnmatch_lines(
        [
            "test_it.py::TestOps::test_op[[]1[]]: tolerance(*atol=nan*",
            "test_it.py::TestOps::test_op[[]2[]]: tolerance(*atol=nan*",
        ]
    )
    result.assert_outcomes(errors=2)  # one per test the class marker reaches


def test_a_direct_assert_parity_call_is_recorded_like_the_fixtures(pytester):
    # a suite that calls pytest_rocm.assert_parity itself (not through the fixture) must not
    # leave "parity": [] in the report
    pytester.makepyfile(
        test_it=HEADER
        + """
from pytest_rocm import assert_parity

def test_direct():
    assert_parity(identity, X, dtypes=("float32", "float16"), device="cpu", name="direct")

def test_direct_failing():
    assert_parity(off, X, dtypes=("float32",), device="cpu", reference_fn=identity, name="off")

def test_none():
    pass
"""
    )
    reprec = pytester.inline_run(*FAST)
    reprec.assertoutcome(passed=2, failed=1)
    props = _parity_properties(reprec)
    assert [[r["dtype"] for r in call] for call in props["test_direct"]] == [["float32", "float16"]]
    assert props["test_direct"][0][0]["name"] == "direct"
    assert [call[0]["ok"] for call in props["test_direct_failing"]] == [False]
    assert props["test_none"] == []  # a listener of one test never hears another's calls
