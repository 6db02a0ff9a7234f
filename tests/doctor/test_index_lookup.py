"""'Was this torch build published?' asked of the index itself (PEP 691 JSON or PEP 503 HTML), on a
loopback server; offline, the bundled snapshot answers and the line says so."""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from pytest_rocm.doctor.build import check_pair
from pytest_rocm.doctor.model import Extras
from pytest_rocm.env import index
from pytest_rocm.env.model import Environment

ENVS = Path(__file__).parents[1] / "data" / "envs"

#: a PEP 691 project page as PyTorch's rocm5.7 index would serve it (file names of real wheels)
PAGE_JSON = {
    "meta": {"api-version": "1.1"},
    "name": "torch",
    "files": [
        {"filename": "torch-2.3.1+rocm5.7-cp310-cp310-linux_x86_64.whl", "url": "x", "hashes": {}},
        {"filename": "torch-2.2.2+rocm5.7-cp311-cp311-linux_x86_64.whl", "url": "x", "hashes": {}},
    ],
}
PAGE_HTML = (
    "<!DOCTYPE html><html><body><h1>Links for torch</h1>"
    '<a href="/whl/rocm6.2.4/torch-2.6.0%2Brocm6.2.4-cp312-cp312-manylinux_2_28_x86_64.whl">'
    "torch-2.6.0+rocm6.2.4-cp312-cp312-manylinux_2_28_x86_64.whl</a><br/></body></html>"
)


class _Index(http.server.BaseHTTPRequestHandler):
    seen: ClassVar[list[tuple[str, str]]] = []

    def do_GET(self) -> None:
        _Index.seen.append((self.path, self.headers.get("Accept", "")))
        if self.path == "/whl/rocm5.7/torch/":
            body, kind = json.dumps(PAGE_JSON).encode(), index.PEP691_JSON
        elif self.path == "/whl/rocm6.2.4/torch/":
            body, kind = PAGE_HTML.encode(), "text/html"
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def served() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Index)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Index.seen.clear()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/whl"
    finally:
        server.shutdown()
        server.server_close()


def test_a_pep691_page_answers_and_is_asked_for_json(served: str, tmp_path: Path) -> None:
    answer = index.lookup(f"{served}/rocm5.7", "torch", "2.3.1+rocm5.7", cache_dir=tmp_path)
    assert answer is not None and answer.published and answer.source == "index"
    assert _Index.seen[0][1].startswith(index.PEP691_JSON)
    missing = index.lookup(f"{served}/rocm5.7", "torch", "2.4.0+rocm5.7", cache_dir=tmp_path)
    assert missing is not None and not missing.published


def test_a_pep503_html_page_answers(served: str) -> None:
    answer = index.lookup(f"{served}/rocm6.2.4", "torch", "2.6.0+rocm6.2.4")
    assert answer is not None and answer.published


def test_an_index_that_does_not_exist_has_nothing(served: str) -> None:
    answer = index.lookup(f"{served}/rocm9.9", "torch", "2.6.0+rocm9.9")
    assert answer is not None and not answer.published


def test_an_unreachable_index_gives_no_answer() -> None:
    def refuse(url: str, headers: object, timeout: float) -> tuple[str, bytes]:
        raise OSError("connection refused")

    assert index.lookup("http://127.0.0.1:9/whl/rocm5.7", "torch", "2.3.1+rocm5.7", fetch=refuse) is None


def test_the_cache_answers_within_a_day_and_says_so(served: str, tmp_path: Path) -> None:
    first = index.lookup(f"{served}/rocm5.7", "torch", "2.3.1+rocm5.7", cache_dir=tmp_path, now=lambda: 1000.0)
    assert first is not None and first.source == "index"

    def refuse(url: str, headers: object, timeout: float) -> tuple[str, bytes]:
        raise AssertionError("the cache should have answered")

    again = index.lookup(
        f"{served}/rocm5.7", "torch", "2.3.1+rocm5.7", fetch=refuse, cache_dir=tmp_path, now=lambda: 2000.0
    )
    assert again is not None and again.published and again.source == "cache" and "cached 1970-01-01" in again.said_by()
    stale = index.lookup(
        f"{served}/rocm5.7", "torch", "2.3.1+rocm5.7", cache_dir=tmp_path, now=lambda: 1000.0 + 2 * 86400
    )
    assert stale is not None and stale.source == "index"


def _env(version: str) -> Environment:
    data = json.loads((ENVS / "rx7900xtx_rocm6.json").read_text())
    data["torch"] = version
    return Environment.from_dict(data)


def test_the_index_decides_over_the_snapshot() -> None:
    env = _env("2.6.0+rocm6.3")  # the snapshot says never published
    extras = Extras(torch_on_index=index.IndexAnswer(True, "http://mirror/whl/rocm6.3/torch/", "index", 0.0))
    check = check_pair(env, extras)
    assert check.status == "ok" and "is on the index http://mirror/whl/rocm6.3/torch/ (read now)" in check.evidence
    extras = Extras(torch_on_index=index.IndexAnswer(False, "http://mirror/whl/rocm6.3/torch/", "index", 0.0))
    check = check_pair(env, extras)
    assert (
        check.status == "warn"
        and "is not on the index" in check.evidence
        and "PyTorch never published it" in check.evidence
    )


def test_offline_the_snapshot_answers_and_says_so() -> None:
    check = check_pair(_env("2.6.0+rocm6.3"), Extras(index_note="the index was not asked (PYTEST_ROCM_OFFLINE=1)"))
    assert check.status == "warn" and "the bundled snapshot of 20" in check.evidence
    assert "PYTEST_ROCM_OFFLINE=1" in check.evidence


def _doctor(env_file: Path, served: str, tmp_path: Path) -> str:
    environ = {
        "PATH": "/usr/bin:/bin",
        "PYTEST_ROCM_PYTORCH_INDEX": served,
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "HOME": str(tmp_path),
    }
    done = subprocess.run(
        [sys.executable, "-m", "pytest_rocm.cli", "doctor", "--env", str(env_file)],
        capture_output=True,
        text=True,
        env=environ,
        timeout=120,
    )
    return done.stdout + done.stderr


def test_doctor_asks_the_index_for_a_recorded_environment(served: str, tmp_path: Path) -> None:
    data = json.loads((ENVS / "rx7900xtx_rocm6.json").read_text())
    data["torch"] = "2.3.1+rocm5.7"
    env_file = tmp_path / "env.json"
    env_file.write_text(json.dumps(data))
    out = _doctor(env_file, served, tmp_path)
    assert f"torch-rocm-pair: 2.3.1+rocm5.7 is on the index {served}/rocm5.7/torch/ (read now)" in out, out
    data["torch"] = "2.4.0+rocm5.7"
    env_file.write_text(json.dumps(data))
    out = _doctor(env_file, served, tmp_path)
    assert f"2.4.0+rocm5.7 is not on the index {served}/rocm5.7/torch/" in out, out
