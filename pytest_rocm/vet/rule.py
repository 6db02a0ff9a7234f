"""What a vet rule is, what a finding is, and the safety rules the readers report with.

Each rule names what it looks at (``subject``): a line of a file's ``text``, a member's ``path``,
a library an ELF binary ``needed``, or an ELF ``section`` name; which file ``kinds`` it applies to;
which ``side`` it is evidence for; and its ``tier``, which is how much the verdict makes of it:

- ``core``: built or linked in, decides the class (a binary linked to libcudart, ``nvcc`` or
  ``CUDAExtension`` in the build, an ``nvidia-*`` requirement, a ctypes load of libnvidia-ml, a
  CUDA kernel JIT-compiled on the import path; a HIP binary or a ROCm build path);
- ``source``: GPU source code (CUDA API calls, ``.cu`` files; HIP includes, Triton kernels);
- ``caveat``: a CUDA assumption in Python that fails or misleads on ROCm but is not native code;
- ``aware``: Python that branches on ROCm (``torch.version.hip``): a ROCm path for native code
  next to it, not native code itself;
- ``mention``: a description that mentions ROCm (no code behind it, by itself);
- ``usage``: what the package builds on (torch, the PyTorch ecosystem, other GPU libraries).

The tables themselves are in ``rules_cuda``, ``rules_rocm`` and ``rules_deps``; ``registry`` joins
them into the one mapping by id, and ``finding`` says what a finding is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final, Literal, get_args

from pytest_rocm.vet.kinds import FileKind

#: what a rule looks at: a line of text, a member's path, an ELF NEEDED library, an ELF section;
#: ``safety``: what the readers report about members they refuse to read
#: ``derived``: made by the scan from another finding (a JIT load found to be on the import path)
Subject = Literal["text", "path", "needed", "section", "safety", "derived"]
TEXT: Final = "text"
PATH: Final = "path"
NEEDED: Final = "needed"
SECTION: Final = "section"
SAFETY: Final = "safety"
DERIVED: Final = "derived"
#: which way a finding points
Side = Literal["cuda", "rocm", "ecosystem", "torch", "dependency", "build", "safety"]
#: how much the verdict makes of a finding (the module docstring)
Tier = Literal["core", "source", "caveat", "aware", "mention", "usage", "safety"]
Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = get_args(Severity)
#: where a finding sits: "comment" (in a comment or docstring), "optional" (an extra's
#: requirement), "vendored" (in another project's tree that the package does not build),
#: "opt-in" (code the import path does not run: a function only an opt-in API calls),
#: "fallback" (a load in a ``try`` whose ``except`` carries on), "optional-module" (in a
#: sub-package the package's own import does not load): none of them decides a verdict
Context = Literal["", "comment", "optional", "vendored", "opt-in", "fallback", "optional-module"]
#: what part of the package a file is: its runtime code (modules, binaries, metadata), its
#: build, its tests, or its examples (demos, benchmarks, docs); only runtime and build decide
Place = Literal["runtime", "build", "tests", "examples"]
#: test trees (a leading underscore ignored: ``_tests``, ``_suites``), and CI configuration, which
#: describes the machines the tests run on
_TEST_DIRS = frozenset(
    {"tests", "test", "testing", "test_utils", "unittests", "unit_tests", "testdata", "test_data", "suites"}
    | {".ci", ".github", ".gitlab", ".circleci"}
)
_EXAMPLE_DIRS = frozenset(
    {
        "examples",
        "example",
        "demos",
        "demo",
        "samples",
        "benchmarks",
        "benchmark",
        "docs",
        "doc",
        "notebooks",
        "tutorials",
    }
)
_BUILD_FILES = frozenset({"setup.py", "setup.cfg", "pyproject.toml", "cmakelists.txt", "makefile", "meson.build"})


def place_of(path: str) -> Place:
    """Where a member lives, from its path (the innermost archive's, for a nested one)."""
    parts = path.rsplit("!", 1)[-1].lower().split("/")
    name = parts[-1]
    for part in parts[:-1]:
        if part in _TEST_DIRS or part.lstrip("_") in _TEST_DIRS or part.endswith("_tests"):
            return "tests"
        if part in _EXAMPLE_DIRS:
            return "examples"
    if name == "conftest.py" or (name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))):
        return "tests"
    if name in _BUILD_FILES or name.endswith((".cmake", ".bzl")) or name == "noxfile.py":
        return "build"
    return "runtime"


@dataclass(frozen=True, kw_only=True)
class Rule:
    """One rule, as data: built by keyword only (three strings in a row read alike)."""

    id: str
    subject: Subject
    pattern: str
    side: Side
    tier: Tier
    severity: Severity  # a match in a comment is always info
    message: str
    kinds: frozenset[FileKind] = field(default_factory=frozenset)  # empty: any kind
    #: no finding when this also matches somewhere in the same file (a HIP branch next to a
    #: CUDA check)
    unless_in_file: str | None = None
    #: no finding unless this also matches somewhere in the same file (a library name counts as
    #: a binding only in a file that loads libraries)
    only_if_in_file: str | None = None
    flags: int = re.MULTILINE
    #: a file without any of these substrings cannot match (a fast pre-filter: scanning torch
    #: with every regex over every file would take minutes)
    literals: tuple[str, ...] = ()
    #: at most this many findings per file (0: all); "uses torch" once per file is enough
    per_file: int = 0

    @property
    def regex(self) -> re.Pattern[str]:
        return _compiled(self.pattern, self.flags)

    @property
    def unless_regex(self) -> re.Pattern[str] | None:
        return _compiled(self.unless_in_file, self.flags) if self.unless_in_file else None

    @property
    def only_if_regex(self) -> re.Pattern[str] | None:
        return _compiled(self.only_if_in_file, self.flags) if self.only_if_in_file else None


_CACHE: dict[tuple[str, int], re.Pattern[str]] = {}


def _compiled(pattern: str, flags: int) -> re.Pattern[str]:
    key = (pattern, flags)
    if key not in _CACHE:
        _CACHE[key] = re.compile(pattern, flags)
    return _CACHE[key]


def kinds(*names: FileKind) -> frozenset[FileKind]:
    return frozenset(names)


def _safety(rule_id: str, severity: Severity, message: str) -> Rule:
    return Rule(
        id=rule_id, subject=SAFETY, pattern="", side="safety", tier="safety", severity=severity, message=message
    )


#: what the readers of archives and folders report about members they refuse to read
SAFETY_RULES: tuple[Rule, ...] = (
    _safety("unsafe-path", "warning", "archive member with an absolute path or '..' escaping the tree: not read"),
    _safety("unsafe-link", "warning", "symbolic or hard link pointing outside the tree (or in a loop): not followed"),
    _safety("special-file", "info", "device, FIFO or other special file: not read"),
    _safety("oversized-member", "warning", "file larger than the scan's size limit: not read"),
    _safety(
        "archive-too-large", "warning", "archive expands beyond the scan's total size limit: the rest was not read"
    ),
    _safety(
        "too-many-members",
        "warning",
        "archive or folder with more members than the scan's limit: the rest was not read",
    ),
    _safety(
        "nested-archive-skipped",
        "warning",
        "archive inside an archive beyond the nesting limit (or too large): not opened",
    ),
    _safety("unreadable", "warning", "file or nested archive that could not be read (corrupt, permission denied)"),
    _safety(
        "elf-limit", "info", "binary with more dynamic sections or libraries than the scan reads: the rest ignored"
    ),
    _safety("outside-install", "info", "installed file outside the distribution's install folder (a script): not read"),
)
#: limits that leave the scan incomplete: the verdict says so and lowers its confidence
INCOMPLETE = ("archive-too-large", "too-many-members")
#: members left unread by a size or time bound, or unreadable: when one is in the package's
#: runtime code or build, the class is only what the files read establish ("at least")
PARTIAL = (*INCOMPLETE, "oversized-member", "nested-archive-skipped", "unreadable")
