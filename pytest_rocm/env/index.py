"""Was this wheel published? Asked of the package index itself, offline answered by the snapshot.

PyTorch's indexes (``https://download.pytorch.org/whl/rocm6.2.4``) are simple repositories: the
project page ``<index>/torch/`` lists every file. It is read in the JSON form of PEP 691 when the
server offers it, else in the HTML form of PEP 503; an answer is cached for a day
(``$XDG_CACHE_HOME/pytest-rocm/index``) so ``rocm-compat doctor`` asks once. Every answer says
where it came from (the index now, or the cache of a given time), so the doctor can say which one
decided. Stdlib and ``packaging`` only; the network goes through ``fetch`` (tests pass their own, or
point ``PYTEST_ROCM_PYTORCH_INDEX`` at a loopback server).

The network is not trusted to be an index: a server may drip a byte a second, send gigabytes, a
captive portal may answer with its login page, a proxy with a gzip body nobody asked for. So the
read has a total deadline (``DEADLINE_S``, not only a socket timeout) and a byte cap
(``MAX_BYTES``), and only a well-formed project page (PEP 691 JSON with its ``meta``, ``name`` and
``files``; PEP 503 HTML that links at least one file of the project) is an answer. Anything else
is *unknown* (:func:`ask` says why, the doctor falls back to the snapshot) and is never cached:
only a page read whole, or a 404, is a fact about the index.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

#: PyTorch's wheel indexes; a mirror (or a test's server) replaces it through this variable
PYTORCH_INDEX = "https://download.pytorch.org/whl"
INDEX_VARIABLE = "PYTEST_ROCM_PYTORCH_INDEX"
#: set to 1 to never ask an index (the answer is then the bundled snapshot's)
OFFLINE_VARIABLE = "PYTEST_ROCM_OFFLINE"
PEP691_JSON = "application/vnd.pypi.simple.v1+json"
ACCEPT = f"{PEP691_JSON}, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01"
#: each socket operation's timeout, and the whole read's deadline (connect, headers and body)
TIMEOUT_S = 3.0
DEADLINE_S = 10.0
#: the largest project page read: PyTorch's biggest (whl/torch/, every build) is a few MB
MAX_BYTES = 32 * 1024 * 1024
CACHE_TTL_S = 24 * 3600
_CHUNK = 64 * 1024

#: (url, headers, timeout) -> (content type, body); raises OSError (URLError is one) when unreachable
Fetch = Callable[[str, Mapping[str, str], float], "tuple[str, bytes]"]


class NotOnIndex(OSError):
    """The index answered 404 for the project page: that index (or project) does not exist."""


class NotAnIndexPage(ValueError):
    """The answer was read but is not a well-formed project page (or not all of it): unknown."""


def _read_bounded(
    url: str, headers: Mapping[str, str], timeout: float, max_bytes: int, stop: threading.Event
) -> tuple[str, bytes]:
    # identity only: a body compressed anyway is refused below, never decoded into unbounded memory
    request = urllib.request.Request(url, headers={**headers, "Accept-Encoding": "identity"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            encoding = str(response.headers.get("Content-Encoding", "") or "").strip().lower()
            if encoding not in ("", "identity"):
                raise NotAnIndexPage(f"a {encoding}-encoded body that was not asked for")
            declared = str(response.headers.get("Content-Length", "") or "").strip()
            if declared.isdigit() and int(declared) > max_bytes:
                raise NotAnIndexPage(f"a body of {int(declared)} bytes, over the {max_bytes}-byte cap")
            chunks: list[bytes] = []
            total = 0
            while not stop.is_set():
                chunk = response.read1(_CHUNK)  # at most one socket read: the deadline is checked between
                if not chunk:
                    return str(response.headers.get("Content-Type", "")), b"".join(chunks)
                total += len(chunk)
                if total > max_bytes:
                    raise NotAnIndexPage(f"more than the {max_bytes}-byte cap")
                chunks.append(chunk)
            raise TimeoutError("abandoned at the deadline")
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            raise NotOnIndex(f"{url}: 404 Not Found") from exc
        raise


def urllib_fetch(
    url: str,
    headers: Mapping[str, str],
    timeout: float,
    deadline_s: float = DEADLINE_S,
    max_bytes: int = MAX_BYTES,
) -> tuple[str, bytes]:
    """(content type, body) of ``url``, read whole within ``deadline_s`` and ``max_bytes``.

    The read runs in a daemon thread the caller stops waiting for at the deadline (a server that
    drips its headers holds a socket read, which no flag interrupts); told to stop, the thread
    ends at its next socket read or timeout. Raises NotOnIndex (404), NotAnIndexPage (too big, an
    unasked encoding), TimeoutError (the deadline) or OSError (unreachable)."""
    outcome: list[tuple[str, bytes] | BaseException] = []
    stop = threading.Event()

    def work() -> None:
        try:
            outcome.append(_read_bounded(url, headers, timeout, max_bytes, stop))
        except BaseException as exc:  # handed to the caller's thread, raised there
            outcome.append(exc)

    worker = threading.Thread(target=work, name="pytest-rocm-index-read", daemon=True)
    worker.start()
    worker.join(deadline_s)
    if not outcome:
        stop.set()
        raise TimeoutError(f"no whole answer within {deadline_s:g} s")
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]


@dataclass(frozen=True)
class IndexAnswer:
    #: whether the exact version is among the project's files there
    published: bool
    #: the project page that was read
    url: str
    #: ``index`` (read now) or ``cache`` (read earlier: ``when``)
    source: str
    #: when the page was read (seconds since the epoch)
    when: float

    def said_by(self) -> str:
        """``the index https://…/torch/ (read now)`` or ``… (cached 2026-12-01 10:00 UTC)``."""
        if self.source == "index":
            return f"the index {self.url} (read now)"
        return f"the index {self.url} (cached {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(self.when))})"


class _Anchors(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []
        self._in_a = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._in_a = tag == "a"

    def handle_data(self, data: str) -> None:
        if self._in_a and data.strip():
            self.names.append(data.strip())

    def handle_endtag(self, tag: str) -> None:
        self._in_a = False


def _json_files(text: str, project: str) -> list[str]:
    """The file names of a PEP 691 project page; NotAnIndexPage when it is not one."""
    try:
        data = json.loads(text)
    except ValueError:
        raise NotAnIndexPage("a malformed PEP 691 page (not JSON)") from None
    meta = data.get("meta") if isinstance(data, dict) else None
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(meta, dict) or not str(meta.get("api-version", "")).startswith("1."):
        raise NotAnIndexPage("a malformed PEP 691 page (no meta.api-version 1.x)")
    if not isinstance(data.get("name"), str) or canonicalize_name(data["name"]) != canonicalize_name(project):
        raise NotAnIndexPage(f"a malformed PEP 691 page (not the page of {project})")
    if not isinstance(files, list) or not all(
        isinstance(f, dict) and isinstance(f.get("filename"), str) for f in files
    ):
        raise NotAnIndexPage("a malformed PEP 691 page (files is not a list of files with a filename)")
    return [f["filename"] for f in files]


def filenames(content_type: str, body: bytes, project: str = "torch") -> list[str]:
    """The file names a project page lists, from its PEP 691 JSON or its PEP 503 HTML form;
    NotAnIndexPage when the body is neither (a login page, compressed bytes, broken JSON)."""
    if body[:2] == b"\x1f\x8b":
        raise NotAnIndexPage("a gzip-compressed body that was not asked for")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise NotAnIndexPage("a body that is not UTF-8 text") from None
    kind = content_type.split(";")[0].strip().lower()
    if kind in (PEP691_JSON, "application/json") or (kind == "" and text.lstrip().startswith("{")):
        return _json_files(text, project)
    if kind not in ("text/html", "application/vnd.pypi.simple.v1+html", ""):
        raise NotAnIndexPage(f"a {kind} body, not an index page")
    parser = _Anchors()
    parser.feed(text)
    if not versions_of(project, parser.names):
        # PyTorch's indexes never serve an empty project page (a missing one is a 404): a page that
        # links no file of the project is a portal's login page or an error page, not an answer
        raise NotAnIndexPage(f"an HTML page that links no {project} file (a login or error page?)")
    return parser.names


def versions_of(project: str, names: list[str]) -> set[str]:
    """The versions (``2.3.1+rocm5.7``) of ``project`` among wheel and sdist file names."""
    want = canonicalize_name(project)
    found: set[str] = set()
    for name in names:
        try:
            if name.endswith(".whl"):
                dist, version, *_ = parse_wheel_filename(name)
            else:
                dist, version = parse_sdist_filename(name)
        except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
            continue
        if dist == want:
            found.add(str(version))
    return found


def project_page(index: str, project: str) -> str:
    return f"{index.rstrip('/')}/{canonicalize_name(project)}/"


def _cache_file(cache_dir: Path, url: str) -> Path:
    return cache_dir / f"{hashlib.sha256(url.encode()).hexdigest()[:24]}.json"


def default_cache_dir(environ: Mapping[str, str]) -> Path:
    base = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pytest-rocm" / "index"


def _read_cache(path: Path, now: float) -> tuple[float, set[str]] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        when = float(data["when"])
        versions = {str(v) for v in data["versions"]}
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return (when, versions) if 0 <= now - when < CACHE_TTL_S else None


def _write_cache(path: Path, url: str, when: float, versions: set[str]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"url": url, "when": when, "versions": sorted(versions)}), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass  # a cache that cannot be written only costs the next run one more request


def ask(
    index: str,
    project: str,
    version: str,
    fetch: Fetch = urllib_fetch,
    cache_dir: Path | None = None,
    now: Callable[[], float] = time.time,
) -> IndexAnswer | str:
    """Whether ``project==version`` is on the simple index ``index``, or why that is unknown (the
    caller then falls back to the bundled snapshot and says so). Only an answer is cached."""
    url = project_page(index, project)
    try:
        wanted = str(Version(version))
    except InvalidVersion:
        return f"{version} is not a version"
    cached = _read_cache(_cache_file(cache_dir, url), now()) if cache_dir is not None else None
    if cached is not None:
        return IndexAnswer(wanted in cached[1], url, "cache", cached[0])
    try:
        content_type, body = fetch(url, {"Accept": ACCEPT}, TIMEOUT_S)
        versions = versions_of(project, filenames(content_type, body, project))
    except NotOnIndex:
        versions = set()
    except NotAnIndexPage as exc:
        return f"{url} answered {exc}"
    except TimeoutError as exc:
        return f"{url}: {exc or 'timed out'}"
    except (OSError, ValueError) as exc:  # unreachable, refused, a broken HTTP answer
        return f"{url} could not be reached ({type(exc).__name__})"
    when = now()
    if cache_dir is not None:
        _write_cache(_cache_file(cache_dir, url), url, when, versions)
    return IndexAnswer(wanted in versions, url, "index", when)


def lookup(
    index: str,
    project: str,
    version: str,
    fetch: Fetch = urllib_fetch,
    cache_dir: Path | None = None,
    now: Callable[[], float] = time.time,
) -> IndexAnswer | None:
    """:func:`ask`'s answer; None when it is unknown."""
    answer = ask(index, project, version, fetch, cache_dir, now)
    return answer if isinstance(answer, IndexAnswer) else None


def pytorch_index(environ: Mapping[str, str]) -> str:
    return environ.get(INDEX_VARIABLE) or PYTORCH_INDEX


def is_offline(environ: Mapping[str, str]) -> bool:
    return environ.get(OFFLINE_VARIABLE, "").strip().lower() in ("1", "true", "yes")
