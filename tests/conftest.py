"""Shared test setup. pytester is enabled through addopts in pyproject.toml."""

from __future__ import annotations

import atexit
import importlib
import importlib.util
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


# -- the fast loop: `pytest -m "not slow"` ------------------------------------------------------
# As pytest's own testing/conftest.py does, a test is marked `slow` by what it uses, not by hand:
# every test that takes the `pytester` fixture (an inner pytest run, in-process or not) and every
# test whose body starts a process (subprocess, sys.executable). A hand-kept list drifts: 42
# `time.sleep`s sat in unmarked tests when 7 were marked by hand. A test that asserts on the time
# something took, or races another process, is `timing` (load-sensitive): `-m "not timing"` leaves
# them out on a loaded machine.
PROCESS_NAMES = frozenset({"subprocess", "Popen", "executable", "runpytest_subprocess", "spawn", "fork"})


TESTS = Path(__file__).parent


def _is_test_helper(thing: object) -> bool:
    module = sys.modules.get(getattr(thing, "__module__", "") or "")
    return module is not None and str(getattr(module, "__file__", "")).startswith(str(TESTS))


def _names_used(function: object, seen: set[int]) -> set[str]:
    """The global and attribute names a test's body uses, and those of the helpers it calls that
    live in tests/ (functions, and classes by their methods; followed to any depth, each once):
    `_run(pytester, ...)` or a `Run(tmp_path)` that starts a process starts one for the test."""
    code = getattr(function, "__code__", None)
    if code is None or id(code) in seen:
        return set()
    seen.add(id(code))
    names = set(code.co_names)
    module_globals = getattr(function, "__globals__", {})
    for name in code.co_names:
        helper = module_globals.get(name)
        if not _is_test_helper(helper):
            continue
        if isinstance(helper, type):
            for member in vars(helper).values():
                names |= _names_used(member, seen)
        else:
            names |= _names_used(helper, seen)
    return names


def _starts_processes(item: pytest.Item) -> bool:
    if "pytester" in getattr(item, "fixturenames", ()):
        return True
    function = getattr(item, "function", None)
    return function is not None and not PROCESS_NAMES.isdisjoint(_names_used(function, set()))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _starts_processes(item) and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)


# -- libraries that register torch operators once per process ------------------------------------
# An in-process pytester run drops every module it imported from sys.modules when it ends, but
# torch.library registrations live in the process. bitsandbytes defines its operators
# (bitsandbytes::int8_mixed_scaled_mm, ...) at import, so a second inner run that imports it again
# (peft >= 0.22 imports it inside get_peft_model, i.e. inside the model suite's run) dies with
# "Tried to register an operator ... multiple times" and its rows fail for a reason of ours. Imported
# once in this process before any inner run, it is part of every snapshot pytester takes and is
# never imported twice.
REGISTERS_TORCH_OPERATORS = ("bitsandbytes",)


@pytest.fixture(autouse=True)
def _operator_registering_libraries_outlive_inner_runs(request: pytest.FixtureRequest) -> None:
    if "pytester" not in request.fixturenames:
        return
    for name in REGISTERS_TORCH_OPERATORS:
        if name not in sys.modules and importlib.util.find_spec(name) is not None:
            importlib.import_module(name)
