"""Was this wheel published? Asked of the package index itself, offline answered by the snapshot.

PyTorch's indexes (``https://download.pytorch.org/whl/rocm6.2.4``) are simple repositories: the
project page ``<index>/torch/`` lists every file. It is read in the JSON form of PEP 691 when the
server offers it, else in the HTML form of PEP 503, with a short timeout; an answer is cached for a
day (``$XDG_CACHE_HOME/pytest-rocm/index``) so ``rocm-compat doctor`` asks once. Every answer says
where it came from (the index now, or the cache of a given time), so the doctor can say which one
decided. Stdlib and ``packaging`` only; the network goes through ``fetch`` (tests pass their own, or
point ``PYTEST_ROCM_PYTORCH_INDEX`` at a loopback server).
"""

from __future__ import annotations

import hashlib
import json
import os
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
TIMEOUT_S = 3.0
CACHE_TTL_S = 24 * 3600

#: (url, headers, timeout) -> (content type, body); raises OSError (URLError is one) when unreachable
Fetch = Callable[[str, Mapping[str, str], float], "tuple[str, bytes]"]


class NotOnIndex(OSError):
    """The index answered 404 for the project page: that index (or project) does not exist."""


def urllib_fetch(url: str, headers: Mapping[str, str], timeout: float) -> tuple[str, bytes]:
    request = urllib.request.Request(url, headers=dict(headers))
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return str(response.headers.get("Content-Type", "")), bytes(response.read())
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            raise NotOnIndex(f"{url}: 404 Not Found") from exc
        raise


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


def filenames(content_type: str, body: bytes) -> list[str]:
    """The file names a project page lists, from its PEP 691 JSON or its PEP 503 HTML form."""
    text = body.decode("utf-8", errors="replace")
    if content_type.split(";")[0].strip() == PEP691_JSON or text.lstrip().startswith("{"):
        data = json.loads(text)
        files = data.get("files", []) if isinstance(data, dict) else []
        return [str(f["filename"]) for f in files if isinstance(f, dict) and "filename" in f]
    parser = _Anchors()
    parser.feed(text)
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


def lookup(
    index: str,
    project: str,
    version: str,
    fetch: Fetch = urllib_fetch,
    cache_dir: Path | None = None,
    now: Callable[[], float] = time.time,
) -> IndexAnswer | None:
    """Whether ``project==version`` is on the simple index ``index``; None when the index cannot
    be reached (the caller then falls back to the bundled snapshot and says so)."""
    url = project_page(index, project)
    try:
        wanted = str(Version(version))
    except InvalidVersion:
        return None
    cached = _read_cache(_cache_file(cache_dir, url), now()) if cache_dir is not None else None
    if cached is not None:
        return IndexAnswer(wanted in cached[1], url, "cache", cached[0])
    try:
        content_type, body = fetch(url, {"Accept": ACCEPT}, TIMEOUT_S)
        versions = versions_of(project, filenames(content_type, body))
    except NotOnIndex:
        versions = set()
    except (OSError, ValueError):  # unreachable, timed out, or not a simple page
        return None
    when = now()
    if cache_dir is not None:
        _write_cache(_cache_file(cache_dir, url), url, when, versions)
    return IndexAnswer(wanted in versions, url, "index", when)


def pytorch_index(environ: Mapping[str, str]) -> str:
    return environ.get(INDEX_VARIABLE) or PYTORCH_INDEX


def is_offline(environ: Mapping[str, str]) -> bool:
    return environ.get(OFFLINE_VARIABLE, "").strip().lower() in ("1", "true", "yes")
