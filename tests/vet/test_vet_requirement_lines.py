"""Every line of a requirements file that installs something is a row of the stack, vetted or
counted as not vetted: ``-r`` includes (vLLM's ``requirements/rocm.txt`` begins with ``-r
common.txt``), URL lines (text-generation-webui gives its only AMD GPU package, a ROCm
llama.cpp wheel, as a URL), ``name @ URL``, ``-e`` and local paths. The real files are copies
under ``tests/data/vet/requirements/`` with their source URL and commit in a header."""

from __future__ import annotations

import json
import platform
import re
import sys
from pathlib import Path

import pytest
from fake_packages import make_elf, make_wheel, wheel_metadata

from pytest_rocm.cli import main
from pytest_rocm.vet.stack import read_stack

DATA = Path(__file__).parent.parent / "data" / "vet" / "requirements"
OLDER = sys.version_info < (3, 12)  # vLLM's common.txt has two lines for Python > 3.11
LLAMA_URL_WHEEL = "llama_cpp_binaries-0.6.0+rocm6.1.2-py3-none-linux_x86_64.whl"


def _names(path: Path) -> list[str]:
    """The requirement names of a file's plain lines (no option, URL or false marker), read here
    independently of vet: the first word before a specifier, extras or a marker."""
    names = []
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-") or "://" in line or ("python_version > '3.11'" in line and OLDER):
            continue
        names.append(re.split(r"[\s\[=<>!~;@]", line, maxsplit=1)[0].lower().replace("_", "-"))
    return names


def test_vllm_rocm_requirements_follow_the_include_of_common_txt() -> None:
    """rocm.txt begins with ``-r common.txt``: its packages were all lost (56 of 75 upstream)."""
    pins, skipped = read_stack(DATA / "vllm" / "rocm.txt")
    by_name = {p.name: p for p in pins}
    common = _names(DATA / "vllm" / "common.txt")
    assert len(common) > 40 and set(common) <= set(by_name)
    assert by_name["transformers"].source == "common.txt:12"  # the line in the included file (header: 2 lines)
    assert set(_names(DATA / "vllm" / "rocm.txt")) <= set(by_name)
    # the git URL line is a row with its link, never dropped
    assert by_name["fastsafetensors"].link is not None and by_name["fastsafetensors"].link.startswith("git+https://")
    # the two lines for Python > 3.11 are said where they are not for this Python, not silently gone
    newer = sys.version_info >= (3, 12)
    assert [s.split()[1] for s in skipped] == ([] if newer else ["six", "setuptools"])


def test_an_include_is_relative_to_its_file_and_a_loop_is_read_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sub = tmp_path / "reqs"
    sub.mkdir()
    (sub / "a.txt").write_text("-r b.txt\nalpha==1\n")
    (sub / "b.txt").write_text("--requirement=a.txt\n-rc.txt\nbeta\n")
    (sub / "c.txt").write_text("-r a.txt\n-r b.txt\ngamma\n")
    monkeypatch.chdir(tmp_path)  # not the files' folder: includes are relative to the file
    pins, _ = read_stack(Path("reqs/a.txt"))
    assert [(p.name, p.source) for p in pins] == [("gamma", "c.txt:3"), ("beta", "b.txt:3"), ("alpha", "a.txt:2")]


@pytest.mark.parametrize(
    ("line", "message"),
    [("-r nothere.txt", "requirements.txt:2: includes nothere.txt"), ("-c", "requirements.txt:2: an include")],
    ids=["missing-file", "no-file-named"],
)
def test_a_bad_include_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, message: str
) -> None:
    req = tmp_path / "requirements.txt"
    req.write_text(f"alpha\n{line}\n")
    assert main(["vet", "-r", str(req)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"rocm-compat vet: {message}") and "\n" not in err


def test_a_constraints_file_narrows_the_pins_and_adds_no_row(tmp_path: Path) -> None:
    from pytest_rocm.vet.stack import locate, wheel_index

    (tmp_path / "constraints.txt").write_text("pkg==1.2\nonlyconstrained==9\n")
    req = tmp_path / "requirements.txt"
    req.write_text("-c constraints.txt\npkg>=1\n")
    folder = tmp_path / "wheels"
    folder.mkdir()
    for version in ("1.2", "1.9"):
        make_wheel(folder / f"pkg-{version}-py3-none-any.whl", wheel_metadata("pkg", version, []))
    (pin,) = read_stack(req)[0]
    assert pin.version == "1.2" and "constrained by constraints.txt:1" in pin.source
    assert locate(pin, wheel_index(folder))[0] == str(folder / "pkg-1.2-py3-none-any.whl")


def _rocm_wheel(folder: Path, file_name: str) -> Path:
    files = dict(wheel_metadata("llama_cpp_binaries", "0.6.0+rocm6.1.2", []))
    files["llama_cpp_binaries/bin/libggml-hip.so"] = make_elf(["libamdhip64.so.6", "libhipblas.so.2"])
    files["llama_cpp_binaries/__init__.py"] = ""
    return make_wheel(folder / file_name, files)


@pytest.mark.skipif(
    (sys.platform, platform.machine()) != ("linux", "x86_64"), reason="the URL line's marker names Linux x86_64"
)
def test_text_generation_webui_amd_url_wheel_is_a_row_not_a_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its only GPU package is a URL: the run said "no class 4 package", exit 0, never reading it."""
    req = DATA / "tgwui" / "requirements_amd.txt"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["vet", "-r", str(req), "--wheels", str(empty), "--json"]) == 3
    out = capsys.readouterr()
    rows = {r["package"]: r for r in json.loads(out.out)["packages"]}
    llama = rows["llama-cpp-binaries"]
    assert llama["class"] is None and llama["link"].endswith(LLAMA_URL_WHEEL)
    assert llama["reason"].startswith("not vetted: a URL requirement, download it into --wheels")
    assert "llama-cpp-binaries" in out.err

    folder = tmp_path / "wheels"
    folder.mkdir()
    _rocm_wheel(folder, LLAMA_URL_WHEEL)
    only_url = tmp_path / "only-url.txt"  # the URL line alone: vetted from the file pip would download
    only_url.write_text("\n".join(line for line in req.read_text().splitlines() if "://" in line) + "\n")
    assert main(["vet", "-r", str(only_url), "--wheels", str(folder), "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["packages"]
    assert row["class"] == 3 and row["target"] == str(folder / LLAMA_URL_WHEEL)


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("https://example.invalid/dl/pkg-1.0-py3-none-any.whl", "a URL requirement, download it into --wheels"),
        ("pkg @ https://example.invalid/dl/pkg-1.0.tar.gz", "a URL requirement, download it into --wheels"),
        ("-e git+https://example.invalid/pkg.git#egg=pkg", "a URL requirement, download it into --wheels"),
        ("--editable ./not-here", "the path"),
        ("-r https://example.invalid/more.txt", "an include by URL"),
        ("--some-new-pip-option x", "an option vet does not read"),
    ],
    ids=["url", "name-at-url", "editable-vcs", "editable-missing-path", "include-by-url", "unknown-option"],
)
def test_a_file_of_only_such_lines_is_not_zero_packages_exit_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, why: str
) -> None:
    req = tmp_path / "requirements.txt"
    req.write_text(f"# nothing but\n{line}\n")
    assert main(["vet", "-r", str(req)]) == 3
    captured = capsys.readouterr()
    assert captured.out.startswith("rocm-compat vet: 1 packages;") and "1 not vetted" in captured.out
    assert f"not vetted: {why}" in captured.err
    assert main(["vet", "-r", str(req), "--allow-unvetted"]) == 0


def test_an_editable_local_folder_is_vetted_from_the_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pkg = tmp_path / "src" / "mypkg"
    pkg.mkdir(parents=True)
    (pkg / "k.cu").write_text("#include <cuda_runtime.h>\n__global__ void k(float* x) { x[0] = 1; }\n")
    (pkg / "setup.py").write_text("from torch.utils.cpp_extension import CUDAExtension\n")
    req = tmp_path / "requirements.txt"
    req.write_text("-e ./src/mypkg\n")
    assert main(["vet", "-r", str(req), "--json"]) == 1
    (row,) = json.loads(capsys.readouterr().out)["packages"]
    assert row["class"] == 4 and row["target"] == str(pkg) and row["note"] == "a local path"


def test_a_file_naming_nothing_for_this_platform_is_incomplete(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    req = tmp_path / "requirements.txt"
    req.write_text(
        "winonly==1 ; sys_platform == 'win32'\nhttps://example.invalid/x-1.0-py3-none-any.whl ; sys_platform == 'win32'\n"
    )
    assert main(["vet", "-r", str(req)]) == 3
    captured = capsys.readouterr()
    assert "2 requirement line(s) not for this platform" in captured.out
    assert "no package to vet" in captured.err


def test_local_files_written_as_urls_paths_with_extras_and_project_urls(tmp_path: Path) -> None:
    from pytest_rocm.vet.stack import read_pins

    here = tmp_path / "proj"
    here.mkdir()
    wheel = make_wheel(tmp_path / "local-1.0-py3-none-any.whl", wheel_metadata("local", "1.0", []))
    req = here / "requirements.txt"
    req.write_text(f"file://{wheel}\n-e .[dev]\n")
    url_pin, dot_pin = read_stack(req)[0]
    assert (url_pin.name, url_pin.link, url_pin.link_kind) == ("local", str(wheel), "path")
    assert (dot_pin.name, dot_pin.link, dot_pin.link_kind) == ("proj", str(here.resolve()), "path")
    project = here / "pyproject.toml"
    project.write_text(
        '[project]\nname = "me"\ndependencies = ["remote @ https://example.invalid/remote-2.0.tar.gz"]\n'
    )
    (pin,) = read_pins(project)
    assert pin.link == "https://example.invalid/remote-2.0.tar.gz" and pin.link_kind == "url"


def test_a_url_is_matched_by_its_decoded_file_name_without_fragment(tmp_path: Path) -> None:
    from pytest_rocm.vet.stack import locate_link, wheel_index

    folder = tmp_path / "wheels"
    folder.mkdir()
    wheel = _rocm_wheel(folder, LLAMA_URL_WHEEL)
    req = tmp_path / "requirements.txt"
    quoted = LLAMA_URL_WHEEL.replace("+", "%2B")
    req.write_text(f"https://example.invalid/dl/{quoted}#sha256=abcd\n")
    (pin,) = read_stack(req)[0]
    assert (pin.name, pin.version) == ("llama-cpp-binaries", "0.6.0+rocm6.1.2")
    assert locate_link(pin, wheel_index(folder)) == (str(wheel), "from --wheels, the file the URL names")


@pytest.mark.skipif(
    (sys.platform, platform.machine(), sys.version_info[:2]) != ("linux", "x86_64", (3, 11)),
    reason="the file's markers name Linux x86_64 and Python 3.11",
)
def test_text_generation_webui_full_amd_file_keeps_its_url_rows_and_says_what_it_skipped() -> None:
    pins, skipped = read_stack(DATA / "tgwui" / "requirements_amd_full.txt")
    links = {p.name: p for p in pins if p.link}
    assert set(links) == {"llama-cpp-binaries", "exllamav2"}  # both for Linux x86_64, Python 3.11
    assert links["exllamav2"].version == "0.2.9+rocm6.1.torch2.6.0"
    assert [s.split()[1] for s in skipped] == ["exllamav2"]  # the aarch64 wheel: not for this machine
    assert len(pins) == len(_names(DATA / "tgwui" / "requirements_amd_full.txt")) + 2
