"""Shared test setup. pytester is enabled through addopts in pyproject.toml."""

from __future__ import annotations

import atexit
import os
import subprocess
import sys
from pathlib import Path

import pytest

#: ../shared/fixtures/realworld copied data lives in tests/data (keep each file's # SOURCE line).
DATA = Path(__file__).parent / "data"

# The doctor asks PyTorch's index whether a torch build was published; the tests never reach out
# (a test that checks the look-up serves the index itself on loopback and clears this).
os.environ["PYTEST_ROCM_OFFLINE"] = "1"


@pytest.fixture
def data_dir() -> Path:
    return DATA


# -- triton's nanobind leak report -------------------------------------------------------------
# Tests that run the bundled triton suite in-process (pytester: tests/suites/test_libraries_checks.py)
# import triton inside the inner run; pytester then drops those modules from sys.modules, so Python's
# teardown never frees the objects of triton's native module (triton._C.libtriton, bound with
# nanobind), and nanobind prints ~30 lines of "nanobind: leaked N instances/types/functions" as the
# process ends, after pytest has finished. It is a report about interpreter shutdown, not a result
# and not a reference bug of ours, and triton offers no switch for it (nanobind's set_leak_warnings
# is C++ only). So at exit a process that loaded libtriton sends its stderr through a filter that
# drops exactly those lines and passes everything else on (PYTEST_ROCM_KEEP_NANOBIND_REPORT=1 keeps
# them).
NANOBIND_LINES = (
    "nanobind: leaked ",
    " - leaked ",
    " - ... skipped remainder",
    "nanobind: this is likely caused by a reference counting issue",
    "See https://nanobind.readthedocs.io/en/latest/refleaks.html",
)
FILTER = (
    "import sys\n"
    f"drop = {NANOBIND_LINES!r}\n"
    "for line in sys.stdin.buffer:\n"
    "    if not line.decode('utf-8', 'replace').startswith(drop):\n"
    "        sys.stdout.buffer.write(line)\n"
    "        sys.stdout.buffer.flush()\n"
)
_filters: list[subprocess.Popen[bytes]] = []  # kept: the filter outlives this process by a moment


def _libtriton_loaded() -> bool:
    """Whether triton's native library is in this process (pytester may have dropped the module
    from sys.modules: that is how its objects escape teardown), from the memory map on Linux."""
    try:
        with open(os.path.join(os.sep, "proc", "self", "maps"), encoding="utf-8", errors="replace") as maps:
            return any("libtriton" in line for line in maps)
    except OSError:
        return "triton._C.libtriton" in sys.modules


def _filter_stderr() -> None:
    sys.stderr.flush()
    read, write = os.pipe()
    _filters.append(subprocess.Popen([sys.executable, "-c", FILTER], stdin=read, stdout=2, close_fds=True))
    os.close(read)
    os.dup2(write, 2)  # the filter reads until this process exits and its stderr closes
    os.close(write)


def pytest_unconfigure(config: pytest.Config) -> None:
    # at exit, not now: pytest's own capture puts its saved stderr back after this hook
    if not os.environ.get("PYTEST_ROCM_KEEP_NANOBIND_REPORT") and _libtriton_loaded():
        atexit.register(_filter_stderr)
