"""Archives and folders are read safely: nothing escapes, nothing explodes, bad input is exit 2."""

from __future__ import annotations

import io
import json
import os
import stat
import tarfile
import zipfile
from pathlib import Path

import pytest
from fake_packages import cuda_only, make_sdist, make_wheel, write_tree

from pytest_rocm.cli import main
from pytest_rocm.vet import Limits, vet
from pytest_rocm.vet.archives import link_escapes, unsafe_name

CUDA_LINE = "void f(float** p) { cudaMalloc(p, 4); }\n"


def notes(result, rule: str) -> list:
    return [f for f in result.findings if f.rule == rule]


@pytest.mark.parametrize(
    ("name", "unsafe"),
    [
        ("pkg/a.py", False),
        ("pkg/../pkg/a.py", False),
        ("../evil.py", True),
        ("pkg/../../evil.py", True),
        ("/etc/passwd", True),
        ("C:\\Windows\\x.py", True),
        ("..\\..\\evil.py", True),
        ("./a/./b.py", False),
    ],
)
def test_unsafe_names(name: str, unsafe: bool) -> None:
    assert (unsafe_name(name) is not None) is unsafe


def test_link_escapes() -> None:
    assert link_escapes("pkg/link", "../../etc/passwd")
    assert link_escapes("pkg/link", "/etc/passwd")
    assert not link_escapes("pkg/sub/link", "../other.py")


def test_zip_traversal_absolute_and_symlink_members_are_refused(tmp_path: Path) -> None:
    whl = tmp_path / "evil-1.0-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as zf:
        zf.writestr("../../outside.cu", CUDA_LINE)
        zf.writestr("/abs/k.cu", CUDA_LINE)
        link = zipfile.ZipInfo("evil/link.cu")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(link, "../../../../etc/passwd")
        zf.writestr("evil/__init__.py", "x = 1\n")
    _, result, verdict = vet(str(whl))
    assert sorted(f.path for f in notes(result, "unsafe-path")) == ["../../outside.cu", "/abs/k.cu"]
    assert [f.path for f in notes(result, "unsafe-link")] == ["evil/link.cu"]
    assert not any(f.rule == "cuda-runtime-api" for f in result.findings), "a refused member was read"
    assert verdict.klass == 1
    assert any("not read for safety" in c for c in verdict.caveats)
    assert not (tmp_path.parent / "outside.cu").exists()


def test_safety_caveat_counts_every_refused_member_not_only_the_kept_examples(tmp_path: Path) -> None:
    from pytest_rocm.vet.result import KEEP_PER_RULE

    whl = tmp_path / "links-1.0-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as zf:
        for i in range(KEEP_PER_RULE + 5):
            link = zipfile.ZipInfo(f"links/l{i}.py")
            link.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(link, "/etc/passwd")
        zf.writestr("links/__init__.py", "x = 1\n")
    _, result, verdict = vet(str(whl))
    assert len(notes(result, "unsafe-link")) == KEEP_PER_RULE  # examples kept
    assert f"{KEEP_PER_RULE + 5} member(s) not read for safety or size (unsafe-link)" in verdict.caveats


def test_tar_traversal_links_and_devices_are_refused(tmp_path: Path) -> None:
    sdist = tmp_path / "evil-1.0.tar.gz"
    with tarfile.open(sdist, "w:gz") as tf:
        for name in ("../escape.cu", "/abs.cu", "evil-1.0/ok.cu"):
            info = tarfile.TarInfo(name)
            info.size = len(CUDA_LINE)
            tf.addfile(info, io.BytesIO(CUDA_LINE.encode()))
        sym = tarfile.TarInfo("evil-1.0/link.cu")
        sym.type, sym.linkname = tarfile.SYMTYPE, "../../../etc/passwd"
        tf.addfile(sym)
        hard = tarfile.TarInfo("evil-1.0/hard.cu")
        hard.type, hard.linkname = tarfile.LNKTYPE, "../../etc/shadow"
        tf.addfile(hard)
        dev = tarfile.TarInfo("evil-1.0/dev.cu")
        dev.type = tarfile.CHRTYPE
        tf.addfile(dev)
    _, result, _ = vet(str(sdist))
    assert sorted(f.path for f in notes(result, "unsafe-path")) == ["../escape.cu", "/abs.cu"]
    assert sorted(f.path for f in notes(result, "unsafe-link")) == ["evil-1.0/hard.cu", "evil-1.0/link.cu"]
    assert [f.path for f in notes(result, "special-file")] == ["evil-1.0/dev.cu"]
    assert [f.path for f in result.findings if f.rule == "cuda-runtime-api"] == ["evil-1.0/ok.cu"]


def test_folder_symlink_out_of_tree_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write_tree(outside, {"secret.cu": CUDA_LINE})
    root = write_tree(tmp_path / "pkg", {"p/__init__.py": "import torch\n"})
    os.symlink(outside / "secret.cu", root / "p" / "k.cu")
    os.symlink(outside, root / "linked_dir")
    _, result, verdict = vet(str(root))
    assert sorted(f.path for f in notes(result, "unsafe-link")) == ["linked_dir", "p/k.cu"]
    assert verdict.klass == 1
    assert not any(f.rule == "cuda-runtime-api" for f in result.findings)


def test_oversized_member_is_skipped(tmp_path: Path) -> None:
    big = "# padding\n" * 500 + CUDA_LINE
    whl = make_wheel(tmp_path / "big-1.0-py3-none-any.whl", {"big/k.cu": big, "big/small.cu": CUDA_LINE})
    target_limits = Limits(member_bytes=1000)
    _, result, _ = vet(str(whl), target_limits)
    assert [f.path for f in notes(result, "oversized-member")] == ["big/k.cu"]
    assert [f.path for f in result.findings if f.rule == "cuda-runtime-api"] == ["big/small.cu"]


def test_zip_member_lying_about_its_size_is_capped(tmp_path: Path) -> None:
    whl = make_wheel(tmp_path / "liar-1.0-py3-none-any.whl", {"liar/k.cu": "x" * 5000})
    raw = bytearray(whl.read_bytes())
    # rewrite the declared uncompressed size (central directory) to 10 bytes
    cd = raw.rfind(b"PK\x01\x02")
    raw[cd + 24 : cd + 28] = (10).to_bytes(4, "little")
    whl.write_bytes(bytes(raw))
    _, result, _ = vet(str(whl), Limits(member_bytes=100))
    assert notes(result, "oversized-member") or notes(result, "unreadable")


def test_compression_bomb_stops_at_the_total_limit(tmp_path: Path) -> None:
    sdist = tmp_path / "bomb-1.0.tar.gz"
    with tarfile.open(sdist, "w:gz") as tf:
        zeros = b"\0" * (8 * 2**20)
        for i in range(4):
            info = tarfile.TarInfo(f"bomb-1.0/blob{i}.bin")
            info.size = len(zeros)
            tf.addfile(info, io.BytesIO(zeros))
    assert sdist.stat().st_size < 200_000
    _, result, _ = vet(str(sdist), Limits(total_bytes=4 * 2**20))
    assert notes(result, "archive-too-large")


def test_nested_archives_scanned_to_the_depth_limit_only(tmp_path: Path) -> None:
    def zip_of(members: dict[str, bytes]) -> bytes:
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as zf:
            for name, data in members.items():
                zf.writestr(name, data)
        return buf.getvalue()

    level3 = zip_of({"deep.cu": CUDA_LINE.encode()})
    level2 = zip_of({"l2.cu": CUDA_LINE.encode(), "level3.zip": level3})
    level1 = zip_of({"l1.cu": CUDA_LINE.encode(), "level2.zip": level2})
    outer = make_wheel(tmp_path / "nest-1.0-py3-none-any.whl", {"level1.zip": level1})
    _, result, _ = vet(str(outer), Limits(depth=2))
    api = sorted(f.path for f in result.findings if f.rule == "cuda-runtime-api")
    assert api == ["level1.zip!l1.cu", "level1.zip!level2.zip!l2.cu"]
    assert [f.path for f in notes(result, "nested-archive-skipped")] == ["level1.zip!level2.zip!level3.zip"]


@pytest.mark.parametrize("content", [b"this is not a zip", b"PK\x03\x04garbage" + b"\0" * 64])
def test_corrupt_wheel_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes
) -> None:
    bad = tmp_path / "bad-1.0-py3-none-any.whl"
    bad.write_bytes(content)
    assert main(["vet", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "bad-1.0-py3-none-any.whl" in err and "corrupt" in err


@pytest.mark.parametrize("keep", [0.05, 0.6])
def test_truncated_sdist_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], keep: float) -> None:
    files = {f"t/m{i}.py": os.urandom(3000).hex() for i in range(4)}  # incompressible: cut lands mid-way
    good = make_sdist(tmp_path / "t-1.0.tar.gz", files, "t-1.0")
    bad = tmp_path / "cut-1.0.tar.gz"
    data = good.read_bytes()
    bad.write_bytes(data[: int(len(data) * keep)])
    assert main(["vet", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "cut-1.0.tar.gz" in err


@pytest.mark.parametrize("spec", ["no-such-distribution-xyz", "./missing/folder", "missing-1.0.whl"])
def test_missing_target_is_exit_2(capsys: pytest.CaptureFixture[str], spec: str) -> None:
    assert main(["vet", spec]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and spec in err and "Traceback" not in err


def test_not_an_archive_file_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "notes.txt"
    other.write_text("hello")
    assert main(["vet", str(other)]) == 2
    assert "not a wheel, sdist" in capsys.readouterr().err


def test_empty_folder_is_exit_2_not_a_verdict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    assert main(["vet", str(tmp_path / "empty")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"rocm-compat vet: {tmp_path / 'empty'}: empty folder, nothing to scan"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--run", "--report", "afile/r.json"], "afile/r.json: cannot write ("),  # afile is not a folder
        (["--report", "r.json"], "--report r.json needs --run"),
    ],
)
def test_bad_report_option_is_exit_2_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("")  # a file where the report's folder would be
    root = write_tree(tmp_path / "pkg", cuda_only(tmp_path / "m"))
    monkeypatch.setattr("pytest_rocm.vet.live.live_check", lambda *a, **k: pytest.fail("the live check must not run"))
    assert main(["vet", str(root), *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("rocm-compat vet: ") and message in err and "\n" not in err


def test_json_output_shape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = write_tree(tmp_path / "pkg", cuda_only(tmp_path / "m"))
    assert main(["vet", str(root), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["target"] == str(root) and doc["class"] == 4 and doc["live"] is None
    assert doc["verdict"].startswith("CUDA-only")
    f = next(f for f in doc["findings"] if f["rule"] == "cuda-runtime-api")
    assert {"rule", "path", "line", "text", "severity"} <= set(f)
    assert f["path"] == "csrc/k.cu" and isinstance(f["line"], int)
    assert doc["findings"][0]["severity"] == "error"  # most severe first


def test_text_output_names_class_evidence_and_next_steps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = write_tree(tmp_path / "pkg", cuda_only(tmp_path / "m"))
    assert main(["vet", str(root)]) == 0
    out = capsys.readouterr().out
    assert "class 4: CUDA-only native code" in out
    assert "deciding evidence:" in out and "next steps:" in out
    assert "csrc/k.cu:8" in out
