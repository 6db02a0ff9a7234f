"""The index reader cannot be fooled or held: loopback servers that drip a byte a second, send a
huge body, garbage or malformed PEP 691 JSON, a captive portal's login page, or gzip nobody asked
for. Each is "unknown: fell back to the snapshot" (never "PyTorch never published it"), within the
deadline and the byte cap, and is never cached."""

from __future__ import annotations

import gzip
import http.server
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

from pytest_rocm.env import index

ENVS = Path(__file__).parents[1] / "data" / "envs"
GOOD = {
    "meta": {"api-version": "1.1"},
    "name": "torch",
    "files": [{"filename": "torch-2.3.1+rocm5.7-cp310-cp310-linux_x86_64.whl", "url": "x", "hashes": {}}],
}
LOGIN = (
    "<!DOCTYPE html><html><head><title>Hotel WiFi - Sign in</title></head><body>"
    '<form action="/login" method="post"><input name="room"><a href="/terms">Terms of use</a>'
    '<a href="/login?redirect=https://download.pytorch.org/whl/rocm5.7/torch/">Sign in</a></form></body></html>'
)
#: what each server answers: (content type, extra headers, body, seconds between bytes)
ANSWERS: dict[str, tuple[str, dict[str, str], bytes, float]] = {
    "good": (index.PEP691_JSON, {}, json.dumps(GOOD).encode(), 0.0),
    "garbage-json": (index.PEP691_JSON, {}, b'{"meta": {"api-version": "1.1"}, "files": [', 0.0),
    "json-no-files": (
        index.PEP691_JSON,
        {},
        json.dumps({"meta": {"api-version": "1.1"}, "name": "torch"}).encode(),
        0.0,
    ),
    "json-files-not-list": (index.PEP691_JSON, {}, json.dumps({**GOOD, "files": "torch.whl"}).encode(), 0.0),
    "json-array": (index.PEP691_JSON, {}, b"[]", 0.0),
    "json-other-project": (index.PEP691_JSON, {}, json.dumps({**GOOD, "name": "login", "files": []}).encode(), 0.0),
    "login": ("text/html; charset=utf-8", {}, LOGIN.encode(), 0.0),
    "gzip-declared": ("text/html", {"Content-Encoding": "gzip"}, gzip.compress(json.dumps(GOOD).encode()), 0.0),
    "gzip-undeclared": (index.PEP691_JSON, {}, gzip.compress(json.dumps(GOOD).encode()), 0.0),
    "drip": (index.PEP691_JSON, {}, json.dumps(GOOD).encode(), 1.0),
}
HUGE = 64 * 1024 * 1024  # what the "huge" server claims to send (and sends, until the reader stops)


class _Hostile(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        name = self.path.strip("/").split("/")[1]  # /whl/<name>/torch/
        if name == "huge":
            self._huge()
            return
        kind, headers, body, pause = ANSWERS[name]
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        try:
            if not pause:
                self.wfile.write(body)
            for byte in body if pause else b"":
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(pause)
        except OSError:
            pass  # the reader hung up: what it should do

    def _huge(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html")  # no Content-Length: the size is known only by reading
        self.send_header("Connection", "close")
        self.end_headers()
        block = b"<a>torch-2.3.1+rocm5.7-cp310-cp310-linux_x86_64.whl</a>" * 1000
        try:
            for _ in range(HUGE // len(block)):
                self.wfile.write(block)
        except OSError:
            pass

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def hostile() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hostile)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/whl"
    finally:
        server.shutdown()
        server.server_close()


def test_a_good_page_still_answers(hostile: str, tmp_path: Path) -> None:
    answer = index.ask(f"{hostile}/good", "torch", "2.3.1+rocm5.7", cache_dir=tmp_path)
    assert isinstance(answer, index.IndexAnswer) and answer.published
    assert list(tmp_path.iterdir())  # an answer is cached


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("garbage-json", "not JSON"),
        ("json-no-files", "files is not a list"),
        ("json-files-not-list", "files is not a list"),
        ("json-array", "no meta.api-version"),
        ("json-other-project", "not the page of torch"),
        ("login", "links no torch file"),
        ("gzip-declared", "gzip-encoded body that was not asked for"),
        ("gzip-undeclared", "gzip-compressed body"),
    ],
)
def test_not_an_index_page_is_unknown_and_not_cached(hostile: str, tmp_path: Path, name: str, said: str) -> None:
    answer = index.ask(f"{hostile}/{name}", "torch", "2.3.1+rocm5.7", cache_dir=tmp_path)
    assert isinstance(answer, str) and said in answer, answer
    assert index.lookup(f"{hostile}/{name}", "torch", "2.3.1+rocm5.7", cache_dir=tmp_path) is None
    assert not list(tmp_path.iterdir())  # never cached as a fact


@pytest.mark.timing  # a deadline in wall-clock seconds
def test_a_server_dripping_a_byte_a_second_is_left_at_the_deadline(hostile: str, tmp_path: Path) -> None:
    fetch = partial(index.urllib_fetch, deadline_s=1.5)
    start = time.monotonic()
    answer = index.ask(f"{hostile}/drip", "torch", "2.3.1+rocm5.7", fetch=fetch, cache_dir=tmp_path)
    took = time.monotonic() - start
    assert isinstance(answer, str) and "no whole answer within 1.5 s" in answer, answer
    assert took < 3.0 and not list(tmp_path.iterdir())


def test_the_default_read_has_a_total_deadline() -> None:
    assert index.DEADLINE_S <= 15 and index.TIMEOUT_S < index.DEADLINE_S


def test_a_huge_body_stops_at_the_cap(hostile: str, tmp_path: Path) -> None:
    import tracemalloc

    fetch = partial(index.urllib_fetch, max_bytes=1024 * 1024)
    tracemalloc.start()
    try:
        answer = index.ask(f"{hostile}/huge", "torch", "2.3.1+rocm5.7", fetch=fetch, cache_dir=tmp_path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert isinstance(answer, str) and "more than the 1048576-byte cap" in answer, answer
    assert peak < 8 * 1024 * 1024 and not list(tmp_path.iterdir())


def test_a_declared_length_over_the_cap_is_not_read(hostile: str) -> None:
    with pytest.raises(index.NotAnIndexPage, match="over the 100-byte cap"):
        index.urllib_fetch(f"{hostile}/good/torch/", {}, 2.0, max_bytes=100)


@pytest.mark.parametrize("name", ["login", "garbage-json", "gzip-declared"])
def test_doctor_falls_back_to_the_snapshot_and_says_unknown(hostile: str, tmp_path: Path, name: str) -> None:
    """torch 2.6 for ROCm 6.3 was never published: the snapshot says so, and the line says the
    index's answer was unknown, not that the index said so."""
    data = json.loads((ENVS / "rx7900xtx_rocm6.json").read_text())
    data["torch"] = "2.6.0+rocm6.3"
    env_file = tmp_path / "env.json"
    env_file.write_text(json.dumps(data))
    environ = {
        "PATH": "/usr/bin:/bin",
        "PYTEST_ROCM_PYTORCH_INDEX": f"{hostile}/{name}/x",
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
    line = next(x for x in done.stdout.splitlines() if "torch-rocm-pair" in x)
    assert "unknown: " in line and "fell back to the snapshot" in line and "the bundled snapshot of" in line, line
    assert "is not on the index" not in line and "Traceback" not in done.stderr
    assert not (tmp_path / "cache" / "pytest-rocm" / "index").exists() or not list(
        (tmp_path / "cache" / "pytest-rocm" / "index").iterdir()
    )
