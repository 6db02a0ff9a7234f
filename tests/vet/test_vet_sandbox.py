"""``vet --run`` runs the vetted package in a sandbox: a hostile package per escape tries to read
the user's secrets, write to the home, the folder vet was started from and the folder beside the
vetted one, talk to the unix socket named by ``$SSH_AUTH_SOCK``, open a TCP connection and leave
a daemon behind. Each attempt is judged by what happened outside (the real files, the real
socket), not by what the package says; where no sandbox can run, ``--run`` refuses unless
``--unsafe-run``."""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from fake_packages import write_tree

from pytest_rocm.cli import main
from pytest_rocm.vet import contained
from pytest_rocm.vet.live import child_environment, import_check

needs_bwrap = pytest.mark.skipif(
    contained.sandbox_problem() is not None, reason=f"no sandbox: {contained.sandbox_problem()}"
)


def hostile(root: Path, body: str) -> Path:
    """A source folder of 'evilpkg' whose import runs ``body`` (with ``out(key, value)`` to say
    what it saw: printed after the import, so it also shows what vet prints)."""
    return write_tree(
        root,
        {
            "pyproject.toml": '[project]\nname = "evilpkg"\nversion = "6.6.6"\n',
            "evilpkg/__init__.py": "import json, os, socket, sys\nSEEN = {}\n"
            "def out(k, v):\n    SEEN[k] = v\n    print('@@evil@@' + json.dumps(SEEN), flush=True)\n" + body,
        },
    )


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A user's world to attack: a home with a .bashrc, a folder vet is started from, secrets in
    the environment."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text("# mine\n")
    (home / ".netrc").write_text("machine example.org password hunter2\n")
    start = tmp_path / "start"
    start.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HF_TOKEN", "hf_SECRETVALUE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "AKIASECRETVALUE")
    monkeypatch.setenv("PYTORCH_HUB_TOKEN", "torchSECRETVALUE")  # an allowed prefix, a secret's name
    monkeypatch.chdir(start)
    return {"home": home, "start": start, "root": tmp_path}


def vet_run(folder: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, dict, str]:
    code = main(["vet", str(folder), "--run", "--json", "--timeout", "60", *extra])
    captured = capsys.readouterr()
    return code, (json.loads(captured.out) if code == 0 else {}), captured.out + captured.err


def test_the_child_environment_is_an_allow_list(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HF_TOKEN", "x")
    monkeypatch.setenv("SSH_AUTH_SOCK", "/tmp/agent")
    monkeypatch.setenv("HIP_VISIBLE_DEVICES", "0")
    monkeypatch.setenv("HSA_OVERRIDE_GFX_VERSION", "11.0.0")
    monkeypatch.setenv("PYTORCH_HUB_TOKEN", "x")
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    env, dropped = child_environment(str(tmp_path), None)
    assert env["HIP_VISIBLE_DEVICES"] == "0" and env["HSA_OVERRIDE_GFX_VERSION"] == "11.0.0"
    assert env["LC_ALL"] == "C.UTF-8" and env["PATH"] == os.environ["PATH"]
    assert {"HF_TOKEN", "SSH_AUTH_SOCK", "PYTORCH_HUB_TOKEN"} <= set(dropped)
    assert not {"HF_TOKEN", "SSH_AUTH_SOCK", "PYTORCH_HUB_TOKEN"} & set(env)
    for name in ("HOME", "TMPDIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"):
        assert env[name].startswith(str(tmp_path)), name


@needs_bwrap
def test_secrets_are_neither_seen_nor_printed(world: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    netrc = str(world["home"] / ".netrc")
    src = hostile(
        world["root"] / "evil",
        "out('env', {k: v for k, v in os.environ.items() if 'SECRET' in v})\n"
        f"try:\n    out('netrc', open({netrc!r}).read())\nexcept OSError as e:\n    out('netrc', e.errno)\n",
    )
    code, doc, printed = vet_run(src, capsys)
    assert code == 0, printed
    assert "SECRETVALUE" not in printed and "hunter2" not in printed
    live = doc["live"]
    assert live["sandbox"] == "bubblewrap"
    assert {"HF_TOKEN", "AWS_SECRET_ACCESS_KEY", "PYTORCH_HUB_TOKEN"} <= set(live["env_dropped"])
    assert live["records"][0]["outcome"] == "passed", live["records"][0]["reason"]


@needs_bwrap
def test_writes_outside_the_childs_folder_do_not_land(
    world: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    bashrc, start = world["home"] / ".bashrc", world["start"]
    beside = world["root"] / "beside.txt"
    venv_file = Path(sys.prefix) / f"evil-was-here-{uuid.uuid4().hex}"  # outside /tmp and the home
    body = "".join(
        f"try:\n    open({str(p)!r}, 'a').write('pwned\\n'); out({key!r}, 'written')\n"
        f"except OSError as e:\n    out({key!r}, e.errno)\n"
        for key, p in (
            ("home", bashrc),
            ("cwd", start / "pwned.txt"),
            ("pwd", Path("${PWD}") / "pwned-pwd.txt"),
            ("parent", beside),
            ("inside", world["root"] / "evil" / "evilpkg" / "pwned.txt"),
            ("venv", venv_file),
        )
    ).replace("'${PWD}", "os.environ.get('PWD', '.') + '")
    src = hostile(world["root"] / "evil", body)
    try:
        code, doc, printed = vet_run(src, capsys)
        assert not venv_file.exists()
    finally:
        venv_file.unlink(missing_ok=True)
    assert code == 0, printed
    assert doc["live"]["records"][0]["outcome"] == "passed", doc["live"]["records"][0]["reason"]
    assert bashrc.read_text() == "# mine\n"
    assert list(start.iterdir()) == []
    assert not beside.exists() and not (src / "evilpkg" / "pwned.txt").exists()


@needs_bwrap
def test_the_ssh_agent_socket_is_unreachable(
    world: dict[str, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = world["root"] / "agent.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(1)
    server.settimeout(0.2)
    got: list[bytes] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            got.append(conn.recv(100))
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    monkeypatch.setenv("SSH_AUTH_SOCK", str(path))
    src = hostile(
        world["root"] / "evil",
        f"for p in (os.environ.get('SSH_AUTH_SOCK'), {str(path)!r}):\n"
        "    if p:\n"
        "        s = socket.socket(socket.AF_UNIX)\n"
        "        try:\n            s.connect(p); s.sendall(b'sign this'); out(p, 'sent')\n"
        "        except OSError as e:\n            out(p, e.errno)\n",
    )
    try:
        code, doc, printed = vet_run(src, capsys)
        time.sleep(0.3)
    finally:
        stop.set()
        thread.join()
        server.close()
    assert code == 0, printed
    assert got == [], got
    assert "SSH_AUTH_SOCK" in doc["live"]["env_dropped"]


@needs_bwrap
def test_tcp_is_cut_and_a_daemon_dies_in_the_sandbox(tmp_path: Path) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    pids = tmp_path / "pids"
    src = write_tree(
        tmp_path / "src",
        {
            "netpkg/__init__.py": "import os, socket, time\n"
            "s = socket.socket(); s.settimeout(3)\n"
            f"try:\n    s.connect(('127.0.0.1', {port})); s.sendall(b'hello')\nexcept OSError:\n    pass\n"
            "if os.fork() == 0:\n    os.setsid()\n    if os.fork() != 0:\n        os._exit(0)\n"
            f"    open({str(pids)!r}, 'a').write(str(os.getpid()) + '\\n')\n"
            "    time.sleep(120)\n    os._exit(0)\n",
        },
    )
    # the pid file is written inside the sandbox: the daemon reports through stdout instead
    src.joinpath("netpkg/__init__.py").write_text(
        src.joinpath("netpkg/__init__.py").read_text().replace(f"open({str(pids)!r}, 'a').write(", "print(")
    )
    server.settimeout(0.5)
    started = time.monotonic()
    rec = import_check("netpkg", "netpkg", timeout=20, source=src)
    assert rec["outcome"] == "passed", rec["reason"]
    assert time.monotonic() - started < 15
    with pytest.raises(TimeoutError):
        server.accept()  # the loopback inside the sandbox is not this one
    server.close()
    # no process of the sandbox is left: none has the package's folder on its command line or path
    left = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _mentions(p, str(src))]
    assert left == []


def _mentions(proc: Path, text: str) -> bool:
    try:
        return text in (proc / "environ").read_bytes().decode("utf-8", "replace")
    except OSError:
        return False


def test_no_sandbox_refuses_without_unsafe_run(
    world: dict[str, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    src = hostile(world["root"] / "evil", "out('ran', True)\n")
    monkeypatch.setattr(contained, "sandbox_problem", lambda: "bwrap is not installed (Debian: apt install bubblewrap)")
    code, _, printed = vet_run(src, capsys)
    assert code == 2
    lines = [ln for ln in printed.splitlines() if ln.strip()]
    assert len(lines) == 1 and "bwrap is not installed" in lines[0] and "--unsafe-run" in lines[0], printed
    code, doc, printed = vet_run(src, capsys, "--unsafe-run")
    assert code == 0, printed
    assert doc["live"]["sandbox"] is None and doc["live"]["records"][0]["outcome"] == "passed"


def test_unsafe_run_needs_run(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["vet", str(tmp_path), "--unsafe-run"]) == 2
    assert "--unsafe-run needs --run" in capsys.readouterr().err


def test_the_vetted_packages_escape_sequences_never_reach_the_terminal(
    world: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    src = hostile(world["root"] / "evil", "raise ImportError('\\x1b[2J\\x1b]0;PWNED\\x07 cleared your screen')\n")
    extra = [] if contained.sandbox_problem() is None else ["--unsafe-run"]
    assert main(["vet", str(src), "--run", "--timeout", "60", *extra]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "\\x1b[2J\\x1b]0;PWNED\\x07 cleared your screen" in out
