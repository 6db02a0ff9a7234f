"""The known errors (data/known_errors.json) held to the real lines they were recorded from: one
test per recorded line, each also pasted the ways real pastes vary (a timestamp or journal
prefix, colour codes, typographic quotes, another path, gfx or number where the template says one
varies); ``rocm-compat doctor --explain`` and ``--explain-file`` on them; fixes chosen by gfx and
ROCm; bad knowledge refused in one line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pytest_rocm import cli
from pytest_rocm.doctor import explain
from pytest_rocm.doctor.explain import KnowledgeError, compile_template

DATA = Path(__file__).parents[1] / "data"
KNOWN = explain.bundled()
SAMPLES = [(e.id, line, source) for e in KNOWN for line, source in e.samples]

#: the lines issue 49 quotes (from real captures), and the error each is
QUOTED = [
    (
        "rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat: Illegal seek for GPU arch : gfx1032",
        "rocblas_no_tensile_library_for_gfx",
    ),
    (
        "RuntimeError: CUDA error: HIPBLAS_STATUS_INTERNAL_ERROR when calling `hipblasLtMatmul( ltHandle, computeDesc.descriptor(), ...)`",
        "hipblaslt_internal_error",
    ),
    (
        "MIOpen Error: /long/path/MIOpen/src/ocl/convolutionocl.cpp:275: No suitable algorithm was found to execute the required convolution",
        "miopen_no_suitable_algorithm",
    ),
    ("ggml_cuda_init: failed to initialize ROCm: no ROCm-capable device is detected", "ggml_rocm_no_device"),
    ("RuntimeError: HIP error: no kernel image is available for execution on the device", "no_kernel_image_for_device"),
    ("hsa_init Failed", "hsa_init_failed"),
    (
        'node [0] /app/rccl/src/init.cc:213 NCCL WARN Missing "iommu=pt" from kernel command line which can lead to system instablity or hang!',
        "rccl_missing_iommu_pt",
    ),
]
#: prefixes real pastes put before an error line
PREFIXES = [
    "",
    "2026-01-02T03:04:05.678Z ",
    "Jan 14 19:05:43 host ollama[1672]: ",
    "    ",
    "> ",
    "[stderr] E1207 19:20:00.123456 4242 log.cc:1] ",
]
#: what a placeholder's text is replaced with to show the template holds for the class
OTHER = {"gfx": "gfx1201", "path": "/usr/lib64/other path/", "num": "42", "any": "something else "}


def ids_for(text: str, **facts: str) -> list[str]:
    return [f.error.id for f in explain.explain(text, **facts)]


@pytest.mark.parametrize(
    ("entry_id", "line", "source"), SAMPLES, ids=[f"{i}:{n}" for n, (i, _, _) in enumerate(SAMPLES)]
)
def test_each_recorded_line_is_its_error(entry_id: str, line: str, source: str) -> None:
    assert source.startswith("https://github.com/"), source
    assert entry_id in ids_for(line)
    for prefix in PREFIXES:
        assert entry_id in ids_for(prefix + line + "\r"), prefix
    error = next(e for e in KNOWN if e.id == entry_id)
    m = error.match(line)
    assert m is not None
    space = line.find(" ", m.start() + 1)
    if 0 < space < m.end():  # a coloured terminal, pasted: a colour change inside the error's words
        assert entry_id in ids_for(f"\x1b[1;31m{line[:space]}\x1b[0m{line[space:]}")
    curly = line.replace('"', "“", 1).replace('"', "”", 1)
    assert entry_id in ids_for(curly)  # a chat or a word processor made the quotes typographic


@pytest.mark.parametrize(
    ("entry_id", "line", "source"), SAMPLES, ids=[f"{i}:{n}" for n, (i, _, _) in enumerate(SAMPLES)]
)
def test_what_varies_may_vary(entry_id: str, line: str, source: str) -> None:
    """Each placeholder's text in a recorded line replaced by another of its kind: still the error."""
    error = next(e for e in KNOWN if e.id == entry_id)
    m = error.match(line)
    assert m is not None
    pattern = next(p for p in error.patterns if p.search(explain.normalise(line)))
    for name, kind in _placeholder_groups(pattern, m):
        start, end = m.span(name)
        varied = explain.normalise(line)[:start] + OTHER[kind] + explain.normalise(line)[end:]
        assert error.match(varied) is not None, (name, varied)


def _placeholder_groups(pattern: re.Pattern[str], m: re.Match[str]) -> list[tuple[str, str]]:
    groups = [(n, n.rstrip("0123456789")) for n in m.groupdict()]
    return [(n, k) for n, k in groups if m.group(n) is not None]


#: the fragments as issue 49 writes them (an ellipsis for the path): a user pastes no more than that
FRAGMENTS = [
    ("Cannot read …TensileLibrary.dat: Illegal seek for GPU arch", "rocblas_no_tensile_library_for_gfx"),
    ("HIPBLAS_STATUS_INTERNAL_ERROR when calling hipblasLtMatmul", "hipblaslt_internal_error"),
    ("No suitable algorithm was found to execute the required convolution", "miopen_no_suitable_algorithm"),
    ("ggml_cuda_init: failed to initialize ROCm", "ggml_rocm_no_device"),
    ("no kernel image is available for execution on the device", "no_kernel_image_for_device"),
    ("hsa_init Failed", "hsa_init_failed"),
    ('Missing "iommu=pt"', "rccl_missing_iommu_pt"),
]


@pytest.mark.parametrize(("line", "entry_id"), QUOTED + FRAGMENTS)
def test_the_lines_the_issue_quotes(line: str, entry_id: str) -> None:
    assert entry_id in ids_for(line)


def test_each_error_has_its_sources_and_a_cause() -> None:
    for error in KNOWN:
        assert error.samples and error.cause and error.fixes, error.id
        assert any(error.message in line for line, _ in error.samples), error.id  # greppable


def test_healthy_output_is_no_known_error() -> None:
    """Real output of working machines: nothing in it is taken for an error."""
    fixtures = Path("/work/shared/fixtures/realworld/rocminfo")
    texts = [(DATA / "ollama" / "gfx1100_rocm_0.5.4_journal.log").read_text()]
    texts += [p.read_text() for p in sorted(fixtures.glob("*.txt"))] if fixtures.is_dir() else []
    for text in texts:
        assert explain.explain(text) == []


# -- fixes by condition ----------------------------------------------------------------------------
ROCBLAS = (
    "rocBLAS error: Cannot read /x/torch/lib/rocblas/library/TensileLibrary.dat: Illegal seek for GPU arch : {gfx}"
)


def fixes_for(text: str, **facts: str) -> list[tuple[str, bool | None]]:
    (finding,) = explain.explain(text, **facts)
    return [(fix.worded(finding.gfx), applies) for fix, applies in finding.fixes]


def test_the_gfx_of_the_line_picks_the_fix() -> None:
    fixes = fixes_for(ROCBLAS.format(gfx="gfx1032"))
    assert (
        "export HSA_OVERRIDE_GFX_VERSION=10.3.0: gfx1032 then runs the gfx1030 kernels every build carries",
        True,
    ) in fixes
    assert not any("gfx900" in text for text, _ in fixes)
    gfx1103 = fixes_for(ROCBLAS.format(gfx="gfx1103"))
    assert any("page-faults" in text for text, _ in gfx1103) and not any("10.3.0" in t for t, _ in gfx1103)


def test_the_rocm_release_picks_the_fix() -> None:
    line = ROCBLAS.format(gfx="gfx900")
    assert any("ROCm 7.2 and later ships no gfx900" in t and v for t, v in fixes_for(line, rocm="7.2"))
    assert not any("ROCm 7.2 and later ships no gfx900" in t for t, _ in fixes_for(line, rocm="6.2"))
    unknown = [(t, v) for t, v in fixes_for(line) if "ROCm 7.2 and later ships no gfx900" in t]
    assert unknown and unknown[0][1] is None  # not known: shown, and said to depend on the ROCm
    assert any(
        "ROCm 7.2 and later ships no gfx900" in t for t, _ in fixes_for(line + "\ntorch 2.12.0.dev20260408+rocm7.2")
    )


def test_a_gfx_given_by_the_user_decides_when_the_line_names_none() -> None:
    line = "RuntimeError: HIP error: no kernel image is available for execution on the device"
    assert any("10.3.0" in t and v for t, v in fixes_for(line, gfx="gfx1031"))
    assert not any("10.3.0" in t for t, _ in fixes_for(line, gfx="gfx1100"))
    assert any(v is None and "value usual" in t for t, v in fixes_for(line))


# -- rocm-compat doctor --explain / --explain-file -----------------------------------------------
def test_explain_a_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["doctor", "--explain", ROCBLAS.format(gfx="gfx1031")]) == 0
    out = capsys.readouterr().out
    assert "rocblas_no_tensile_library_for_gfx" in out and "HSA_OVERRIDE_GFX_VERSION=10.3.0" in out
    assert "https://github.com/ROCm/legacy-rocm-build/issues/2719" in out and "doctor check: gfx-in-build" in out
    assert out.rstrip().endswith("1 known error in 1 line")


def test_nothing_known_is_said_and_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["doctor", "--explain", "all good here"]) == 1
    assert "no known error in 1 line" in capsys.readouterr().out


def test_explain_a_log_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A long log: several errors, one of them a thousand times; not UTF-8 in places (Windows)."""
    log = tmp_path / "server.log"
    body = [b"starting\n", ROCBLAS.format(gfx="gfx1103").encode() + b"\n"] * 1000
    body += [b"caf\xe9 \xff\n", b"hsa_init failed with 1008\n"]
    log.write_bytes(b"".join(body))
    assert cli.main(["doctor", "--explain-file", str(log), "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["lines"] == 2002
    rocblas, hsa = found["explained"]
    assert (rocblas["id"], rocblas["line_no"], rocblas["count"], rocblas["gfx"]) == (
        "rocblas_no_tensile_library_for_gfx",
        2,
        1000,
        "gfx1103",
    )
    assert hsa["id"] == "hsa_init_failed" and hsa["line_no"] == 2002


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--explain-file", "/no/such/log"], "/no/such/log: no such file"),
        (["--explain", "x", "--gfx", "radeon"], "--gfx 'radeon' is not a gfx name"),
        (["--explain", "x", "--rocm", "six"], "--rocm 'six' is not a version"),
        (["--gfx", "gfx1031"], "--gfx and --rocm go with --explain"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], args: list[str], said: str) -> None:
    assert cli.main(["doctor", *args]) == 2
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1 and "Traceback" not in err


def test_a_hostile_line_is_shown_escaped(capsys: pytest.CaptureFixture[str]) -> None:
    cli.main(["doctor", "--explain", "\x1b]0;owned\x07hsa_init failed \u202eevil"])
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out and "\\u202e" in out


# -- the knowledge itself ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("entry", "said"),
    [
        ({"match": "{gpu} failed"}, "unknown placeholder {gpu}"),
        ({"match": "{any}"}, "needs words of its own"),
        ({"fixes": [{"fix": "x", "when": {"gfx": ["gfx9999"]}}]}, "unknown gfx"),
        ({"fixes": [{"fix": "x", "when": {"rocm": "seven"}}]}, "bad ROCm condition"),
        ({"fixes": ["just text"]}, "a fix must be an object"),
    ],
)
def test_bad_knowledge_names_the_entry(entry: dict[str, object], said: str) -> None:
    good = {
        "id": "x1",
        "category": "c",
        "message": "m failed",
        "match": "m failed",
        "cause": "c",
        "fixes": [{"fix": "f"}],
        "check": None,
        "samples": [{"line": "m failed", "source": "https://github.com/a/b"}],
    }
    with pytest.raises(KnowledgeError, match=re.escape(said)) as info:
        explain.load([{**good, **entry}])
    assert "x1" in str(info.value)


def test_a_template_is_literal_text_not_a_regular_expression() -> None:
    pattern = compile_template("a.b (c)+ [d]")
    assert pattern.search("a.b (c)+ [d]") and not pattern.search("axb cc d")
