"""Time and peak memory of ``rocm-compat vet`` on a wheel with one big binary, against one plain
decompression of that binary measured in the same run.

vet decompresses each binary once into a spooled temporary file and parses its ELF headers
there, so its time should be close to one decompression (the ratio printed), and its peak RSS
should not grow with the binary's size. Targets: a 500 MB binary in under 60 s on 2 cores, peak
RSS under 300 MB. Without ``--wheel`` the wheel is made here: a HIP library (a .hip_fatbin naming
two gfx targets) padded to ``--mib`` MiB with data that compresses about 2:1, like real device
code. With ``--wheel`` (for example ``pip download --no-deps triton==3.9.0``: a 500 MB
``libtriton.so``) that wheel is used. It prints the figures and never fails on them.

    python benchmarks/bench_vet_big_wheel.py [--mib 500] [--wheel X.whl] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import resource
import struct
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

TARGET_SECONDS, TARGET_RSS_MB = 60.0, 300.0


def _bundle(ids: list[str]) -> bytes:
    codes = [f"code object for {i}".encode() for i in ids]
    offset = 32 + sum(24 + len(i) for i in ids)
    entries = b""
    for i, code in zip(ids, codes, strict=True):
        entries += struct.pack("<QQQ", offset, len(code), len(i)) + i.encode()
        offset += len(code)
    return b"__CLANG_OFFLOAD_BUNDLE__" + struct.pack("<Q", len(ids)) + entries + b"".join(codes)


def _elf(text_size: int, fatbin: bytes, out) -> None:  # type: ignore[no-untyped-def]
    """A 64-bit shared object: NEEDED libamdhip64, a .text of ``text_size`` bytes, a .hip_fatbin."""
    dynstr = b"\0libamdhip64.so.6\0"
    dynamic = struct.pack("<qQ", 1, 1) + struct.pack("<qQ", 0, 0)
    names = [b"", b".dynstr", b".dynamic", b".shstrtab", b".text", b".hip_fatbin"]
    shstrtab = b"\0".join(names) + b"\0"
    offs = [sum(len(n) + 1 for n in names[:i]) for i in range(len(names))]
    head = 64
    layout = {".dynstr": head, ".dynamic": head + len(dynstr)}
    layout[".shstrtab"] = layout[".dynamic"] + len(dynamic)
    layout[".text"] = layout[".shstrtab"] + len(shstrtab)
    layout[".hip_fatbin"] = layout[".text"] + text_size
    shoff = layout[".hip_fatbin"] + len(fatbin)
    shoff += (-shoff) % 8
    ident = b"\x7fELF" + bytes([2, 1, 1]) + b"\0" * 9
    out.write(ident + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, shoff, 0, 64, 0, 0, 64, 6, 3))
    out.write(dynstr + dynamic + shstrtab)
    chunk = os.urandom(1 << 19) + b"\0" * (1 << 19)  # ~2:1 compressible
    left = text_size
    while left:
        out.write(chunk[: min(left, len(chunk))])
        left -= min(left, len(chunk))
    out.write(fatbin + b"\0" * ((-(layout[".hip_fatbin"] + len(fatbin))) % 8))
    sizes = {".dynstr": len(dynstr), ".dynamic": len(dynamic), ".shstrtab": len(shstrtab), ".text": text_size}
    sizes[".hip_fatbin"] = len(fatbin)
    types = {".dynstr": 3, ".dynamic": 6, ".shstrtab": 3, ".text": 1, ".hip_fatbin": 1}
    out.write(struct.pack("<IIQQQQIIQQ", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
    for i, name in enumerate(n.decode() for n in names[1:]):
        link = 1 if name == ".dynamic" else 0
        out.write(
            struct.pack(
                "<IIQQQQIIQQ",
                offs[i + 1],
                types[name],
                0,
                0,
                layout[name],
                sizes[name],
                link,
                0,
                8,
                16 if name == ".dynamic" else 0,
            )
        )


def make_wheel(folder: Path, mib: int) -> Path:
    wheel = folder / "bigrocm-1.0-py3-none-any.whl"
    fatbin = _bundle(["hipv4-amdgcn-amd-amdhsa--gfx942", "hipv4-amdgcn-amd-amdhsa--gfx950"])
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        zf.writestr("bigrocm-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: bigrocm\nVersion: 1.0\n")
        zf.writestr("bigrocm/__init__.py", "from . import _C\n")
        with zf.open("bigrocm/_C.so", "w", force_zip64=True) as out:
            _elf(mib * 2**20, fatbin, out)
    return wheel


def decompress_once(wheel: Path) -> tuple[float, str, int]:
    """Seconds to read the largest member once, in 1 MiB chunks: the floor for vet's time."""
    with zipfile.ZipFile(wheel) as zf:
        info = max(zf.infolist(), key=lambda i: i.file_size)
        started = time.perf_counter()
        with zf.open(info) as fh:
            while fh.read(1 << 20):
                pass
        return time.perf_counter() - started, info.filename, info.file_size


def vet_in_child(wheel: Path) -> tuple[float, float, str]:
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_rocm.cli", "vet", str(wheel)], capture_output=True, text=True, check=False
    )
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"bench_vet_big_wheel: vet exited {proc.returncode}: {proc.stderr.strip()}")
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # KiB on Linux
    targets = next((line.strip() for line in proc.stdout.splitlines() if "gfx9" in line), "no gfx line")
    return elapsed, peak_mb, targets


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=500, help="size of the made-up binary (default 500)")
    parser.add_argument("--wheel", type=Path, help="a real wheel instead of a made-up one")
    parser.add_argument("--keep", type=Path, help="make the wheel in this folder and keep it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        if args.wheel:
            wheel = args.wheel
        else:
            started = time.perf_counter()
            wheel = make_wheel(folder, args.mib)
            print(f"made {wheel.name}: {wheel.stat().st_size / 2**20:.0f} MiB in {time.perf_counter() - started:.1f} s")
        floor, member, size = decompress_once(wheel)
        elapsed, peak_mb, targets = vet_in_child(wheel)
    print(f"largest member: {member} ({size / 2**20:.0f} MiB); one decompression: {floor:.1f} s")
    print(f"vet: {elapsed:.1f} s (x{elapsed / floor:.2f} one decompression; target < {TARGET_SECONDS:.0f} s)")
    print(f"vet peak RSS: {peak_mb:.0f} MB (target < {TARGET_RSS_MB:.0f} MB)")
    print(f"vet said: {targets}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
