"""Apply the rule table to a target's members: text rules line by line, path rules to names,
ELF rules to binaries. Matches inside comments and docstrings are kept, as ``info`` with the
context ``comment``, so a README-style remark about CUDA never decides a verdict.
"""

from __future__ import annotations

import bisect
import io
import re
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from pytest_rocm.vet.elf import ElfError, read_elf
from pytest_rocm.vet.rules import (
    BINARY,
    BUILD,
    CUDA_SRC,
    METADATA,
    NATIVE,
    NEEDED,
    PATH,
    PYTHON,
    REQUIREMENTS,
    RULES,
    SECTION,
    TEXT,
    Context,
    FileKind,
    Finding,
    Rule,
    Severity,
    Subject,
    safety_finding,
)
from pytest_rocm.vet.target import Member, Target

#: findings kept per (rule, context); all matches are counted
KEEP_PER_RULE = 200
_TEXT_MAX = 160
_HASH_COMMENTS = {PYTHON, BUILD, REQUIREMENTS}
_C_COMMENTS = {CUDA_SRC, NATIVE}


@dataclass
class ScanResult:
    findings: list[Finding] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)  # evidence matches per rule
    mentions: Counter[str] = field(default_factory=Counter)  # comment/optional matches per rule
    files: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0

    def add(self, finding: Finding) -> None:
        tally = self.counts if finding.counts else self.mentions
        tally[finding.rule] += 1
        if tally[finding.rule] <= KEEP_PER_RULE:
            self.findings.append(finding)


class _RuleIndex:
    """Rules grouped by subject and file kind."""

    def __init__(self, rules: Iterable[Rule]) -> None:
        self.rules = tuple(rules)
        self._cache: dict[tuple[Subject, FileKind | None], list[Rule]] = {}

    def by_subject(self, subject: Subject, kind: FileKind | None) -> list[Rule]:
        key = (subject, kind)
        if key not in self._cache:
            self._cache[key] = [r for r in self.rules if r.subject == subject and (not r.kinds or kind in r.kinds)]
        return self._cache[key]


def _trim(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _TEXT_MAX else text[: _TEXT_MAX - 1] + "…"


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


class _TextFile:
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


def _own_name(m: re.Match[str], own: set[str]) -> bool:
    """An ecosystem import of the package by itself (transformers importing transformers)."""
    for group in ("mod", "dist"):
        value = m.groupdict().get(group)
        if value and value.lower().replace("-", "_").replace(".", "_") in own:
            return True
    return False


def _scan_text(member: Member, index: _RuleIndex, own: set[str], result: ScanResult) -> None:
    assert member.kind is not None and member.data is not None
    rules = index.by_subject(TEXT, member.kind)
    if not rules:
        return
    text = member.data.decode("utf-8", "replace")
    tf: _TextFile | None = None
    for rule in rules:
        if rule.literals and not any(lit in text for lit in rule.literals):
            continue
        if rule.per_file:
            matches = []
            for m in rule.regex.finditer(text):
                matches.append(m)
                if len(matches) >= rule.per_file:
                    break
        else:
            matches = list(rule.regex.finditer(text))
        if not matches:
            continue
        tf = tf or _TextFile(member.path, member.kind, text)
        unless = rule.unless_regex
        if unless is not None and unless.search(text):
            continue
        last_line = -1
        for m in matches:
            if _own_name(m, own):
                continue
            number = tf.line_of(m.start())
            if number == last_line:  # one finding per line and rule
                continue
            last_line = number
            line, _ = tf.line_text(m.start())
            context: Context = ""
            if member.kind in (METADATA, REQUIREMENTS) and re.search(r"\bextra\s*==", line):
                context = "optional"
            elif tf.in_comment(m.start()):
                context = "comment"
            severity: Severity = "info" if context else rule.severity
            result.add(Finding(rule.id, member.path, number, _trim(line), severity, context))


def _scan_binary(member: Member, index: _RuleIndex, target: Target, result: ScanResult) -> None:
    try:
        if member.opener is not None:
            with member.opener() as fh:
                info = read_elf(fh)
        elif member.data is not None:
            info = read_elf(io.BytesIO(member.data))
        else:
            return
    except (ElfError, OSError, EOFError, ValueError) as exc:
        target.notes.append(safety_finding("unreadable", member.path, f"binary: {exc}"))
        return
    if info is None:
        return
    checks: tuple[tuple[Subject, list[str], str], ...] = (
        (NEEDED, info.needed, "links"),
        (SECTION, info.sections, "section"),
    )
    for subject, values, label in checks:
        for rule in index.by_subject(subject, BINARY):
            hits = [v for v in values if rule.regex.search(v)]
            if hits:
                result.add(Finding(rule.id, member.path, None, _trim(f"{label} {', '.join(hits)}"), rule.severity))


def scan(target: Target, rules: Iterable[Rule] = RULES) -> ScanResult:
    """Scan every member of the target. Reads bytes only: nothing is imported or executed."""
    started = time.perf_counter()
    index = _RuleIndex(rules)
    own = {n.lower().replace("-", "_") for n in target.top_level | {target.name}}
    result = ScanResult()
    for member in target.members:
        result.files += 1
        result.kinds[member.kind or "other"] += 1
        inner = member.path.rsplit("!", 1)[-1]
        for rule in index.by_subject(PATH, member.kind):
            if rule.regex.search(inner):
                result.add(Finding(rule.id, member.path, None, _trim(inner.rsplit("/", 1)[-1]), rule.severity))
        if member.kind == BINARY:
            _scan_binary(member, index, target, result)
        elif member.data is not None and member.kind is not None:
            _scan_text(member, index, own, result)
    for note in target.notes:
        result.add(note)
    result.seconds = time.perf_counter() - started
    return result
