"""Hostile input stays cheap: an ELF with tens of thousands of dynamic sections, an sdist with a
great many tiny members, a zip that claims millions, a symlink loop, non-UTF-8 files. Each
gives a finding or one line and exit 2, never a traceback, and a peak memory far under 500 MB,
measured in a child process (``VmHWM``, its own peak resident memory)."""

from __future__ import annotations

import gzip
import io
import json
import os
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from fake_packages import make_wheel, wheel_metadata, write_tree

import pytest_rocm
from pytest_rocm.cli import main
from pytest_rocm.vet import vet
from pytest_rocm.vet.elf import MAX_NEEDED, read_elf

REPO = Path(pytest_rocm.__file__).resolve().parent.parent
LIMIT_KB = 500 * 1024


def peak_kb(spec: str, trace: bool = False, timeout: float = 300) -> tuple[int, dict]:
    """vet ``spec`` in a fresh Python; its peak RSS in KiB and a summary of the result (with
    ``trace``: ``traced_kb``, the peak of Python's own allocations during the scan, which does not
    depend on what else the interpreter has loaded)."""
    code = (
        "import json, resource, sys, tracemalloc\n"
        "from pytest_rocm.vet import vet\n"
        "trace = sys.argv[2] == '1'\n"
        "if trace: tracemalloc.start()\n"
        "t, r, v = vet(sys.argv[1])\n"
        "traced = tracemalloc.get_traced_memory()[1] // 1024 if trace else None\n"
        # VmHWM is this program's own peak: ru_maxrss keeps the forking parent's across exec
        "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')]\n"
        "kb = int(hwm[0].split()[1]) if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "print(json.dumps({'kb': kb, 'files': r.files,"
        " 'traced_kb': traced, 'class': v.klass, 'confidence': v.confidence,"
        " 'rules': sorted(r.counts) + sorted(r.mentions)}))\n"
    )
    # a clean environment: what other tests left in os.environ must not change the measurement
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(REPO), "LANG": "C.UTF-8"}
    argv = [sys.executable, "-c", code, spec, "1" if trace else "0"]
    out = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)
    assert out.returncode == 0, out.stderr[-2000:]
    doc = json.loads(out.stdout.strip().splitlines()[-1])
    return doc["kb"], doc


def many_dynamic_sections(count: int, needed_per_table: int, tag: int = 1) -> bytes:
    """An ELF whose ``count`` dynamic sections all point at one table of ``needed_per_table``
    entries with this tag (1: NEEDED; before the fix: count x entries strings, a MemoryError)."""
    dynstr = b"\0libcudart.so.12\0"
    dynamic = struct.pack("<qQ", tag, 1) * needed_per_table + struct.pack("<qQ", 0, 0)
    shstrtab = b"\0.dynstr\0.dynamic\0.shstrtab\0"
    body = bytearray(64)
    dynstr_off = len(body)
    body += dynstr
    dynamic_off = len(body)
    body += dynamic
    shstr_off = len(body)
    body += shstrtab
    while len(body) % 8:
        body += b"\0"
    shoff = len(body)
    sh = [
        struct.pack("<IIQQQQIIQQ", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
        struct.pack("<IIQQQQIIQQ", 1, 3, 0, 0, dynstr_off, len(dynstr), 0, 0, 1, 0),
        struct.pack("<IIQQQQIIQQ", 18, 3, 0, 0, shstr_off, len(shstrtab), 0, 0, 1, 0),
    ]
    one_dynamic = struct.pack("<IIQQQQIIQQ", 9, 6, 0, 0, dynamic_off, len(dynamic), 1, 0, 8, 16)
    headers = b"".join(sh) + one_dynamic * count
    ident = b"\x7fELF" + bytes([2, 1, 1]) + b"\0" * 9
    body[:64] = ident + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, shoff, 0, 64, 0, 0, 64, 3 + count, 2)
    return bytes(body) + headers


def test_elf_with_tens_of_thousands_of_dynamic_sections_is_bounded(tmp_path: Path) -> None:
    elf = many_dynamic_sections(60_000, 20_000)
    info = read_elf(io.BytesIO(elf))
    assert info is not None and len(info.needed) <= MAX_NEEDED and "dynamic sections" in info.truncated
    files = dict(wheel_metadata("hostile", "1.0", []))
    files["hostile/_C.so"] = elf
    whl = make_wheel(tmp_path / "hostile-1.0-cp311-cp311-linux_x86_64.whl", files)
    kb, doc = peak_kb(str(whl))
    assert kb < LIMIT_KB
    assert doc["class"] == 4 and "elf-limit" in doc["rules"]  # it links libcudart: still read


def test_elf_dynamic_sections_past_the_first_few_are_not_parsed(tmp_path: Path) -> None:
    """60,000 dynamic sections of 65,536 non-NEEDED entries each: billions of entries to parse
    without the section limit (minutes), four sections with it."""
    root = write_tree(tmp_path / "slow", {"slow/_C.so": many_dynamic_sections(60_000, 65_536, tag=14)})
    kb, doc = peak_kb(str(root), timeout=60)
    assert kb < LIMIT_KB and "elf-limit" in doc["rules"] and doc["class"] == 1


def tiny_member_tar(path: Path, n: int, prefix: str = "many-0.1") -> Path:
    """``n`` one-byte members as a .tar.gz, written block by block (no TarInfo per member)."""
    template = bytearray(512)
    for offset, value in ((100, b"0000644\0"), (124, b"00000000001\0"), (136, b"00000000000\0"), (257, b"ustar\0")):
        template[offset : offset + len(value)] = value
    template[156:157], template[263:265], template[148:156] = b"0", b"00", b" " * 8
    base = sum(template)
    data = b"x" + b"\0" * 511
    with gzip.open(path, "wb", compresslevel=1) as out:
        chunk: list[bytes] = []
        for i in range(n):
            name = f"{prefix}/m/{i:08d}.py".encode()
            header = bytearray(template)
            header[: len(name)] = name
            header[148:156] = b"%06o\0 " % (base + sum(name))
            chunk += (bytes(header), data)
            if len(chunk) >= 8192:
                out.write(b"".join(chunk))
                chunk.clear()
        out.write(b"".join(chunk) + b"\0" * 1024)
    return path


def test_sdist_with_many_tiny_members_uses_no_memory_per_member(tmp_path: Path) -> None:
    """Before the fix each member kept its ~0.5 KB header (the stream's member list): 18,000
    more members cost about 8 MB more Python allocations; now the peak does not grow with them."""
    _, few = peak_kb(str(tiny_member_tar(tmp_path / "few-0.1.tar.gz", 2_000, "few-0.1")), trace=True)
    kb, many = peak_kb(str(tiny_member_tar(tmp_path / "many-0.1.tar.gz", 20_000)), trace=True)
    assert many["files"] == 20_001
    assert kb < LIMIT_KB
    assert many["traced_kb"] - few["traced_kb"] < 1024, (few["traced_kb"], many["traced_kb"])


def test_tar_member_limit_is_a_finding_and_lowers_confidence(tmp_path: Path) -> None:
    from pytest_rocm.vet import Limits

    sdist = tiny_member_tar(tmp_path / "many-0.1.tar.gz", 500)
    _, result, verdict = vet(str(sdist), Limits(members=100))
    assert result.files == 101  # the archive's own name, then 100 members
    assert [f.rule for f in result.findings if f.spec.side == "safety"] == ["too-many-members"]
    assert verdict.confidence == "low"


def fake_zip_claiming(entries: int) -> bytes:
    """A zip whose (zip64) end records claim ``entries`` members: the count is all vet reads."""
    zip64_eocd = b"PK\x06\x06" + struct.pack("<QHHIIQQQQ", 44, 45, 45, 0, 0, entries, entries, 0, 0)
    locator = b"PK\x06\x07" + struct.pack("<IQI", 0, 0, 1)
    eocd = b"PK\x05\x06" + struct.pack("<HHHHIIH", 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    return zip64_eocd + locator + eocd


def test_zip_claiming_millions_of_members_is_one_line_not_parsed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    whl = tmp_path / "claims-1.0-py3-none-any.whl"
    whl.write_bytes(fake_zip_claiming(3_000_000))
    assert main(["vet", str(whl)]) == 2
    err = capsys.readouterr().err.strip()
    assert "3000000 members" in err and "Limits.zip_members" in err and "\n" not in err


def test_nested_zip_over_the_member_limit_is_a_finding(tmp_path: Path) -> None:
    files = dict(wheel_metadata("outer", "1.0", []))
    files["outer/__init__.py"] = "import torch\n"
    files["outer/inner.zip"] = fake_zip_claiming(3_000_000)
    _, result, verdict = vet(str(make_wheel(tmp_path / "outer-1.0-py3-none-any.whl", files)))
    assert [f.path for f in result.findings if f.rule == "too-many-members"] == ["outer/inner.zip"]
    assert verdict.klass == 1


def test_symlink_loops_in_a_folder_are_findings_not_a_traceback(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "pkg", {"pkg/__init__.py": "import torch\n"})
    os.symlink("b", root / "a")
    os.symlink("a", root / "b")
    os.symlink(".", root / "pkg" / "self")
    kb, doc = peak_kb(str(root))
    assert kb < LIMIT_KB and doc["class"] == 1
    _, result, _ = vet(str(root))
    loops = sorted(f.path for f in result.findings if f.rule == "unsafe-link")
    assert loops == ["a", "b"]  # pkg/self points inside the tree: not followed, not a finding


def test_non_utf8_files_are_read_with_replacement(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "latin",
        {
            "pyproject.toml": b'[project]\nname = "caf\xe9"\nversion = "1.0"\n',
            "latin/__init__.py": b"# caf\xe9 \xff\xfe\nimport torch\n",
            "csrc/k.cu": b"// \xe9\xe8\n#include <cuda_runtime.h>\n__global__ void f(float* x) { cudaMalloc(0, 4); }\n",
            "setup.py": b"from torch.utils.cpp_extension import CUDAExtension\n# \xff\n",
        },
    )
    kb, doc = peak_kb(str(root))
    assert kb < LIMIT_KB and doc["class"] == 4


def test_a_fifo_as_target_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "pipe.whl"
    os.mkfifo(fifo)
    assert main(["vet", str(fifo)]) == 2  # never opened: opening a FIFO for reading would hang
    err = capsys.readouterr().err.strip()
    assert "not a regular file or folder" in err and "\n" not in err


def test_zip_member_count_reader_agrees_with_zipfile(tmp_path: Path) -> None:
    from pytest_rocm.vet.archives import _zip_entries

    path = tmp_path / "x.zip"
    with zipfile.ZipFile(path, "w") as zf:
        for i in range(37):
            zf.writestr(f"f{i}.py", "x")
    with open(path, "rb") as fh:
        assert _zip_entries(fh) == 37
    assert _zip_entries(io.BytesIO(fake_zip_claiming(123_456))) == 123_456
