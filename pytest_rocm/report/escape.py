"""Text from reports and from vetted packages, made safe for where it is shown.

Reports are shared (CI artefacts, a team page, a pull request) and ``vet --run`` prints what
code nobody trusts yet printed, so every value is hostile until escaped:

- a link only for ``http``/``https`` URLs (``javascript:`` runs when clicked): :func:`web_url`;
- a Markdown cell with HTML escaped (the Markdown is rendered with raw HTML on), no newline (it
  starts a row of its own) and no bare pipe (it adds a cell): :func:`markdown_cell`; a whole
  failure's text, lines kept, as an escaped ``<pre>`` block: :func:`markdown_pre`; and a link
  target with whitespace, pipes and brackets percent-encoded: :func:`markdown_url`;
- a CSV cell that a spreadsheet would take for a formula (``= + - @``, tab or CR first) starts
  with a quote instead (OWASP's advice): :func:`csv_cell`;
- the terminal: control characters (an escape sequence clears the screen, sets the title or
  worse) and bidirectional overrides are shown as ``\\x1b``-style text: :func:`terminal`; where
  one line is promised (a doctor check, a quoted log line, a generated script's comment) line
  breaks are written out too: :func:`terminal_line`. Every text the project did not write itself (a log, a recorded
  environment, a path) reaches a terminal through one of these two.
"""

from __future__ import annotations

import re
from urllib.parse import quote, urlsplit

from pytest_rocm._values import FLOAT_RE

#: control characters (C0 but newline and tab, DEL, C1) and the bidirectional overrides and
#: isolates that reorder what a reader sees (the "trojan source" characters)
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_LINE_BREAKS = re.compile(r"[\r\n\u2028\u2029\x85]+")
_BREAKS = re.compile("[\r\n\u2028\u2029]")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _shown(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal(text: str) -> str:
    """``text`` for a terminal: newlines and tabs kept, every other control character written out."""
    return _UNSAFE.sub(_shown, text)


def terminal_line(text: str) -> str:
    """``text`` as one terminal line: :func:`terminal`, and the line breaks it keeps written out
    too (``\\x0a``, ``\\u2028``), so a value cannot start a line that looks like the tool's own,
    nor end a generated script's comment and start a command."""
    return _BREAKS.sub(_shown, terminal(text))


def web_url(url: object) -> str | None:
    """``url`` when it is an ``http``/``https`` URL with a host and nothing hidden in it, else None."""
    if not isinstance(url, str) or _UNSAFE.search(url) or _LINE_BREAKS.search(url) or url != url.strip():
        return None
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    return url if parts.scheme.lower() in ("http", "https") and parts.netloc else None


def markdown_cell(text: str) -> str:
    """One Markdown table cell: HTML escaped, one line, pipes escaped, controls written out."""
    one_line = _LINE_BREAKS.sub(" ", text)
    # ``<`` opens every tag and ``&`` every entity; ``>`` alone is harmless and stays readable (``>900 s``)
    return terminal(one_line.replace("&", "&amp;").replace("<", "&lt;")).replace("|", "\\|")


def markdown_pre(text: str) -> str:
    """A ``<pre>`` block of a Markdown page (a failure's whole text, lines kept): HTML escaped, so
    it can neither close the block nor open a tag; controls written out; a line that is blank
    after stripping gets a space escape (a blank line would end the HTML block early in some
    renderers)."""
    escaped = terminal(text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"))
    lines = [line if line.strip() else "&#32;" for line in _LINE_BREAKS.sub("\n", escaped).split("\n")]
    return "<pre>" + "\n".join(lines) + "</pre>"


def markdown_url(url: str) -> str:
    """A link target inside ``(...)``: spaces, pipes, brackets, quotes and angle brackets encoded."""
    return quote(url, safe=":/?#@!$&*+,;=%~-._")


def csv_cell(value: object) -> object:
    """A CSV value a spreadsheet shows as text: a string that would start a formula gets a
    leading ``'`` (a plain number such as ``-1.5`` is left as it is)."""
    if isinstance(value, str) and value.startswith(_FORMULA_START) and not FLOAT_RE.fullmatch(value):
        return "'" + value
    return value
