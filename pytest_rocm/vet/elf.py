"""Read what a shared library links against and which sections it carries, from the ELF
headers alone: a wheel ships no CUDA sources, only ``.so`` files, and those say whether they
need ``libcudart``/``libcublas`` (CUDA) or ``libamdhip64``/``libhipblas`` (ROCm), and whether they
embed NVIDIA (``.nv_fatbin``) or AMD (``.hip_fatbin``) device code. Nothing is loaded or run.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import IO

ELF_MAGIC = b"\x7fELF"
_DT_NULL, _DT_NEEDED = 0, 1
_SHT_DYNAMIC = 6
#: refuse absurd tables (a corrupt or hostile header must not make us allocate gigabytes)
_MAX_SECTIONS = 65535
_MAX_TABLE_BYTES = 64 * 1024 * 1024
#: a real library has one dynamic section and tens of NEEDED entries; a hostile file with tens
#: of thousands of dynamic sections (each pointing at the same huge table) must stay cheap
MAX_DYNAMIC_SECTIONS = 4
MAX_NEEDED = 4096
EM_AMDGPU = 224


@dataclass
class ElfInfo:
    needed: list[str] = field(default_factory=list)
    sections: list[str] = field(default_factory=list)
    machine: int = 0  # e_machine: 224 is an AMD GPU code object
    #: (offset, size) of each section by name, for the ones whose content vet reads (fatbins)
    ranges: dict[str, tuple[int, int]] = field(default_factory=dict)
    truncated: str = ""  # what a limit left unread


class ElfError(ValueError):
    pass


def _read_at(f: IO[bytes], offset: int, size: int) -> bytes:
    if size < 0 or size > _MAX_TABLE_BYTES:
        raise ElfError(f"table of {size} bytes at {offset}")
    f.seek(offset)
    data = f.read(size)
    if len(data) != size:
        raise ElfError("truncated")
    return data


#: a name longer than this is cut (hostile tables point every name at one huge unterminated string)
_MAX_NAME = 256


def _cstr(table: bytes, offset: int) -> str:
    end = table.find(b"\0", offset, offset + _MAX_NAME)
    return table[offset : end if end >= 0 else min(len(table), offset + _MAX_NAME)].decode("utf-8", "replace")


def read_elf(f: IO[bytes]) -> ElfInfo | None:
    """DT_NEEDED entries and section names of an ELF file; None when it is not ELF.
    ``f`` must be seekable. Raises ElfError on a corrupt header."""
    f.seek(0)
    ident = f.read(16)
    if len(ident) < 16 or not ident.startswith(ELF_MAGIC):
        return None
    is64 = ident[4] == 2
    endian = "<" if ident[5] == 1 else ">"
    if is64:
        hdr = struct.unpack(endian + "HHIQQQIHHHHHH", _read_at(f, 16, 48))
    else:
        hdr = struct.unpack(endian + "HHIIIIIHHHHHH", _read_at(f, 16, 36))
    shoff, shentsize, shnum, shstrndx = hdr[5], hdr[10], hdr[11], hdr[12]
    info = ElfInfo(machine=hdr[1])
    if not shoff or not shnum or shnum > _MAX_SECTIONS:
        return info
    sh_fmt = endian + ("IIQQQQIIQQ" if is64 else "IIIIIIIIII")
    if shentsize < struct.calcsize(sh_fmt):
        raise ElfError("section header too small")
    raw = _read_at(f, shoff, shentsize * shnum)
    sections = [struct.unpack_from(sh_fmt, raw, i * shentsize) for i in range(shnum)]
    # (name, type, flags, addr, offset, size, link, info, addralign, entsize)
    if shstrndx < len(sections):
        names = _read_at(f, sections[shstrndx][4], sections[shstrndx][5])
        info.sections = [_cstr(names, s[0]) for s in sections]
        info.ranges = {
            name: (s[4], s[5])
            for name, s in zip(info.sections, sections, strict=True)
            if name in (".hip_fatbin", ".note")
        }
    dynamic = [s for s in sections if s[1] == _SHT_DYNAMIC and s[6] < len(sections)]
    if len(dynamic) > MAX_DYNAMIC_SECTIONS:
        info.truncated = f"{len(dynamic)} dynamic sections, the first {MAX_DYNAMIC_SECTIONS} read"
    seen: set[tuple[int, int]] = set()
    for s in dynamic[:MAX_DYNAMIC_SECTIONS]:
        if (s[4], s[5]) in seen:  # the same table twice says nothing new
            continue
        seen.add((s[4], s[5]))
        dynstr_hdr = sections[s[6]]
        dynstr = _read_at(f, dynstr_hdr[4], dynstr_hdr[5])
        dyn = _read_at(f, s[4], s[5])
        ent_fmt = endian + ("qQ" if is64 else "iI")
        step = struct.calcsize(ent_fmt)
        for tag, val in struct.iter_unpack(ent_fmt, dyn[: len(dyn) - len(dyn) % step]):
            if tag == _DT_NULL:
                break
            if tag == _DT_NEEDED and val < len(dynstr):
                if len(info.needed) >= MAX_NEEDED:
                    cut = f"more than {MAX_NEEDED} NEEDED entries, the first {MAX_NEEDED} read"
                    info.truncated = f"{info.truncated}; {cut}" if info.truncated else cut
                    return info
                info.needed.append(_cstr(dynstr, val))
    return info
