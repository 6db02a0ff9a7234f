"""A text member as the scan sees it: lines, and whether a match sits in a comment or docstring.

Matches inside comments and docstrings are kept, as ``info`` with the context ``comment``, so a
README-style remark about CUDA never decides a verdict.
"""

from __future__ import annotations

import bisect
import re

from pytest_rocm.vet.kinds import BUILD, CUDA_SRC, NATIVE, PYTHON, REQUIREMENTS

TEXT_MAX = 160
_HASH_COMMENTS = {PYTHON, BUILD, REQUIREMENTS}
_C_COMMENTS = {CUDA_SRC, NATIVE}


def trim(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= TEXT_MAX else text[: TEXT_MAX - 1] + "…"


def _prefix_has_comment(prefix: str, marker: str) -> bool:
    """Whether ``marker`` starts a comment in this line prefix (outside string quotes)."""
    quote = ""
    i = 0
    while i < len(prefix):
        ch = prefix[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif prefix.startswith(marker, i):
            return True
        i += 1
    return False


_DOCSTRING = re.compile(r"^[ \t]*[rRuU]?(\"\"\"|''')", re.MULTILINE)
_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)


class MemberText:
    def __init__(self, path: str, kind: str, text: str) -> None:
        self.path, self.kind, self.text = path, kind, text
        self._newlines: list[int] | None = None
        self._spans: list[tuple[int, int]] | None = None

    def line_of(self, pos: int) -> int:
        if self._newlines is None:
            self._newlines = [m.start() for m in re.finditer("\n", self.text)]
        return bisect.bisect_left(self._newlines, pos) + 1

    def line_text(self, pos: int) -> tuple[str, int]:
        start = self.text.rfind("\n", 0, pos) + 1
        end = self.text.find("\n", pos)
        return self.text[start : end if end >= 0 else len(self.text)], pos - start

    def _comment_spans(self) -> list[tuple[int, int]]:
        if self._spans is None:
            spans: list[tuple[int, int]] = []
            if self.kind in _C_COMMENTS:
                spans = [m.span() for m in _BLOCK_COMMENT.finditer(self.text)]
            elif self.kind in (PYTHON, BUILD):
                pos = 0
                while (m := _DOCSTRING.search(self.text, pos)) is not None:
                    end = self.text.find(m.group(1), m.end())
                    end = len(self.text) if end < 0 else end + 3
                    spans.append((m.start(), end))
                    pos = end
            self._spans = spans
        return self._spans

    def in_comment(self, pos: int) -> bool:
        line, col = self.line_text(pos)
        if self.kind in _C_COMMENTS and _prefix_has_comment(line[:col], "//"):
            return True
        if self.kind in _HASH_COMMENTS and _prefix_has_comment(line[:col], "#"):
            return True
        spans = self._comment_spans()
        i = bisect.bisect_right(spans, (pos, 1 << 62)) - 1
        return i >= 0 and spans[i][0] <= pos < spans[i][1]
