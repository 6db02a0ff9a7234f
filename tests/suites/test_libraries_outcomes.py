"""A library that is absent, raises on import, crashes the process, or returns wrong numbers each
ends up as the right outcome in the compatibility report, with a reason that says why.

The library suites' conftest and helper run as they ship (copied from suites/libraries); the
libraries are small fake packages written here."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest

SUITE = Path(__file__).resolve().parents[2] / "suites" / "libraries"

FAKES = {
    "brokenlib": "raise ImportError('libamdhip64.so.6: cannot open shared object file: No such file or directory')\n",
    "crashlib": "import os\nos.abort()  # what a segfaulting extension does to the process\n",
    "fakeblas": textwrap.dedent(
        """
        __version__ = "0.0.1"

        def matmul(a, b):
            return (a @ b) * 1.01  # off by 1%: the kind of bug parity checks exist for

        def good_matmul(a, b):
            return a @ b
        """
    ),
}

TESTS = textwrap.dedent(
    """
    import pytest
    import torch
    from _library_support import import_library

    A = torch.randn(24, 40, generator=torch.Generator().manual_seed(0))
    B = torch.randn(40, 16, generator=torch.Generator().manual_seed(1))

    @pytest.mark.library("absentlib", "accelerated-port")
    def test_absent():
        import_library("absentlib", "absentlib")

    @pytest.mark.library("brokenlib", "accelerated-port")
    def test_raises_on_import():
        import_library("brokenlib", "brokenlib")

    @pytest.mark.library("fakeblas", "accelerated-port")
    @pytest.mark.parametrize("dtype", ["float32"])
    def test_matmul(parity, dtype):
        fakeblas = import_library("fakeblas", "fakeblas")
        parity(fakeblas.matmul, A, B, dtypes=(dtype,), reference_fn=torch.matmul, name="fakeblas matmul")

    @pytest.mark.library("fakeblas", "accelerated-port")
    def test_good_matmul(parity):
        fakeblas = import_library("fakeblas", "fakeblas")
        parity(fakeblas.good_matmul, A, B, dtypes=("float32",), reference_fn=torch.matmul)
    """
)

CRASH_TESTS = textwrap.dedent(
    """
    import pytest
    from _library_support import import_library

    @pytest.mark.library("crashlib", "cuda-only")
    def test_crashes_on_import():
        import_library("crashlib", "crashlib")

    @pytest.mark.library("fakeblas", "accelerated-port")
    def test_runs_after_the_crash():
        assert import_library("fakeblas", "fakeblas").__version__ == "0.0.1"
    """
)


def make_suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tests: str) -> Path:
    """suites/libraries as shipped (conftest + helper), one test module, fake packages on the path."""
    suite = pytester.path / "suites" / "libraries"
    suite.mkdir(parents=True)
    for name in ("conftest.py", "_library_support.py"):
        shutil.copy(SUITE / name, suite / name)
    (suite / "test_fakes.py").write_text(tests)
    fakes = pytester.path / "fakes"
    for name, body in FAKES.items():
        (fakes / name).mkdir(parents=True)
        (fakes / name / "__init__.py").write_text(body)
    # fakeblas is a real (if tiny) distribution: the report takes versions from metadata
    dist_info = fakes / "fakeblas-0.0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: fakeblas\nVersion: 0.0.1\n")
    monkeypatch.syspath_prepend(str(fakes))
    monkeypatch.setenv("PYTHONPATH", str(fakes))
    # the suite conftest sets these for the run; keep them from leaking out of this test
    for var in ("TRITON_INTERPRET", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.setenv(var, "1")
    return suite


def results_by_test(report: Path) -> dict[str, dict[str, Any]]:
    data = json.loads(report.read_text())
    return {r["nodeid"].split("::", 1)[1]: r for r in data["results"]}


def test_absent_broken_and_wrong_libraries_get_their_outcomes(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("torch")
    make_suite(pytester, monkeypatch, TESTS)
    result = pytester.runpytest("--rocm-device=cpu", "--rocm-report=report.json", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=2, skipped=1)
    rows = results_by_test(pytester.path / "report.json")

    absent = rows["test_absent"]
    assert absent["outcome"] == "not-installed"
    assert "absentlib" in absent["reason"] and "found no module 'absentlib'" in absent["reason"]

    broken = rows["test_raises_on_import"]
    assert broken["outcome"] == "failed"
    assert (
        "brokenlib" in broken["reason"] and "is installed but `import brokenlib` raised ImportError" in broken["reason"]
    )
    assert "libamdhip64.so.6" in broken["reason"]

    wrong = rows["test_matmul[float32]"]
    assert wrong["outcome"] == "failed" and "mismatch" in wrong["reason"]
    assert wrong["feature"] == "libraries/accelerated-port/fakeblas/matmul[float32]"
    assert wrong["info"] == {"library": "fakeblas", "class": "accelerated-port", "version": "0.0.1"}
    assert [p["ok"] for p in wrong["parity"]] == [False]
    assert wrong["parity"][0]["max_rel"] == pytest.approx(0.01, rel=1e-3)

    # the same harness passes the same op computed right: the failure is the 1%, nothing else
    assert rows["test_good_matmul"]["outcome"] == "passed"


def test_a_library_that_crashes_the_process_is_crashed_and_the_run_goes_on(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("xdist")
    make_suite(pytester, monkeypatch, CRASH_TESTS)
    result = pytester.runpytest_subprocess(
        "-p",
        "xdist",
        "-n",
        "1",
        "--max-worker-restart=2",
        "-p",
        "no:cacheprovider",
        "--rocm-device=cpu",
        "--rocm-report=report.json",
    )
    # xdist's own account of it
    result.stdout.fnmatch_lines(["*worker 'gw0' crashed while running*test_crashes_on_import*"])
    rows = results_by_test(pytester.path / "report.json")
    crashed = rows["test_crashes_on_import"]
    assert crashed["outcome"] == "crashed"
    assert "crashed" in crashed["reason"]
    assert crashed["feature"] == "libraries/cuda-only/crashlib/crashes_on_import"
    # the replacement worker finishes the table
    assert rows["test_runs_after_the_crash"]["outcome"] == "passed"
