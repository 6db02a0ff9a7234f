"""Which AMD GPUs a binary was built for, from its HIP fatbin or code-object metadata.

A HIP binary embeds its device code in the ``.hip_fatbin`` section as clang offload bundles: a
``__CLANG_OFFLOAD_BUNDLE__`` header lists one entry per target, named like
``hipv4-amdgcn-amd-amdhsa--gfx1100`` (features after a colon: ``gfx90a:xnack-``). Newer ROCm
compresses each bundle (``CCOB`` magic, then zlib or zstd data); only the head of the stream is
inflated, which holds the entry names. zstd needs the ``zstandard`` module (or Python 3.14's
``compression.zstd``); without it the targets of such a bundle are reported as unknown. A
standalone code object (``.hsaco``) names its target in its metadata note
(``amdhsa.target: amdgcn-amd-amdhsa--gfx942``). Reads are bounded (:data:`MAX_SECTION_BYTES`).
"""

from __future__ import annotations

import re
import struct
import zlib
from typing import IO

from pytest_rocm.vet.elf import EM_AMDGPU, ElfInfo

MAX_SECTION_BYTES = 64 * 2**20  # of a fatbin section read to look for bundles
MAX_BUNDLES = 4096
_HEAD = 1 << 20  # bytes of a compressed bundle inflated: the entry table is at its start
_TRIPLE = re.compile(rb"amdgcn-amd-amdhsa-[a-z0-9]*-(gfx[0-9a-z-]+(?::[a-z]+[+-])*)")
_BUNDLE = b"__CLANG_OFFLOAD_BUNDLE__"
_COMPRESSED = b"CCOB"


def _inflate_head(method: int, payload: bytes) -> bytes | None:
    """The first _HEAD bytes of a compressed bundle; None when the method cannot be read here."""
    if method == 0:  # llvm::compression::Format::Zlib
        try:
            return zlib.decompressobj().decompress(payload, _HEAD)
        except zlib.error:
            return b""
    if method == 1:  # Zstd
        try:
            import zstandard  # type: ignore[import-not-found, unused-ignore]
        except ImportError:
            return None
        try:
            with zstandard.ZstdDecompressor().stream_reader(payload) as reader:
                return bytes(reader.read(_HEAD))
        except zstandard.ZstdError:
            return b""
    return b""


def _compressed_payload(data: bytes, at: int) -> tuple[int, bytes] | None:
    """(method, compressed bytes) of the CCOB bundle at ``at`` (header versions 1-3); None when
    its header runs past the data (a ``CCOB`` near the end: not a bundle, or a cut one)."""
    if at + 8 > len(data):
        return None
    version, method = struct.unpack_from("<HH", data, at + 4)
    header = {1: 4 + 4 + 4 + 8, 2: 4 + 4 + 4 + 4 + 8, 3: 4 + 4 + 8 + 8 + 8}.get(version, 24)
    if at + header > len(data):
        return None
    if version >= 2:
        total = struct.unpack_from("<Q" if version >= 3 else "<I", data, at + 8)[0]
        end = min(len(data), at + max(total, header))
    else:
        end = len(data)
    return method, data[at + header : end]


def _targets_in(data: bytes) -> set[str]:
    return {m.group(1).decode("ascii", "replace") for m in _TRIPLE.finditer(data)}


def _bundle_ids(data: bytes) -> set[str]:
    """The targets named by the entry tables of the uncompressed bundles in ``data``:
    magic, u64 count, then per entry u64 offset, u64 size, u64 id length, the id."""
    targets: set[str] = set()
    pos, seen = 0, 0
    while seen < MAX_BUNDLES and (pos := data.find(_BUNDLE, pos)) >= 0:
        seen += 1
        at = pos + len(_BUNDLE)
        pos = at
        if at + 8 > len(data):
            break
        (count,) = struct.unpack_from("<Q", data, at)
        at += 8
        for _ in range(min(count, MAX_BUNDLES)):
            if at + 24 > len(data):
                break
            _, _, length = struct.unpack_from("<QQQ", data, at)
            entry = data[at + 24 : at + 24 + min(length, 256)]
            at += 24 + length
            targets |= _targets_in(entry)
    return targets


def targets_in_bundles(data: bytes) -> tuple[list[str], str]:
    """The gfx targets in a fatbin's bytes, and a note on what could not be read ("" if none)."""
    targets = _bundle_ids(data)
    unreadable = 0
    pos, seen = 0, 0
    while seen < MAX_BUNDLES and (pos := data.find(_COMPRESSED, pos)) >= 0:
        seen += 1
        bundle = _compressed_payload(data, pos)
        if bundle is not None:
            head = _inflate_head(*bundle)
            if head is None:
                unreadable += 1
            else:
                targets |= _bundle_ids(head)
        pos += 4
    note = ""
    if unreadable:
        note = (
            f"{unreadable} zstd-compressed bundle(s) not read: their gfx targets need the zstandard module "
            "(pip install zstandard, or pip install -e '.[vet]' in the pytest-rocm checkout)"
        )
    return order(targets), note


def order(targets: set[str]) -> list[str]:
    """gfx908 before gfx1030 (by length, then name), as people read them."""
    return sorted(targets, key=lambda t: (len(processor(t)), t))


def read_targets(fh: IO[bytes], info: ElfInfo) -> tuple[list[str], str]:
    """The gfx targets of an ELF binary: its HIP fatbin's bundles, or a code object's own."""
    if info.machine == EM_AMDGPU:
        fh.seek(0)
        return order(_targets_in(fh.read(MAX_SECTION_BYTES))), ""
    where = info.ranges.get(".hip_fatbin")
    if where is None:
        return [], ""
    offset, size = where
    fh.seek(offset)
    data = fh.read(min(size, MAX_SECTION_BYTES))
    targets, note = targets_in_bundles(data)
    if size > MAX_SECTION_BYTES:
        note = (note + "; " if note else "") + f"fatbin larger than {MAX_SECTION_BYTES} bytes: the rest not read"
    return targets, note


def processor(target: str) -> str:
    """``gfx90a`` of ``gfx90a:xnack-``."""
    return target.split(":", 1)[0]
