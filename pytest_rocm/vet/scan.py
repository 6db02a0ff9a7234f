"""Apply the rule table to a target's members: text rules line by line, path rules to names,
ELF rules to binaries. Matches inside comments and docstrings are kept as ``info`` (context
``comment``); matches in a vendored tree the package does not build as ``info`` (context
``vendored``): neither decides a verdict.
"""

from __future__ import annotations

import io
import re
import struct
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import IO

from pytest_rocm.vet import gfx
from pytest_rocm.vet.elf import EM_AMDGPU, ElfError, ElfInfo, read_elf
from pytest_rocm.vet.jit import has_fallback, import_runs_on_import, on_import_path
from pytest_rocm.vet.rules import (
    BINARY,
    BUILD,
    METADATA,
    NEEDED,
    PATH,
    REQUIREMENTS,
    RULES,
    SECTION,
    SUBMODULES,
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
from pytest_rocm.vet.textfile import TextFile, trim
from pytest_rocm.vet.vendored import VendoredTrees

#: findings kept per (rule, context); all matches are counted
KEEP_PER_RULE = 200
#: paths of members not read that the report names (all are counted)
KEEP_NOT_READ = 10


@dataclass
class ScanResult:
    findings: list[Finding] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)  # evidence matches per rule
    mentions: Counter[str] = field(default_factory=Counter)  # comment/optional/vendored matches per rule
    files: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0
    #: binaries by what they were built for (NEEDED libraries and fatbin sections): the
    #: evidence of what was built, which outranks what header text says could be built
    cuda_binaries: set[str] = field(default_factory=set)
    rocm_binaries: set[str] = field(default_factory=set)
    #: AMD code-object targets per binary (``amdgcn-amd-amdhsa--gfx1100``), from HIP fatbins
    gfx_targets: dict[str, list[str]] = field(default_factory=dict)
    gfx_notes: dict[str, str] = field(default_factory=dict)  # what could not be read of them
    #: vendored trees whose findings did not count (the package does not build them)
    vendored_unbuilt: set[str] = field(default_factory=set)
    #: members whose kind no rule reads (docs, data, licences, a script without a suffix): how
    #: many, and the first ``KEEP_NOT_READ`` paths, so the report says what the verdict did not see
    not_read: int = 0
    not_read_examples: list[str] = field(default_factory=list)

    def add(self, finding: Finding) -> None:
        tally = self.counts if finding.counts else self.mentions
        tally[finding.rule] += 1
        if tally[finding.rule] <= KEEP_PER_RULE:
            self.findings.append(finding)


class _Held:
    """Findings in vendored trees, held until the whole target is read (whether the package
    builds a tree is known only then). Bounded: KEEP_PER_RULE kept per tree and rule, all counted."""

    def __init__(self) -> None:
        self.kept: dict[str, list[Finding]] = {}
        self.counts: dict[str, Counter[str]] = {}

    def hold(self, tree: str, finding: Finding) -> None:
        counts = self.counts.setdefault(tree, Counter())
        counts[finding.rule] += 1
        if counts[finding.rule] <= KEEP_PER_RULE:
            self.kept.setdefault(tree, []).append(finding)

    def release(self, trees: VendoredTrees, result: ScanResult) -> None:
        for tree, counts in self.counts.items():
            built = trees.is_built(tree)
            if not built:
                result.vendored_unbuilt.add(tree)
            kept = self.kept.get(tree, [])
            for f in kept:
                result.add(f if built else Finding(f.rule, f.path, f.line, f.text, "info", "vendored"))
            tally = result.counts if built else result.mentions
            for rule, n in counts.items():  # the ones beyond the kept examples
                tally[rule] += n - sum(1 for f in kept if f.rule == rule)


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


def _own_name(m: re.Match[str], own: set[str]) -> bool:
    """A match naming the package itself (transformers importing transformers, pycuda's
    ``"pycuda": [`` package-data key): a package never depends on itself."""
    for group in ("mod", "dist"):
        value = m.groupdict().get(group)
        if value and value.lower().replace("-", "_").replace(".", "_").split("_bindings")[0] in own:
            return True
    return False


_VENDOR_API = re.compile(r"\b(?:nvml|cuda|cu|cublas|cudnn|nccl|nvrtc)[A-Z]\w*")
#: a binding names many of the library's functions (pynvml: hundreds); a probe one or two
BINDING_SYMBOLS = 3


def _few_calls(text: str) -> bool:
    return len(set(_VENDOR_API.findall(text))) < BINDING_SYMBOLS


#: folders and files a build does not ship as the package's code (its tests, examples, docs)
_NOT_SHIPPED_DIRS = frozenset(
    {"tests", "test", "testing", "examples", "example", "docs", "doc", "benchmarks", "benchmark"}
)
_NOT_SHIPPED_FILES = frozenset({"setup.py", "conftest.py", "noxfile.py", "fabfile.py"})


def ships(path: str) -> bool:
    """Whether a Python file is code the package ships (a module of it, a top-level module the
    build includes), not its tests, examples, docs or build script: an import there runs for users."""
    parts = path.rsplit("!", 1)[-1].split("/")
    name = parts[-1]
    if name in _NOT_SHIPPED_FILES or name.startswith("test_") or name.endswith("_test.py"):
        return False
    return not any(part.lower() in _NOT_SHIPPED_DIRS for part in parts[:-1])


class _Scanner:
    def __init__(self, target: Target, rules: Iterable[Rule]) -> None:
        self.target = target
        self.index = _RuleIndex(rules)
        names = target.top_level | {target.name}
        self.own = {n.lower().replace("-", "_").replace(".", "_") for n in names}
        self.result = ScanResult()
        self.trees = VendoredTrees(strip_first=target.origin == "sdist")
        self.held = _Held()

    def add(self, finding: Finding) -> None:
        tree = self.trees.tree_of(finding.path) if finding.spec.side in ("cuda", "rocm") else None
        if tree is None:
            self.result.add(finding)
        else:
            self.held.hold(tree, finding)

    def text(self, member: Member) -> None:
        assert member.kind is not None and member.data is not None
        text = member.data.decode("utf-8", "replace")
        if member.kind == SUBMODULES:
            self.trees.read_gitmodules(text)
            return
        if member.kind == BUILD:
            self.trees.read_build(member.path, text)
        tf: TextFile | None = None
        present: dict[str, bool] = {}  # literal -> in this text (rules share many: once each)

        def has(literal: str) -> bool:
            if literal not in present:
                present[literal] = literal in text
            return present[literal]

        for rule in self.index.by_subject(TEXT, member.kind):
            if rule.literals and not any(has(lit) for lit in rule.literals):
                continue
            matches = []
            for m in rule.regex.finditer(text):
                matches.append(m)
                if rule.per_file and len(matches) >= rule.per_file:
                    break
            if not matches:
                continue
            unless, only_if = rule.unless_regex, rule.only_if_regex
            if (unless is not None and unless.search(text)) or (only_if is not None and not only_if.search(text)):
                continue
            tf = tf or TextFile(member.path, member.kind, text)
            self._matches(member, rule, matches, tf)

    def _matches(self, member: Member, rule: Rule, matches: list[re.Match[str]], tf: TextFile) -> None:
        last_line = -1
        for m in matches:
            if _own_name(m, self.own):
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
            rule_id, severity = rule.id, rule.severity
            if rule_id == "cuda-jit-load" and on_import_path(tf.text, m.start()):
                rule_id, severity = "cuda-jit-import-path", "error"
            elif rule_id == "loads-nvidia-library" and has_fallback(tf.text, m.start()) and _few_calls(tf.text):
                rule_id, severity = "probes-nvidia-library", "warning"
            elif rule_id == "python-cuda-only-import" and ships(member.path) and import_runs_on_import(tf.text, number):
                rule_id = "cuda-only-import-on-import-path"
            self.add(Finding(rule_id, member.path, number, trim(line), "info" if context else severity, context))

    def binary(self, member: Member) -> None:
        """The binary's NEEDED/section findings whenever its ELF headers read; its gfx targets
        apart: a fatbin that cannot be read costs only a gfx note, never the ELF findings."""
        if member.opener is None and member.data is None:
            return
        try:
            stream = member.opener() if member.opener is not None else io.BytesIO(member.data or b"")
            with stream as fh:
                info = read_elf(fh)
                found = self._targets(fh, info) if info is not None else ([], "")
        except (ElfError, OSError, EOFError, ValueError, struct.error) as exc:
            self.target.notes.append(safety_finding("unreadable", member.path, f"binary: {exc}"))
            return
        targets, note = found
        if targets or note:
            self.result.gfx_targets[member.path] = targets
        if note:
            self.result.gfx_notes[member.path] = note
        if info is not None:
            self._elf_findings(member, info)

    @staticmethod
    def _targets(fh: IO[bytes], info: ElfInfo) -> tuple[list[str], str]:
        try:
            return gfx.read_targets(fh, info)
        except (OSError, EOFError, ValueError, struct.error) as exc:
            return [], f"targets unreadable: {exc}"

    def _elf_findings(self, member: Member, info: ElfInfo) -> None:
        if info.truncated:
            self.target.notes.append(safety_finding("elf-limit", member.path, info.truncated))
        if info.machine == EM_AMDGPU and self.trees.tree_of(member.path) is None:
            self.result.rocm_binaries.add(member.path)  # an AMD GPU code object (.hsaco)
        checks: tuple[tuple[Subject, list[str], str], ...] = (
            (NEEDED, info.needed, "links"),
            (SECTION, info.sections, "section"),
        )
        for subject, values, label in checks:
            for rule in self.index.by_subject(subject, BINARY):
                hits = list(dict.fromkeys(v for v in values if rule.regex.search(v)))
                if hits:
                    # a binary built for a side: what it links or carries is evidence of what was built
                    if rule.side in ("cuda", "rocm") and self.trees.tree_of(member.path) is None:
                        built = self.result.cuda_binaries if rule.side == "cuda" else self.result.rocm_binaries
                        built.add(member.path)
                    self.add(Finding(rule.id, member.path, None, trim(f"{label} {', '.join(hits)}"), rule.severity))


def scan(target: Target, rules: Iterable[Rule] = RULES) -> ScanResult:
    """Scan every member of the target. Reads bytes only: nothing is imported or executed."""
    started = time.perf_counter()
    scanner = _Scanner(target, rules)
    result = scanner.result
    for member in target.members:
        result.files += 1
        result.kinds[member.kind or "other"] += 1
        if member.kind is None:
            result.not_read += 1
            if len(result.not_read_examples) < KEEP_NOT_READ:
                result.not_read_examples.append(member.path)
            continue
        inner = member.path.rsplit("!", 1)[-1]
        for rule in scanner.index.by_subject(PATH, member.kind):
            if rule.regex.search(inner):
                severity: Severity = rule.severity
                scanner.add(Finding(rule.id, member.path, None, trim(inner.rsplit("/", 1)[-1]), severity))
        if member.kind == BINARY:
            scanner.binary(member)
        elif member.data is not None and member.kind is not None:
            scanner.text(member)
    scanner.held.release(scanner.trees, result)
    for note in target.notes:
        result.add(note)
    result.seconds = time.perf_counter() - started
    return result
