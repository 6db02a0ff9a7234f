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


@dataclass
class ElfInfo:
    needed: list[str] = field(default_factory=list)
    sections: list[str] = field(default_factory=list)


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


def _cstr(table: bytes, offset: int) -> str:
    end = table.find(b"\0", offset)
    return table[offset : end if end >= 0 else len(table)].decode("utf-8", "replace")


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
    info = ElfInfo()
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
    for s in sections:
        if s[1] != _SHT_DYNAMIC or s[6] >= len(sections):
            continue
        dynstr_hdr = sections[s[6]]
        dynstr = _read_at(f, dynstr_hdr[4], dynstr_hdr[5])
        dyn = _read_at(f, s[4], s[5])
        ent_fmt = endian + ("qQ" if is64 else "iI")
        step = struct.calcsize(ent_fmt)
        for off in range(0, len(dyn) - step + 1, step):
            tag, val = struct.unpack_from(ent_fmt, dyn, off)
            if tag == _DT_NULL:
                break
            if tag == _DT_NEEDED and val < len(dynstr):
                info.needed.append(_cstr(dynstr, val))
    return info
