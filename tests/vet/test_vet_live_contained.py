"""``vet --run`` contains what it runs: a forked daemon neither fakes a timeout nor outlives vet,
a hang ends everything it started (the supervisor, tested without the sandbox, whose own process
namespace would end them anyway: ``test_vet_sandbox``), a folder target runs the folder's code (not an installed
package of the same name) with its own HOME, and the network is off where the platform allows."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from fake_packages import write_tree

from pytest_rocm.cli import main
from pytest_rocm.vet.contained import _offline_prefix, run_contained
from pytest_rocm.vet.live import import_check, live_check


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead for our purpose
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def daemon_package(root: Path, pids: Path, setsid: bool) -> Path:
    body = (
        "import os, sys, time\n"
        "if os.fork() == 0:\n"
        + ("    os.setsid()\n    if os.fork() != 0:\n        os._exit(0)\n" if setsid else "")
        + f"    open({str(pids)!r}, 'a').write(f'{{os.getpid()}}\\n')\n"
        "    time.sleep(120)  # keeps the inherited stdout and stderr open\n"
        "    os._exit(0)\n"
        "VALUE = 1\n"
    )
    return write_tree(root, {"daemonpkg/__init__.py": body})


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc (Linux)")
@pytest.mark.parametrize("setsid", [False, True], ids=["forked child", "double-forked daemon (own session)"])
def test_a_forked_daemon_is_no_timeout_and_does_not_outlive_vet(tmp_path: Path, setsid: bool) -> None:
    pids = tmp_path / "pids"
    src = daemon_package(tmp_path / "src", pids, setsid)
    started = time.monotonic()
    rec = import_check("daemonpkg", "daemonpkg", timeout=20, source=src, offline=False, sandbox=False)
    assert rec["outcome"] == "passed", rec["reason"]
    assert time.monotonic() - started < 15  # not the 20 s timeout: the import itself is instant
    daemon = [int(p) for p in pids.read_text().split()]
    assert daemon and not any(alive(p) for p in daemon), daemon


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc (Linux)")
def test_a_hang_ends_the_children_it_forked(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    code = (
        "import os, time\n"
        "for _ in range(3):\n"
        "    if os.fork() == 0:\n"
        "        os.setsid()\n"
        f"        open({str(pids)!r}, 'a').write(f'{{os.getpid()}}\\n')\n"
        "        time.sleep(120)\n"
        "time.sleep(120)\n"
    )
    import sys

    started = time.monotonic()
    done = run_contained(
        [sys.executable, "-c", code], timeout=2, cwd=str(tmp_path), env=dict(os.environ), offline=False, sandbox=False
    )
    assert done.returncode is None and time.monotonic() - started < 15
    children = [int(p) for p in pids.read_text().split()]
    assert len(children) == 3 and not any(alive(p) for p in children)


def test_exit_status_124_of_the_command_itself_is_not_a_timeout(tmp_path: Path) -> None:
    import sys

    done = run_contained(
        [sys.executable, "-c", "raise SystemExit(124)"], timeout=20, cwd=str(tmp_path), env=dict(os.environ)
    )
    assert done.returncode == 124


@pytest.fixture
def shadowed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """An installed 'shadowpkg' 1.0 on the path, and a source folder of 'shadowpkg' 9.9."""
    site = write_tree(tmp_path / "site", {"shadowpkg/__init__.py": "def from_the_installed_one(): pass\n"})
    info = site / "shadowpkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: shadowpkg\nVersion: 1.0\n")
    (info / "RECORD").write_text("shadowpkg/__init__.py,,\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    folder = write_tree(
        tmp_path / "work" / "shadowpkg-src",
        {
            "pyproject.toml": '[project]\nname = "shadowpkg"\nversion = "9.9"\n',
            "src/shadowpkg/__init__.py": (
                # the sandbox lets nothing out: a wrong HOME fails the import instead
                "import os\n"
                f"if os.environ.get('HOME') == {os.environ.get('HOME')!r} or 'vet-import-' not in os.environ['HOME']:\n"
                "    raise RuntimeError('the user home: ' + os.environ['HOME'])\n"
                "def from_the_folder(): pass\n"
            ),
        },
    )
    return folder, site


def test_run_on_a_folder_runs_the_folders_code_with_its_own_home(
    shadowed: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    folder, _ = shadowed
    assert main(["vet", str(folder), "--run", "--json", "--timeout", "60"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rec = doc["live"]["records"][0]
    assert rec["outcome"] == "passed", rec["reason"]  # the folder's import checks its HOME
    assert rec["info"]["dist_version"] == "9.9"  # the folder's version, not the installed 1.0
    # where the module resolves is vet's own finding; what the child printed is labelled its claim
    assert rec["info"]["resolved"].startswith(str(folder.resolve()))
    assert rec["info"]["child_claims"]["examples"] == ["from_the_folder"]


def test_run_on_an_installed_name_still_runs_the_installed_one(shadowed: tuple[Path, Path]) -> None:
    live = live_check("shadowpkg", {"shadowpkg"}, timeout=60)
    assert live["records"][0]["outcome"] == "passed" and live["records"][0]["info"]["dist_version"] == "1.0"
    assert live["records"][0]["info"]["child_claims"]["examples"] == ["from_the_installed_one"]  # not the folder's


@pytest.mark.skipif(not _offline_prefix(), reason="unshare -rn does not work here: the network stays on")
def test_the_child_has_no_network(tmp_path: Path) -> None:
    import sys

    probe = (
        "import socket\n"
        "s = socket.socket(); s.settimeout(3)\n"
        "try:\n    s.connect(('192.0.2.1', 80)); print('connected')\n"
        "except OSError as e:\n    print('no network', e.errno)\n"
        "print([n for _, n in socket.if_nameindex()])\n"
    )
    done = run_contained([sys.executable, "-c", probe], timeout=30, cwd=str(tmp_path), env=dict(os.environ))
    assert "no network" in done.stdout and "['lo']" in done.stdout, done.stdout + done.stderr
