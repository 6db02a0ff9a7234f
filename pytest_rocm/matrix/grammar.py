"""The one grammar of every value that reaches a generated job (``combos.toml``'s fields, the
emitters' options): a value is data, and must look like the thing it names, on its whole length.

A ``combos.toml`` may arrive in a pull request and the script made from it runs on a cluster's
login node: a newline in a runner label, a name or a version would end a line of that script and
start a command. So every text is checked for control characters anywhere (C0, C1, DEL, the
Unicode format characters: bidirectional overrides, zero-width ones; the line and paragraph
separators U+2028/U+2029) and for a length bound, then for its own shape with ``re.fullmatch``
(``$`` would accept a trailing newline). Each check returns the problem in words, or None; the
callers word the one-line error around it. Stdlib only (the noxfile imports ``matrix``).
"""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import urlsplit

#: the longest value of any field or option (a requirement with markers is the longest real one)
MAX_LENGTH = 500

NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
PYTHON_RE = re.compile(r"3\.[0-9]{1,3}")
ROCM_RE = re.compile(r"[0-9]{1,3}(\.[0-9]{1,4}){0,3}")
#: a CI runner label (``self-hosted``, ``gfx942``, ``gfx90a:xnack-``)
LABEL_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:+-]{0,99}")
#: the characters RFC 3986 allows in a URL (percent-encoding for the rest): no space, quote,
#: backslash, backtick or brace
URL_RE = re.compile(r"[A-Za-z0-9._~:/?#\[\]@!$&'()*+,;=%-]+")
#: a SLURM account or partition name, written on an ``#SBATCH`` line that sbatch parses itself
SLURM_WORD_RE = re.compile(r"[A-Za-z0-9._-]{1,100}")
#: a container image reference (``python:3.12-slim``, ``registry:5000/rocm/pytorch:latest``,
#: ``...@sha256:<hex>``), after ``{python}`` is put in
IMAGE_RE = re.compile(
    r"(?:[A-Za-z0-9.-]+(?::[0-9]+)?/)?[a-z0-9]+(?:[._-]+[a-z0-9]+)*(?:/[a-z0-9]+(?:[._-]+[a-z0-9]+)*)*"
    r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[0-9a-f]{64})?"
)
#: a Kubernetes label key (an optional DNS-subdomain prefix and ``/``) and value
LABEL_KEY_RE = re.compile(r"(?:[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?")
LABEL_VALUE_RE = re.compile(r"([A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?)?")


def hidden_character(text: str) -> str | None:
    """The first character of ``text`` that is not shown as itself (a control or format
    character, a line or paragraph separator, an unassigned or private code point), written out
    (``\\n``, ``U+202E``); None when there is none."""
    for char in text:
        category = unicodedata.category(char)
        if category.startswith("C") or category in ("Zl", "Zp"):
            return repr(char)[1:-1] if ord(char) < 0x80 else f"U+{ord(char):04X}"
    return None


def text_problem(text: str, max_length: int = MAX_LENGTH) -> str | None:
    """Why ``text`` cannot be a value of a generated job whatever its shape: a hidden character
    (anywhere), surrounding whitespace, or a length past ``max_length``."""
    hidden = hidden_character(text)
    if hidden is not None:
        return f"contains the control character {hidden}"
    if len(text) > max_length:
        return f"is {len(text)} characters long ({max_length} at most)"
    if text != text.strip():
        return "starts or ends with whitespace"
    return None


def shape_problem(text: str, pattern: re.Pattern[str], shape: str, max_length: int = MAX_LENGTH) -> str | None:
    """:func:`text_problem`, then whether the whole of ``text`` has the shape (``shape``: what it "must" do, in words)."""
    problem = text_problem(text, max_length)
    if problem is None and not pattern.fullmatch(text):
        problem = f"must {shape}"
    return problem


def url_problem(url: str) -> str | None:
    """An http(s) URL with a host, or a ``file://`` one, in RFC 3986 characters only."""
    problem = shape_problem(url, URL_RE, "be a URL (RFC 3986 characters: no spaces, quotes or backslashes)")
    if problem is not None:
        return problem
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        return f"is not a URL ({exc})"
    if parts.scheme not in ("http", "https", "file"):
        return "must be an http(s) or file URL"
    if parts.scheme != "file" and not parts.hostname:
        return "must name a host"
    return None


def package_problem(text: str) -> str | None:
    """What a job may ``pip install`` as pytest-rocm: a requirement, a wheel or folder path, or a
    URL; never a word pip would read as an option (``--index-url=...``)."""
    problem = text_problem(text, 4096)  # a path may be long
    if problem is None and text.startswith("-"):
        problem = "starts with '-' (pip would read it as an option)"
    if problem is None and not text:
        problem = "is empty"
    return problem
