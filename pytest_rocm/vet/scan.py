"""Apply the rule table to a target's members: text rules line by line, path rules to names,
ELF rules to binaries. Matches inside comments and docstrings are kept as ``info`` (context
``comment``); matches in a vendored tree the package does not build as ``info`` (context
``vendored``); CUDA matches in code the package's import does not run (context ``opt-in``,
``fallback``, ``optional-module``: :mod:`reach`, :mod:`modules`), and matches in its tests and
examples, as ``info`` too: none decides a verdict.
"""

from __future__ import annotations

import io
import re
import struct
import time
from collections.abc import Iterable
from typing import IO

from pytest_rocm.vet import gfx
from pytest_rocm.vet.elf import EM_AMDGPU, ElfError, ElfInfo, read_elf
from pytest_rocm.vet.held import Held, Key
from pytest_rocm.vet.member_text import MemberText, trim
from pytest_rocm.vet.modules import ImportGraph
from pytest_rocm.vet.purpose import optional_is_the_package
from pytest_rocm.vet.reach import import_runs_on_import, on_import_path
from pytest_rocm.vet.result import KEEP_NOT_READ, ScanResult
from pytest_rocm.vet.rule import place_of
from pytest_rocm.vet.rules import (
    BINARY,
    BUILD,
    METADATA,
    NEEDED,
    PATH,
    PYTHON,
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
from pytest_rocm.vet.vendored import VendoredTrees
from pytest_rocm.vet.weigh import USES, library_load, parses_nvidia_smi


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
        if not value:
            continue
        name = value.lower().replace("-", "_").replace(".", "_")
        # an import of cuda.bindings is cuda-python's own; a requirement on the distribution
        # cuda-bindings is another package's (cuda-python 12.9 is a metapackage of it)
        if (name.split("_bindings")[0] if group == "mod" else name) in own:
            return True
    return False


def ships(path: str) -> bool:
    """Whether a Python file is code the package ships (a module of it, a top-level module the
    build includes), not its tests, examples, docs or build script: an import there runs for users."""
    return place_of(path) == "runtime"


class _Scanner:
    def __init__(self, target: Target, rules: Iterable[Rule]) -> None:
        self.target = target
        self.index = _RuleIndex(rules)
        names = target.top_level | {target.name}
        self.own = {n.lower().replace("-", "_").replace(".", "_") for n in names}
        self.result = ScanResult()
        self.trees = VendoredTrees(strip_first=target.origin == "sdist")
        self.graph = ImportGraph(strip_first=target.origin == "sdist")
        self.held = Held()
        self.binaries: set[str] = set()
        self.nvsmi_queries: list[Finding] = []  # runtime code parsing nvidia-smi's output
        self.python: list[str] = []  # the package's runtime Python files (what its import may run)

    def wrapper_findings(self) -> list[Finding]:
        """``wraps-nvidia-smi`` when nvidia-smi's parsed output is what the package is about: a
        query in code its import loads, and nothing else it builds on (no torch, no ecosystem)."""
        if any(self.result.counts[rule] for rule in USES):
            return []
        loaded = []
        for f in self.nvsmi_queries:
            found = self.graph.module_of(f.path)
            if found is not None and self.graph.optional_part(f.path) is None:
                loaded.append(f)
        return loaded[:1]

    def add(self, finding: Finding) -> None:
        side = finding.spec.side
        tree = self.trees.tree_of(finding.path) if side in ("cuda", "rocm") else None
        if tree is None and side != "cuda":
            self.result.add(finding)
            return
        self.held.hold((tree or "", side, finding.path), finding)

    def context_of(self, key: Key) -> tuple[Context, str]:
        """The context a held group's findings take (vendored, optional, or none: evidence),
        and the part of the package it names (the optional sub-package's folder)."""
        tree, side, path = key
        if tree:
            if not self.trees.is_built(tree):
                self.result.vendored_unbuilt.add(tree)
                return "vendored", tree
            return "", ""
        if side != "cuda":  # a ROCm path in optional code is still a ROCm path for who opts in
            return "", ""
        part = self.graph.optional_part(path, binary=path in self.binaries)
        context: Context = "optional-module" if part is not None else ""
        if part is None and path in self.binaries:
            loaded = self.graph.binary_status(path)
            context, part = ("fallback" if loaded == "fallback" else "opt-in" if loaded == "opt-in" else ""), path
        if context and self._is_the_package():  # the optional path is the package: its findings decide
            return "", ""
        if context and path in self.result.cuda_binaries:
            self.result.cuda_binaries.discard(path)  # not what the package's import loads
            self.result.optional_cuda_binaries.add(path)
        return context, part or ""

    def _is_the_package(self) -> bool:
        if self.result.purpose is None:  # asked once, when every member is read
            binaries = self.binaries - self.result.rocm_binaries
            self.result.purpose = optional_is_the_package(self.target.name, self.python, binaries, self.graph)
        return bool(self.result.purpose)

    def text(self, member: Member) -> None:
        assert member.kind is not None and member.data is not None
        text = member.data.decode("utf-8", "replace")
        if member.kind == SUBMODULES:
            self.trees.read_gitmodules(text)
            return
        if member.kind == BUILD:
            self.trees.read_build(member.path, text)
            self.result.ggml.observe_build(member.path, text)
        elif member.kind == PYTHON:
            self.graph.read_python(member.path, text)
            if ships(member.path) and self.graph.module_of(member.path) is not None:  # as the graph keeps it
                self.python.append(member.path)
        tf: MemberText | None = None
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
            tf = tf or MemberText(member.path, member.kind, text)
            self._matches(member, rule, matches, tf)

    def _matches(self, member: Member, rule: Rule, matches: list[re.Match[str]], tf: MemberText) -> None:
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
            elif rule_id == "loads-nvidia-library" and not context:
                rule_id, context = library_load(tf.text, m.start(), m.group(0), line)
                severity = "warning" if rule_id == "probes-nvidia-library" else severity
            elif rule_id == "python-nvidia-smi" and not context and ships(member.path):
                if parses_nvidia_smi(tf.text):
                    self.nvsmi_queries.append(Finding("wraps-nvidia-smi", member.path, number, trim(line), "error"))
            elif rule_id == "python-cuda-only-import" and ships(member.path) and import_runs_on_import(tf.text, number):
                rule_id = "cuda-only-import-on-import-path"
            self.add(Finding(rule_id, member.path, number, trim(line), "info" if context else severity, context))

    def binary(self, member: Member) -> None:
        """The binary's NEEDED/section findings whenever its ELF headers read; its gfx targets
        apart: a fatbin that cannot be read costs only a gfx note, never the ELF findings."""
        if member.opener is None and member.data is None:
            return
        self.binaries.add(member.path)
        self.graph.add_binary(member.path)
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
            self.result.ggml.observe_needed(member.path, info.needed)
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
        result.ggml.observe_path(member.path)  # a GGML tree's layout counts, read or not
        if member.kind is None:
            result.not_read += 1
            if len(result.not_read_examples) < KEEP_NOT_READ:
                result.not_read_examples.append(member.path)
            continue
        inner = member.path.rsplit("!", 1)[-1]
        if member.kind == BINARY:
            scanner.binaries.add(member.path)  # its path findings are grouped with its ELF ones
        for rule in scanner.index.by_subject(PATH, member.kind):
            if rule.regex.search(inner):
                severity: Severity = rule.severity
                scanner.add(Finding(rule.id, member.path, None, trim(inner.rsplit("/", 1)[-1]), severity))
        if member.kind == BINARY:
            scanner.binary(member)
        elif member.data is not None and member.kind is not None:
            scanner.text(member)
    scanner.held.release(scanner.context_of, result)
    for finding in scanner.wrapper_findings():
        result.add(finding)
    for note in target.notes:
        result.add(note)
    result.seconds = time.perf_counter() - started
    return result
