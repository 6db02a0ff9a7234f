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
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import IO

from pytest_rocm.vet import gfx
from pytest_rocm.vet.elf import EM_AMDGPU, ElfError, ElfInfo, read_elf
from pytest_rocm.vet.modules import ImportGraph
from pytest_rocm.vet.reach import has_fallback, import_runs_on_import, on_import_path, reach_at, unit_calls
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
    #: CUDA findings in optional code, by the part they are in ("numba/cuda/: a sub-package the
    #: package's import does not load"): a caveat, not the verdict
    optional_parts: Counter[str] = field(default_factory=Counter)
    #: CUDA/ROCm findings in the package's tests and examples (not counted), by place, and the first
    elsewhere: Counter[str] = field(default_factory=Counter)
    elsewhere_first: dict[str, str] = field(default_factory=dict)

    def add(self, finding: Finding) -> None:
        tally = self.counts if finding.counts else self.mentions
        tally[finding.rule] += 1
        if not finding.context and finding.spec.side in ("cuda", "rocm") and not finding.counts:
            self.elsewhere[finding.place] += 1
            self.elsewhere_first.setdefault(finding.place, finding.path)
        if tally[finding.rule] <= KEEP_PER_RULE:
            self.findings.append(finding)


#: what a held group of findings is: (vendored tree or "", side, member path)
_Key = tuple[str, str, str]
_OPTIONAL_WHY = {
    "optional-module": "a part of the package its own import does not load",
    "fallback": "loaded only inside a try whose except carries on",
    "opt-in": "loaded only by code the import path does not run",
}


class _Held:
    """Findings whose weight is known only once the whole target is read: those in vendored
    trees (does the package build them?) and CUDA findings (does the package's import load
    their sub-package, their binary?). Bounded: KEEP_PER_RULE kept per group and rule, all counted."""

    def __init__(self) -> None:
        self.kept: dict[_Key, list[Finding]] = {}
        self.counts: dict[_Key, Counter[tuple[str, Context]]] = {}

    def hold(self, key: _Key, finding: Finding) -> None:
        counts = self.counts.setdefault(key, Counter())
        counts[finding.rule, finding.context] += 1
        if counts[finding.rule, finding.context] <= KEEP_PER_RULE:
            self.kept.setdefault(key, []).append(finding)

    def release(self, context_of: Callable[[_Key], tuple[Context, str]], result: ScanResult) -> None:
        for key, counts in self.counts.items():
            kept = self.kept.get(key, [])
            context, part = context_of(key)
            for f in kept:
                now = context if context and (context == "vendored" or not f.context) else f.context
                result.add(Finding(f.rule, f.path, f.line, f.text, "info" if now else f.severity, now))
            for (rule, was), n in counts.items():  # the ones beyond the kept examples
                now = context if context and (context == "vendored" or not was) else was
                extra = n - sum(1 for f in kept if f.rule == rule and f.context == was)
                counted = not now and place_of(kept[0].path) in ("runtime", "build")
                (result.counts if counted else result.mentions)[rule] += extra
                if now in _OPTIONAL_WHY and place_of(key[2]) == "runtime":  # named by the part its context comes from
                    result.optional_parts[f"{part if now == context else key[2]}: {_OPTIONAL_WHY[now]}"] += n


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


#: nvidia-smi asked for machine-readable output: the package parses it (GPUtil's --query-gpu)
_NVSMI_QUERY = re.compile(
    r"--query-(?:gpu|compute-apps|accounted-apps)\b|--format=csv|--xml-format\b|[\"']-q[\"'],\s*[\"']-x[\"']"
)
#: a file that also asks AMD's tools is a multi-vendor monitor: nvidia-smi is one source of several
_AMD_SMI = re.compile(r"\b(?:rocm-smi|amd-smi|amdsmi|rocm_smi|pyrsmi)\b")
#: what a package builds on: one that wraps nvidia-smi *among other things* keeps the caveat
_USES = ("uses-torch", "requires-torch", "uses-ecosystem", "requires-ecosystem")
#: the calls that load a library by name (a unit calling none only names libraries)
_LOADERS = frozenset({"CDLL", "WinDLL", "OleDLL", "PyDLL", "LoadLibrary", "LoadLibraryEx", "dlopen", "find_library"})
_VENDOR_API = re.compile(r"\b(?:nvml|cuda|cu|cublas|cudnn|nccl|nvrtc)[A-Z]\w*")
#: a binding names many of the library's functions (pynvml: hundreds); a probe one or two
BINDING_SYMBOLS = 3


def _few_calls(text: str) -> bool:
    return len(set(_VENDOR_API.findall(text))) < BINDING_SYMBOLS


#: a binding defines functions named after the library's API (pynvml's ``def nvmlInit():``);
#: a package that asks the library one question (its version) does not
_BINDING_DEF = re.compile(r"^[ \t]*def[ \t]+(?:nvml|cuda|cu|cublas|cudnn|nccl|nvrtc)[A-Z]\w*", re.MULTILINE)


def _only_finds(match: str, line: str) -> bool:
    """``find_library("cudart")`` alone looks a library up (None when absent): no load, unless
    the same line hands it to a loader (``CDLL(find_library("cudart"))``)."""
    return match.startswith("find_library") and not re.search(r"\b(?:CDLL|WinDLL|LoadLibrary\w*|dlopen)\s*\(", line)


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
        self.held = _Held()
        self.binaries: set[str] = set()
        self.nvsmi_queries: list[Finding] = []  # runtime code parsing nvidia-smi's output

    def wrapper_findings(self) -> list[Finding]:
        """``wraps-nvidia-smi`` when nvidia-smi's parsed output is what the package is about: a
        query in code its import loads, and nothing else it builds on (no torch, no ecosystem)."""
        if any(self.result.counts[rule] for rule in _USES):
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

    def context_of(self, key: _Key) -> tuple[Context, str]:
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
        if context:
            self.result.cuda_binaries.discard(path)  # not what the package's import loads
        return context, part or ""

    def text(self, member: Member) -> None:
        assert member.kind is not None and member.data is not None
        text = member.data.decode("utf-8", "replace")
        if member.kind == SUBMODULES:
            self.trees.read_gitmodules(text)
            return
        if member.kind == BUILD:
            self.trees.read_build(member.path, text)
        elif member.kind == PYTHON:
            self.graph.read_python(member.path, text)
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
            elif rule_id == "loads-nvidia-library" and not context:
                probe = _few_calls(tf.text) and not _BINDING_DEF.search(tf.text)
                if probe and (has_fallback(tf.text, m.start()) or _only_finds(m.group(0), line)):
                    rule_id, severity = "probes-nvidia-library", "warning"
                elif reach_at(tf.text, m.start()) in ("opt-in", "main") and (
                    probe or not unit_calls(tf.text, m.start(), _LOADERS)
                ):
                    context = "opt-in"  # a helper only an opt-in API runs (onnxruntime's preload_dlls)
            elif rule_id == "python-nvidia-smi" and not context and ships(member.path):
                if _NVSMI_QUERY.search(tf.text) and not _AMD_SMI.search(tf.text):
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
