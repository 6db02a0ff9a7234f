"""What ``vet`` reads, as plain data: a :class:`Target` streaming :class:`Member` records, the
:class:`Limits` on reading them, and :class:`BadTarget` for input that cannot be vetted.

Kept apart from the readers (archives, disk, sources) so that scan, verdict and render can name
these types without importing the readers, and the readers can share them without a cycle.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import IO

from pytest_rocm.vet.rules import FileKind, Finding


class BadTarget(ValueError):
    """The target cannot be vetted (missing, unknown distribution, corrupt archive)."""


@dataclass(frozen=True)
class Limits:
    member_bytes: int = 16 * 2**20  # a text file larger than this is not read
    #: a binary larger than this is not parsed; as large as the whole archive may expand: a
    #: real library can be over 1 GiB (onnxruntime-rocm), and reading it costs disk, not memory
    binary_bytes: int = 4 * 2**30
    total_bytes: int = 4 * 2**30  # what an archive may expand to, all members together
    nested_bytes: int = 256 * 2**20  # a nested archive larger than this is not opened
    depth: int = 2  # archives inside archives: the target is depth 0
    #: members of one archive or folder read at most (a tar is streamed: the limit bounds time;
    #: a zip's central directory is parsed whole, so one over the limit is not opened)
    members: int = 1_000_000
    zip_members: int = 250_000


@dataclass
class Member:
    path: str
    kind: FileKind | None
    size: int
    data: bytes | None = None  # the content, when read
    opener: Callable[[], IO[bytes]] | None = None  # a seekable stream (large binaries)


@dataclass
class Target:
    spec: str  # what the user named
    origin: str  # installed | wheel | sdist | folder
    name: str  # distribution (or folder) name
    version: str | None
    top_level: set[str]
    root: str  # where it was read from (for the report)
    members: Iterator[Member] = field(default_factory=lambda: iter(()))
    notes: list[Finding] = field(default_factory=list)  # safety findings, filled while iterating
