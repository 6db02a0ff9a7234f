"""vet --run: the vetted code gets a memory limit of its own (RLIMIT_DATA in the child's process,
``--memory-limit GIB``, default 8), stated in the live result; an import that allocates past it
fails there, and the record names the limit and the flag that raises it.

The allocations are private anonymous mappings never touched (``mmap`` with MAP_PRIVATE): they
count against RLIMIT_DATA at once, but cost no real memory where no limit holds them back."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from fake_packages import write_tree

from pytest_rocm.cli import main
from pytest_rocm.vet.contained import DEFAULT_MEMORY_GIB, memory_bytes, run_contained
from pytest_rocm.vet.live import live_check

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_DATA counts mappings on Linux")

GIB = 1024**3


def _maps(gib: float) -> str:
    return f"import mmap\nhold = mmap.mmap(-1, {int(gib * GIB)}, flags=mmap.MAP_PRIVATE)\nprint('mapped')\n"


@pytest.fixture
def hog_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    site = tmp_path / "site"
    for name, gib in (("hogpkg", 3), ("bighogpkg", DEFAULT_MEMORY_GIB + 4), ("smallpkg", 0.1)):
        write_tree(site, {f"{name}/__init__.py": _maps(gib)})
        info = site / f"{name}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
        (info / "top_level.txt").write_text(name + "\n")
        (info / "RECORD").write_text(f"{name}/__init__.py,,\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    return site


@pytest.mark.parametrize("sandbox", [True, False])
def test_a_contained_command_cannot_allocate_past_its_limit(tmp_path: Path, sandbox: bool) -> None:
    if sandbox:
        from pytest_rocm.vet.contained import sandbox_problem

        if sandbox_problem():
            pytest.skip(sandbox_problem() or "")
    common = {"timeout": 60.0, "cwd": str(tmp_path), "env": dict(os.environ), "sandbox": sandbox, "offline": False}
    over = run_contained([sys.executable, "-c", _maps(3)], memory=memory_bytes(1), **common)  # type: ignore[arg-type]
    assert over.returncode == 1 and "Cannot allocate memory" in over.stderr, over.stderr[-500:]
    under = run_contained([sys.executable, "-c", _maps(0.1)], memory=memory_bytes(1), **common)  # type: ignore[arg-type]
    assert under.returncode == 0 and "mapped" in under.stdout, under.stderr[-500:]


def test_an_import_past_the_limit_fails_naming_the_limit_and_its_flag(hog_site: Path) -> None:
    live = live_check("hogpkg", {"hogpkg"}, timeout=60, memory_gib=1, sandbox=False)
    (rec,) = live["records"]
    assert rec["outcome"] == "failed" and live["memory_limit_gib"] == 1
    assert "Cannot allocate memory" in rec["reason"]
    assert "(the live check's memory limit is 1 GiB: --memory-limit raises it)" in rec["reason"]
    assert rec["info"]["memory_limit_gib"] == 1
    small = live_check("smallpkg", {"smallpkg"}, timeout=60, memory_gib=1, sandbox=False)["records"][0]
    assert small["outcome"] == "passed", small


def test_the_default_limit_holds_without_the_flag(hog_site: Path) -> None:
    # DEFAULT_MEMORY_GIB + 4 GiB, untouched: without a limit of its own the import maps it and passes
    rec = live_check("bighogpkg", {"bighogpkg"}, timeout=60, sandbox=False)["records"][0]
    assert rec["outcome"] == "failed" and f"memory limit is {DEFAULT_MEMORY_GIB:g} GiB" in rec["reason"], rec


def test_the_flag_raises_it_on_the_command_line(hog_site: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["vet", "hogpkg", "--run", "--unsafe-run", "--memory-limit", "6", "--json"]) == 0
    live = json.loads(capsys.readouterr().out)["live"]
    assert live["memory_limit_gib"] == 6 and live["records"][0]["outcome"] == "passed", live
    assert main(["vet", "hogpkg", "--run", "--memory-limit", "0"]) == 2
    err = capsys.readouterr().err
    assert "argument --memory-limit" in err and len(err.strip().splitlines()) == 1
