"""vet on installed distributions (fake ones made here, and the real ones CI installs) and the
live check (--run): import in a child process, crash and hang recorded, library suite records."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from fake_packages import write_tree

from pytest_rocm.cli import main
from pytest_rocm.report.load import load_report
from pytest_rocm.vet import vet
from pytest_rocm.vet.live import SUITE_CLAIM, library_suite, live_check, primary_module


def make_installed(site: Path, name: str, files: dict[str, str], extra_record: tuple[str, ...] = ()) -> None:
    write_tree(site, files)
    info = site / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\nRequires-Dist: torch\n")
    (info / "top_level.txt").write_text(name + "\n")
    record = [f"{rel},," for rel in files] + [f"{name}-1.0.dist-info/METADATA,,", *extra_record]
    (info / "RECORD").write_text("\n".join(record) + "\n")


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    site = tmp_path / "site"
    site.mkdir()
    marker = tmp_path / "IMPORTED"
    writes = f"open({str(marker)!r}, 'w').write('x')\n"
    make_installed(
        site,
        "okpkg",
        {"okpkg/__init__.py": writes + "def add(a, b):\n    return a + b\nVALUE = 1\n"},
        extra_record=("../../../outside/script.py,,",),
    )
    make_installed(site, "brokenpkg", {"brokenpkg/__init__.py": "raise ImportError('needs libcudart.so.12')\n"})
    make_installed(
        site, "crashpkg", {"crashpkg/__init__.py": "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n"}
    )
    make_installed(site, "hangpkg", {"hangpkg/__init__.py": "import time\ntime.sleep(60)\n"})
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    return site


def test_installed_distribution_scan_reads_record_files_without_importing(site: Path, tmp_path: Path) -> None:
    target, result, verdict = vet("okpkg")
    assert (target.origin, target.name, target.version, target.top_level) == ("installed", "okpkg", "1.0", {"okpkg"})
    assert verdict.klass == 1
    assert [f.text for f in result.findings if f.rule == "outside-install"] == [
        str(site / "../../../outside/script.py")
    ]
    assert not (tmp_path / "IMPORTED").exists()


def test_live_import_records_pass_fail_crash_and_hang(site: Path, tmp_path: Path) -> None:
    ok = live_check("okpkg", {"okpkg"}, timeout=30)
    rec = ok["records"][0]
    assert (rec["outcome"], rec["feature"], rec["suite"]) == ("passed", "vet/okpkg/import", "vet")
    claims = rec["info"]["child_claims"]  # what the probe in the child said, labelled as such
    assert claims["public_callables"] == 1 and claims["examples"] == ["add"]
    # --run does execute it (the record lists its callables), in the sandbox: its write does not land
    assert ok["check"] == "smoke" and not (tmp_path / "IMPORTED").exists()

    broken = live_check("brokenpkg", {"brokenpkg"}, timeout=30)["records"][0]
    assert broken["outcome"] == "failed" and "needs libcudart.so.12" in broken["reason"]
    crashed = live_check("crashpkg", {"crashpkg"}, timeout=30)["records"][0]
    assert crashed["outcome"] == "crashed" and "SIGSEGV" in crashed["reason"]
    hung = live_check("hangpkg", {"hangpkg"}, timeout=1.5)["records"][0]
    assert hung["outcome"] == "timeout" and hung["duration"] < 30


PLANTS = (
    "import atexit, json, sys\n"
    "FAKE = {'torch': '2.6.0+rocm6.2', 'hip': '6.2.41134', 'note': 'verified on ROCm', 'outcome': 'passed',\n"
    "        'module': 'liarpkg', 'public_callables': 'all of them'}\n"
    "print('@@vet@@' + json.dumps(FAKE))\n"
    "atexit.register(lambda: print('@@vet@@' + json.dumps(FAKE)))  # after the probe's own line too\n"
)


def test_a_vetted_package_cannot_write_its_own_live_record(site: Path) -> None:
    """The package printed the probe's marker line itself, before and after the probe's: its
    facts (torch, hip, a note) were merged into the record as if the parent had observed them."""
    make_installed(site, "liarpkg", {"liarpkg/__init__.py": PLANTS})
    rec = live_check("liarpkg", {"liarpkg"}, timeout=30)["records"][0]
    assert rec["outcome"] == "passed"  # what the parent saw: the import returned, status 0
    info = rec["info"]
    assert not {"torch", "hip", "note", "outcome", "public_callables"} & set(info)  # nothing planted as a fact
    assert set(info) == {"module", "child_claims", "child_claims_note", "dist_version", "memory_limit_gib"}
    assert (info["module"], info["dist_version"]) == ("liarpkg", "1.0")  # the parent's own
    assert "its claim" in info["child_claims_note"]
    claims = info["child_claims"]
    assert "note" not in claims and "public_callables" not in claims  # unknown key, wrong type: dropped
    assert claims["torch"] == "2.6.0+rocm6.2"  # kept, but only as the child's claim


def test_an_import_that_ends_the_process_before_the_probe_reports_is_no_pass(site: Path) -> None:
    make_installed(site, "exitpkg", {"exitpkg/__init__.py": "import os\nos._exit(0)\n"})
    rec = live_check("exitpkg", {"exitpkg"}, timeout=30)["records"][0]
    assert rec["outcome"] == "failed" and "before the import returned" in rec["reason"]


def test_live_not_installed_is_the_not_installed_outcome() -> None:
    rec = live_check("surely-not-installed-pkg", set())["records"][0]
    assert rec["outcome"] == "not-installed" and rec["reason"].startswith("not installed: ")


def test_live_runs_the_matching_library_suite(site: Path, tmp_path: Path) -> None:
    suites = write_tree(
        tmp_path / "suites",
        {
            "libraries/test_okpkg.py": (
                "import okpkg\n"
                "def test_add():\n    assert okpkg.add(2, 2) == 4\n"
                "def test_add_wrong():\n    assert okpkg.add(2, 2) == 5\n"
            )
        },
    )
    assert library_suite("okpkg", suites) == suites / "libraries" / "test_okpkg.py"
    live = live_check("okpkg", {"okpkg"}, timeout=30, suite_timeout=120, device="cpu", suites=suites)
    assert live["check"] == "suite"
    outcomes = {r["feature"]: r["outcome"] for r in live["records"]}
    assert outcomes == {"vet/okpkg/import": "passed", "libraries/add": "passed", "libraries/add_wrong": "failed"}
    # the suite's records come from the child's report: each says so
    assert [r["info"]["claimed_by"] for r in live["records"][1:]] == [SUITE_CLAIM, SUITE_CLAIM]


def test_cli_run_writes_a_report_the_table_can_read(
    site: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "vet-report.json"
    assert main(["vet", "okpkg", "--run", "--json", "--report", str(out)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["live"]["records"][0]["outcome"] == "passed"
    report = load_report(out)
    assert report["schema"] == "pytest-rocm/report/1"
    assert [r["feature"] for r in report["results"]] == ["vet/okpkg/import"]


def test_cli_run_on_a_crashing_package_still_exits_0(site: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["vet", "crashpkg", "--run", "--timeout", "30"]) == 0
    assert "crashed" in capsys.readouterr().out


def test_primary_module() -> None:
    assert primary_module("torch", {"functorch", "torch", "torchgen"}) == "torch"
    assert primary_module("Flash-Attn", {"flash_attn", "hopper"}) == "flash_attn"
    assert primary_module("pyyaml", {"yaml", "_yaml"}) == "yaml"


# -- the real distributions CI installs ---------------------------------------------------------
def _installed(name: str) -> None:
    try:
        metadata.distribution(name)
    except metadata.PackageNotFoundError:
        pytest.skip(f"not installed: {name}")


@pytest.mark.parametrize(
    ("name", "klass", "must"),
    [
        ("packaging", 1, set()),
        ("transformers", 2, {"uses-ecosystem"}),
        # its optional JIT BOFT kernel: a caveat; the .cu is in a sub-package peft's import does not load
        ("peft", 2, {"requires-ecosystem", "cuda-jit-load"}),
        ("bitsandbytes", 3, {"links-cuda-library", "links-rocm-library", "hip-fatbin-section"}),
        ("triton", 3, {"hip-header", "hip-platform-macro", "cuda-header"}),
    ],
)
def test_real_installed_distributions(name: str, klass: int, must: set[str]) -> None:
    _installed(name)
    _, result, verdict = vet(name)
    assert verdict.klass == klass, verdict.reason
    assert must <= {f.rule for f in result.findings if f.counts}
    if name == "peft":
        assert {f.context for f in result.findings if f.rule == "cuda-source-file"} == {"optional-module"}


def test_real_bitsandbytes_as_a_wheel(tmp_path: Path) -> None:
    """A wheel made from the installed bitsandbytes (two of its real binaries): same verdict."""
    import zipfile

    _installed("bitsandbytes")
    dist = metadata.distribution("bitsandbytes")
    keep = [
        f
        for f in dist.files or []
        if "__pycache__" not in f.parts and (not str(f).endswith(".so") or "cuda130" in str(f) or "rocm64" in str(f))
    ]
    whl = tmp_path / f"bitsandbytes-{dist.version}-py3-none-manylinux_2_24_x86_64.whl"
    with zipfile.ZipFile(whl, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for f in keep:
            zf.write(dist.locate_file(f), str(f))
    target, result, verdict = vet(str(whl))
    assert (target.origin, target.name, verdict.klass) == ("wheel", "bitsandbytes", 3)
    linked = {f.path for f in result.findings if f.rule in ("links-cuda-library", "links-rocm-library")}
    assert linked == {"bitsandbytes/libbitsandbytes_cuda130.so", "bitsandbytes/libbitsandbytes_rocm64.so"}


def test_real_torch_is_class_3_and_named_as_the_platform() -> None:
    _installed("torch")
    _, result, verdict = vet("torch")
    assert verdict.klass == 3
    rules = {f.rule for f in result.findings if f.counts}
    assert {"hip-platform-macro", "python-hip-branch"} <= rules and "cuda-runtime-api" in rules
    assert any("PyTorch itself" in c for c in verdict.caveats)


def test_scan_imports_neither_the_target_nor_torch() -> None:
    _installed("bitsandbytes")
    code = (
        "import sys; from pytest_rocm.vet import vet; vet('bitsandbytes'); "
        "bad = [m for m in ('torch', 'bitsandbytes') if m in sys.modules]; sys.exit(bool(bad))"
    )
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
