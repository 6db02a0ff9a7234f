"""A whole stack at once (``vet --installed``, ``vet -r FILE --wheels DIR``): one table with the
class, the deciding evidence and, for class 3, the gfx targets read from the HIP fatbins of the
binaries next to this machine's GPUs; exit 1 when any package is class 4. And the gfx reader
itself: uncompressed and zlib-compressed clang offload bundles, and a real zstd one."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import pytest
from fake_packages import make_elf, make_wheel, wheel_metadata
from packaging.specifiers import SpecifierSet

from pytest_rocm.cli import main
from pytest_rocm.vet import vet
from pytest_rocm.vet.gfx import targets_in_bundles
from pytest_rocm.vet.stack import Pin, gpu_fit, read_pins
from pytest_rocm.vet.target import BadTarget


def offload_bundle(ids: list[str]) -> bytes:
    """A clang offload bundle: magic, entry count, (offset, size, id length, id) per entry, code."""
    codes = [f"code object for {i}".encode() for i in ids]
    table = sum(24 + len(i) for i in ids)
    offset = 24 + 8 + table
    entries = b""
    for i, code in zip(ids, codes, strict=True):
        entries += struct.pack("<QQQ", offset, len(code), len(i)) + i.encode()
        offset += len(code)
    return b"__CLANG_OFFLOAD_BUNDLE__" + struct.pack("<Q", len(ids)) + entries + b"".join(codes)


def compressed_bundle(ids: list[str]) -> bytes:
    """The same bundle as ROCm 6.2+ writes it: CCOB v2, method 0 (zlib)."""
    raw = offload_bundle(ids)
    packed = zlib.compress(raw)
    return b"CCOB" + struct.pack("<HHIIQ", 2, 0, 24 + len(packed), len(raw), 0) + packed


HIP_IDS = [
    "host-x86_64-unknown-linux-gnu-",
    "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-",
    "hipv4-amdgcn-amd-amdhsa--gfx1100",
]


@pytest.mark.parametrize("make", [offload_bundle, compressed_bundle], ids=["plain", "zlib CCOB"])
def test_gfx_targets_from_a_hip_fatbin(tmp_path: Path, make) -> None:
    fatbin = b"\0" * 64 + make(HIP_IDS) + b"\0" * 100 + make(["hipv4-amdgcn-amd-amdhsa--gfx942"])
    assert targets_in_bundles(fatbin) == (["gfx90a:xnack-", "gfx942", "gfx1100"], "")
    files = dict(wheel_metadata("hipk", "1.0", []))
    files["hipk/_C.so"] = make_elf(["libamdhip64.so.6"], [".hip_fatbin"], {".hip_fatbin": fatbin})
    _, result, verdict = vet(str(make_wheel(tmp_path / "hipk-1.0-cp311-cp311-linux_x86_64.whl", files)))
    assert verdict.klass == 3 and result.gfx_targets == {"hipk/_C.so": ["gfx90a:xnack-", "gfx942", "gfx1100"]}


def test_a_zstd_bundle_without_zstandard_is_unknown_not_empty() -> None:
    ccob = b"CCOB" + struct.pack("<HHIIQ", 2, 1, 24 + 16, 999, 0) + b"\x28\xb5\x2f\xfd" + b"\0" * 12
    targets, note = targets_in_bundles(ccob)
    try:
        import zstandard  # noqa: F401  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        assert targets == [] and "zstandard" in note
    else:
        assert note == ""  # a corrupt stream: read as nothing


def _mixed_wheel(tmp_path: Path, fatbin: bytes) -> Path:
    """A wheel whose _C.so links both HIP and the CUDA runtime, with the given .hip_fatbin."""
    files = dict(wheel_metadata("mixed", "1.0", []))
    needed = ["libamdhip64.so.6", "libcudart.so.12"]
    files["mixed/_C.so"] = make_elf(needed, [".hip_fatbin"], {".hip_fatbin": fatbin})
    return make_wheel(tmp_path / "mixed-1.0-cp311-cp311-linux_x86_64.whl", files)


#: a CCOB v3 marker 8 bytes from the end: its 32-byte header (and the total at +8) runs past the data
CUT_CCOB = b"\0" * 32 + b"CCOB\x03\0\0\0"


def test_a_ccob_marker_near_the_end_of_a_fatbin_is_skipped() -> None:
    assert targets_in_bundles(CUT_CCOB) == ([], "")
    assert targets_in_bundles(b"CCOB\x02\0\0\0" + b"\0" * 8) == ([], "")  # v2: 24-byte header, 16 here


def test_a_cut_ccob_keeps_the_binarys_library_and_section_findings(tmp_path: Path) -> None:
    _, result, verdict = vet(str(_mixed_wheel(tmp_path, CUT_CCOB)))
    found = {f.rule for f in result.findings}
    assert {"links-rocm-library", "links-cuda-library", "hip-fatbin-section"} <= found
    assert result.cuda_binaries == result.rocm_binaries == {"mixed/_C.so"}
    assert verdict.klass != 1


def test_unreadable_gfx_targets_are_a_note_not_a_lost_binary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever the fatbin reader trips on, the ELF's NEEDED and section findings still count."""
    from pytest_rocm.vet import gfx

    def broken(fh, info):
        raise struct.error("unpack_from requires a buffer of at least 16 bytes")

    monkeypatch.setattr(gfx, "read_targets", broken)
    _, result, verdict = vet(str(_mixed_wheel(tmp_path, offload_bundle(HIP_IDS))))
    assert {"links-rocm-library", "links-cuda-library"} <= {f.rule for f in result.findings}
    assert result.cuda_binaries == result.rocm_binaries == {"mixed/_C.so"}
    assert result.gfx_targets == {"mixed/_C.so": []}
    assert result.gfx_notes["mixed/_C.so"].startswith("targets unreadable: unpack_from requires")
    assert not any(f.rule == "unreadable" for f in result.findings) and verdict.klass != 1


def test_real_bitsandbytes_rocm_binary_names_its_gfx_targets() -> None:
    """The installed bitsandbytes ships zstd-compressed bundles (ROCm 6.4): read when zstandard is here."""
    from importlib import metadata

    pytest.importorskip("zstandard")
    try:
        dist = metadata.distribution("bitsandbytes")
    except metadata.PackageNotFoundError:
        pytest.skip("bitsandbytes not installed")
    lib = next((f for f in dist.files or [] if str(f).endswith("_rocm64.so")), None)
    if lib is None:
        pytest.skip("no ROCm binary in this bitsandbytes")
    from pytest_rocm.vet.elf import read_elf
    from pytest_rocm.vet.gfx import read_targets

    with open(dist.locate_file(lib), "rb") as fh:
        targets, note = read_targets(fh, read_elf(fh))
    assert {"gfx90a", "gfx942", "gfx1100"} <= set(targets) and note == ""


def test_gpu_fit_of_this_machines_gpus() -> None:
    assert gpu_fit(["gfx1100", "gfx90a:xnack-"], ["gfx90a"]) == "covers gfx90a"
    assert gpu_fit(["gfx1100"], ["gfx942"]) == "does not cover gfx942"
    assert gpu_fit(["gfx11-generic"], ["gfx1151"]) == "covers gfx1151"  # generic members are data
    assert gpu_fit(["gfx1100"], []) == "no AMD GPU here"
    assert gpu_fit([], ["gfx1100"]) == "targets unknown"


@pytest.fixture
def wheels(tmp_path: Path) -> Path:
    folder = tmp_path / "wheels"
    folder.mkdir()
    cuda = dict(wheel_metadata("cudapkg", "1.0", []))
    cuda["cudapkg/_C.so"] = make_elf(["libcudart.so.12"], [".nv_fatbin"])
    make_wheel(folder / "cudapkg-1.0-cp311-cp311-linux_x86_64.whl", cuda)
    hip = dict(wheel_metadata("hippkg", "2.0", []))
    hip["hippkg/_C.so"] = make_elf(["libamdhip64.so.6"], [".hip_fatbin"], {".hip_fatbin": offload_bundle(HIP_IDS)})
    make_wheel(folder / "hippkg-2.0-cp311-cp311-linux_x86_64.whl", hip)
    pure = dict(wheel_metadata("purepkg", "0.1", ["torch"]))
    pure["purepkg/__init__.py"] = "import torch\n"
    make_wheel(folder / "purepkg-0.1-py3-none-any.whl", pure)
    make_wheel(folder / "purepkg-0.2-py3-none-any.whl", pure)  # another version: the pin decides
    return folder


REQUIREMENTS = (
    "# the stack\n"
    "cudapkg==1.0\n"
    "hippkg==2.0  # the ROCm build\n"
    "PurePkg==0.1\n"
    "missingpkg==3.0\n"
    "packaging\n"
    "winonly==1.0; sys_platform == 'win32'\n"
    "--index-url https://example.invalid/simple\n"
)


def test_requirements_with_a_wheel_folder_is_one_table_and_exit_1_on_class_4(
    tmp_path: Path, wheels: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    req = tmp_path / "requirements.txt"
    req.write_text(REQUIREMENTS)
    assert main(["vet", "-r", str(req), "--wheels", str(wheels), "--gpu", "gfx1100", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    rows = {r["package"]: r for r in doc["packages"]}
    assert {n: r["class"] for n, r in rows.items()} == {
        "cudapkg": 4,
        "hippkg": 3,
        "purepkg": 1,
        "missingpkg": None,
        "packaging": 1,
    }
    assert rows["purepkg"]["target"].endswith("purepkg-0.1-py3-none-any.whl")
    assert rows["hippkg"]["gfx_targets"] == ["gfx90a:xnack-", "gfx1100"]
    assert rows["hippkg"]["gpus"] == "covers gfx1100"
    assert "links-cuda-library" in rows["cudapkg"]["reason"]
    assert "not installed" in rows["missingpkg"]["reason"]
    assert doc["class_4"] == ["cudapkg"] and doc["machine_gpus"] == ["gfx1100"]


def test_markdown_table_and_a_gpu_the_binaries_miss(
    tmp_path: Path, wheels: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    req = tmp_path / "requirements.txt"
    req.write_text("hippkg==2.0\npurepkg==0.1\n")
    assert main(["vet", "-r", str(req), "--wheels", str(wheels), "--gpu", "gfx942", "--markdown"]) == 0
    out = capsys.readouterr().out
    assert "| package | version | class |" in out
    assert "| hippkg | 2.0 | 3 |" in out and "does not cover gfx942" in out
    assert "no class 4 package" in out


@pytest.mark.parametrize(
    ("name", "text", "pins"),
    [
        (
            "uv.lock",
            'version = 1\n[[package]]\nname = "HipPkg"\nversion = "2.0"\n[[package]]\nname = "x"\n',
            [("hippkg", "2.0"), ("x", None)],
        ),
        (
            "pylock.toml",
            'lock-version = "1.0"\n[[packages]]\nname = "cudapkg"\nversion = "1.0"\n',
            [("cudapkg", "1.0")],
        ),
        (
            "pyproject.toml",
            '[project]\nname = "me"\ndependencies = ["hippkg==2.0", "torch>=2"]\n',
            [("hippkg", "2.0"), ("torch", None)],
        ),
    ],
)
def test_lock_and_project_files(tmp_path: Path, name: str, text: str, pins: list) -> None:
    path = tmp_path / name
    path.write_text(text)
    assert [(p.name, p.version) for p in read_pins(path)] == pins


HASHED = (
    "# This file was autogenerated by uv via the following command:\n"
    "#    uv export --format requirements-txt\n"
    "hippkg==2.0 \\\n"
    "    --hash=sha256:aaaa \\\n"
    "    --hash=sha256:bbbb\n"
    "    # via me\n"
    "purepkg==0.1 --hash=sha256:cccc\n"
    "winonly==1.0 ; sys_platform == 'win32' \\\n"
    "    --hash=sha256:dddd\n"
    "cudapkg>=1.0 \\\n"
    "    --config-settings=x=y\n"
)


def test_hashed_requirements_join_continuation_lines(tmp_path: Path) -> None:
    """pip-compile --generate-hashes / uv export: ``name==v \\`` then ``--hash=`` option lines."""
    req = tmp_path / "requirements.txt"
    req.write_text(HASHED)
    pins = read_pins(req)
    assert [(p.name, p.version, p.source) for p in pins] == [
        ("hippkg", "2.0", "requirements.txt:3"),
        ("purepkg", "0.1", "requirements.txt:7"),
        ("cudapkg", None, "requirements.txt:10"),
    ]
    req.write_text("hippkg==2.0 \\\n    --hash=sha256:aaaa\nnot ! a requirement \\\n    --hash=sha256:bbbb\n")
    with pytest.raises(BadTarget, match=r"requirements.txt:3: not a requirement: 'not ! a requirement'"):
        read_pins(req)


def test_pins_match_versions_as_pep_440_not_as_text(tmp_path: Path) -> None:
    """==2.4.0 takes a +rocm6.1 local build and 26.4 is 26.4.0; >= constrains the wheel chosen."""
    from importlib import metadata

    from pytest_rocm.vet.stack import locate, wheel_index

    folder = tmp_path / "wheels"
    folder.mkdir()
    for name in ("torch-2.4.0+rocm6.1-cp311-cp311-linux_x86_64.whl", "pkg-0.1-py3-none-any.whl"):
        (folder / name).write_bytes(b"")  # locate reads names only
    (folder / "pkg-0.2-py3-none-any.whl").write_bytes(b"")
    wheels = wheel_index(folder)
    req = tmp_path / "requirements.txt"
    installed = metadata.version("packaging")
    req.write_text(f"torch==2.4.0\npkg>=0.2\npackaging=={installed}.0\npackaging==0.0.1\npackaging>=9999\n")
    found = [locate(pin, wheels) for pin in read_pins(req)]
    assert found[0] == (str(folder / "torch-2.4.0+rocm6.1-cp311-cp311-linux_x86_64.whl"), "")
    assert found[1] == (str(folder / "pkg-0.2-py3-none-any.whl"), "")
    assert found[2] == ("packaging", "")
    assert found[3] == ("packaging", f"pinned 0.0.1, installed {installed}: vetted the installed one")
    assert found[4] == ("packaging", f"pinned >=9999, installed {installed}: vetted the installed one")


def test_of_the_wheels_a_pin_admits_the_highest_version_is_vetted(tmp_path: Path) -> None:
    """What pip would take from the folder: 1.10 over 1.9, 1.2 and 2.0rc1 (not the first name in order)."""
    from pytest_rocm.vet.stack import locate, wheel_index

    folder = tmp_path / "wheels"
    folder.mkdir()
    for version in ("1.10", "1.2", "1.9", "2.0rc1"):
        (folder / f"pkg-{version}-py3-none-any.whl").write_bytes(b"")
    wheels = wheel_index(folder)
    assert locate(Pin("pkg", None, "requirements.txt", SpecifierSet(">=1,<2")), wheels)[0] == str(
        folder / "pkg-1.10-py3-none-any.whl"
    )
    assert locate(Pin("pkg", None, "requirements.txt", SpecifierSet("==1.2")), wheels)[0] == str(
        folder / "pkg-1.2-py3-none-any.whl"
    )
    assert locate(Pin("pkg", None, "requirements.txt", SpecifierSet(">=1")), wheels)[0] == str(
        folder / "pkg-1.10-py3-none-any.whl"
    )  # pip takes the final release over 2.0rc1
    assert locate(Pin("pkg", None, "requirements.txt", SpecifierSet(">=2.0rc1")), wheels)[0] == str(
        folder / "pkg-2.0rc1-py3-none-any.whl"
    )  # and the pre-release when it is the only one admitted


def test_lock_pins_that_pep_440_cannot_parse_compare_as_text(tmp_path: Path) -> None:
    lock = tmp_path / "uv.lock"
    lock.write_text('[[package]]\nname = "a"\nversion = "2.0"\n[[package]]\nname = "b"\nversion = "nightly"\n')
    a, b = read_pins(lock)
    assert a.admits("2.0.0") and a.admits("2.0+rocm6.1") and not a.admits("2.1") and not a.admits("nightly")
    assert b.admits("nightly") and not b.admits("2.0")
    odd = Pin("c", "1 0", "uv.lock")  # not even === can hold it: text equality
    assert odd.admits("1 0") and not odd.admits("1.0")


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("requirements.txt", b"caf\xe9==1\n", "not UTF-8"),
        ("requirements.txt", b"this is not ! a requirement\n", "requirements.txt:1: not a requirement"),
        ("uv.lock", b"[[package]\n", "not valid TOML"),
        ("notes.md", b"x\n", "not a requirements file"),
    ],
)
def test_bad_dependency_files_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, content: bytes, message: str
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    assert main(["vet", "-r", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err and "Traceback" not in err
    with pytest.raises(BadTarget):
        read_pins(path)


def test_installed_stack_uses_every_installed_distribution(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_rocm.vet import stack

    assert any(p.name == "packaging" for p in stack.installed_pins())
    monkeypatch.setattr(stack, "installed_pins", lambda: [Pin("packaging", None, "installed")])
    assert main(["vet", "--installed", "--gpu", "gfx1100"]) == 0
    out = capsys.readouterr().out
    assert "packaging" in out and "1 packages" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["vet"], "give a TARGET"),
        (["vet", "x", "--installed"], "not both"),
        (["vet", "--installed", "--run"], "one TARGET at a time"),
        (["vet", "--wheels", "/tmp"], "--wheels DIR needs -r FILE"),
        (["vet", ""], "an empty TARGET"),
    ],
)
def test_option_combinations_are_one_line(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err


def test_a_standalone_amd_code_object_names_its_target(tmp_path: Path) -> None:
    note = b"\0amdhsa.target\0amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-\0"
    elf = bytearray(make_elf([], [".note"], {".note": note}))
    elf[18:20] = (224).to_bytes(2, "little")  # e_machine EM_AMDGPU: a code object, not a host library
    root = tmp_path / "co"
    root.mkdir()
    (root / "kernels.hsaco").write_bytes(bytes(elf))
    _, result, verdict = vet(str(root))
    assert result.gfx_targets == {"kernels.hsaco": ["gfx942:sramecc+:xnack-"]}
    assert verdict.klass == 3  # an AMD code object file is a ROCm path


def test_a_row_that_could_not_be_vetted_is_exit_3_not_safe(
    tmp_path: Path, wheels: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No class-4 package, but one row never looked at: incomplete (3), named with its cause."""
    req = tmp_path / "requirements.txt"
    req.write_text("hippkg==2.0\npurepkg==0.1\nmissingpkg==3.0\n")
    argv = ["vet", "-r", str(req), "--wheels", str(wheels), "--gpu", "gfx1100"]
    assert main(argv) == 3
    captured = capsys.readouterr()
    assert "no class 4 package; 1 not vetted: missingpkg" in captured.out
    assert captured.err.strip() == (
        "rocm-compat vet: incomplete, exit 3: 1 of 3 packages not vetted: missingpkg"
        " (not installed and no wheel or sdist for it in --wheels) (--allow-unvetted to accept)"
    )
    assert main([*argv, "--json"]) == 3
    assert json.loads(capsys.readouterr().out)["unvetted"] == ["missingpkg"]
    assert main([*argv, "--allow-unvetted"]) == 0
    assert "allowed: --allow-unvetted" in capsys.readouterr().err
    # a class-4 package still decides: 1, whatever else is unvetted
    req.write_text("cudapkg==1.0\nmissingpkg==3.0\n")
    assert main(argv) == 1
    assert "class 4 (CUDA-only): cudapkg; 1 not vetted: missingpkg" in capsys.readouterr().out
    # every row vetted: 0, and nothing said about unvetted rows
    req.write_text("hippkg==2.0\n")
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "not vetted" not in captured.out + captured.err


def test_allow_unvetted_is_for_a_stack(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["vet", "packaging", "--allow-unvetted"]) == 2
    assert "--allow-unvetted is for a stack" in capsys.readouterr().err
