"""Every marker, run through pytest, against recorded environments of real machines.

One test file carries one test per marker use; each recorded environment (tests/data/envs, made
by detection over fake trees built from real samples) must give the outcomes in the table below.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ENVS = Path(__file__).parents[1] / "data" / "envs"


#: in-process inner runs load just pytest-rocm, on an empty machine (tests/plugin/conftest.py)
pytestmark = pytest.mark.usefixtures("only_this_plugin")


SUITE = """
import pytest

@pytest.mark.gpu
def test_gpu(): pass

@pytest.mark.gpus(2)
def test_gpus2(): pass

@pytest.mark.gpus(8)
def test_gpus8(): pass

@pytest.mark.rocm
def test_rocm(): pass

@pytest.mark.gfx("gfx1100")
def test_gfx_exact(): pass

@pytest.mark.gfx("gfx10*")
def test_gfx_glob(): pass

@pytest.mark.gfx("cdna3")
def test_gfx_family(): pass

@pytest.mark.skip_gfx("rdna2", reason="broken on rdna2")
def test_skip_gfx(): pass

@pytest.mark.xfail_gfx("gfx942", reason="wrong numbers on cdna3")
def test_xfail_gfx(): assert False

@pytest.mark.rocm_version(">=6.2.1")
def test_rocm_version(): pass

@pytest.mark.torch_version(">=2.6")
def test_torch_version(): pass

@pytest.mark.min_vram("20GiB")
def test_min_vram(): pass

@pytest.mark.requires("pytest>=7")
def test_requires_ok(): pass

@pytest.mark.requires("pytest>=999")
def test_requires_old(): pass

@pytest.mark.requires("surely-not-installed-dist>=1")
def test_requires_absent(): pass

@pytest.mark.feature("operators/example")
def test_feature(): pass

@pytest.mark.gfx("rdna3")
class TestClassMarker:
    @pytest.mark.min_vram("16GiB")
    def test_both(self): pass
"""

P, S, X, F = "passed", "skipped", "xfailed", "failed"
COLUMNS = ("rx7900xtx_rocm6", "rx6800xt_igpu", "rx6700xt_override", "mi300x_8", "nvidia_cuda", "cpu_only")
EXPECTED = {
    #                    7900xtx 6800xt 6700xt mi300x cuda  cpu
    "test_gpu": (P, P, P, P, P, S),
    "test_gpus2": (S, P, S, P, S, S),
    "test_gpus8": (S, S, S, P, S, S),
    "test_rocm": (P, P, P, P, S, S),
    "test_gfx_exact": (P, S, S, S, S, S),
    "test_gfx_glob": (S, P, P, S, S, S),
    "test_gfx_family": (S, S, S, P, S, S),
    "test_skip_gfx": (P, S, S, P, P, P),
    "test_xfail_gfx": (F, F, F, X, F, F),
    "test_rocm_version": (P, S, S, P, S, S),
    "test_torch_version": (P, S, S, P, P, P),
    "test_min_vram": (P, S, S, P, P, S),
    "test_requires_ok": (P, P, P, P, P, P),
    "test_requires_old": (S, S, S, S, S, S),
    "test_requires_absent": (S, S, S, S, S, S),
    "test_feature": (P, P, P, P, P, P),
    "test_both": (P, S, S, S, S, S),
}


def outcomes(rec: pytest.HookRecorder) -> dict[str, tuple[str, str]]:
    """test name -> (outcome, skip/xfail reason)."""
    out: dict[str, tuple[str, str]] = {}
    for rep in rec.getreports("pytest_runtest_logreport"):
        name = rep.nodeid.split("::")[-1]
        if hasattr(rep, "wasxfail"):
            out[name] = (X if rep.skipped else "xpassed", rep.wasxfail)
        elif rep.skipped:
            reason = str(rep.longrepr[2]) if isinstance(rep.longrepr, tuple) else ""
            out[name] = (S, reason.removeprefix("Skipped: "))
        elif rep.failed:
            out[name] = (F, "")
        elif rep.when == "call" and name not in out:
            out[name] = (P, "")
    return out


@pytest.mark.parametrize("column", range(len(COLUMNS)), ids=COLUMNS)
def test_every_marker_against_recorded_environments(pytester: pytest.Pytester, column: int) -> None:
    pytester.makepyfile(test_suite=SUITE)
    rec = pytester.inline_run(f"--rocm-env={ENVS / COLUMNS[column]}.json", "--strict-markers", "-p", "no:cacheprovider")
    got = {name: outcome for name, (outcome, _) in outcomes(rec).items()}
    want = {name: row[column] for name, row in EXPECTED.items()}
    assert got == want


def test_skip_reasons_through_pytest(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest(f"--rocm-env={ENVS}/rx6800xt_igpu.json", "-rsx", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines_random(
        [
            "SKIPPED [[]1[]] test_suite.py:*: needs 8 GPUs, found 2",
            "SKIPPED [[]1[]] test_suite.py:*: needs gfx1100 (rdna3), device 0 is gfx1030 (rdna2)",
            "SKIPPED [[]1[]] test_suite.py:*: broken on rdna2 (rdna2 matches: device 0 is gfx1030 (rdna2))",
            "SKIPPED [[]1[]] test_suite.py:*: needs ROCm >=6.2.1, this is 6.2",
            "SKIPPED [[]1[]] test_suite.py:*: needs 20.0 GiB of GPU memory, device 0 has 16.0 GiB",
            "SKIPPED [[]1[]] test_suite.py:*: needs pytest>=999, this is pytest *",
            "SKIPPED [[]1[]] test_suite.py:*: not installed: surely-not-installed-dist (needs surely-not-installed-dist>=1)",
        ]
    )


def test_xfail_gfx_strict_turns_xpass_into_failure(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest
        @pytest.mark.xfail_gfx("cdna3", reason="flaky", strict=True)
        def test_passes_anyway(): pass
        @pytest.mark.xfail_gfx("cdna3", reason="flaky")
        def test_passes_lax(): pass
    """)
    rec = pytester.inline_run(f"--rocm-env={ENVS}/mi300x_8.json", "-o", "xfail_strict=false")
    got = outcomes(rec)
    assert got["test_passes_anyway"][0] == F
    assert got["test_passes_lax"][0] == "xpassed"


PASSING_XFAIL_GFX = """
import pytest
@pytest.mark.xfail_gfx("cdna3", reason="wrong numbers")
def test_default(): pass
@pytest.mark.xfail_gfx("cdna3", reason="wrong numbers", strict=False)
def test_lax(): pass
@pytest.mark.xfail_gfx("rdna3", reason="not this device")
def test_not_matching(): pass
"""


def test_xfail_gfx_follows_the_xfail_strict_ini_unless_strict_is_given(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nxfail_strict = true\n")
    pytester.makepyfile(PASSING_XFAIL_GFX)
    result = pytester.runpytest(f"--rocm-env={ENVS}/mi300x_8.json", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1, xpassed=1, passed=1)
    result.stdout.fnmatch_lines(["[[]XPASS(strict)[]] wrong numbers (cdna3 matches: device 0 is gfx942 (cdna3))"])
    got = outcomes(pytester.inline_run(f"--rocm-env={ENVS}/mi300x_8.json", "-p", "no:cacheprovider"))
    assert got["test_default"][0] == F
    assert got["test_lax"] == ("xpassed", "wrong numbers (cdna3 matches: device 0 is gfx942 (cdna3))")
    assert got["test_not_matching"][0] == P


def test_xfail_gfx_is_lax_when_xfail_strict_is_off(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nxfail_strict = false\n")
    pytester.makepyfile(PASSING_XFAIL_GFX)
    got = outcomes(pytester.inline_run(f"--rocm-env={ENVS}/mi300x_8.json", "-p", "no:cacheprovider"))
    assert got["test_default"][0] == "xpassed" and got["test_lax"][0] == "xpassed"


def test_rocm_gfx_picks_the_igpu_among_devices(pytester: pytest.Pytester) -> None:
    """The recording's iGPU is the plan's device (this empty machine has no gfx1036): its markers
    are decided on it, its memory included, and nothing runs on hardware that is not here."""
    pytester.makepyfile(test_suite=SUITE)
    rec = pytester.inline_run(f"--rocm-env={ENVS}/rx6800xt_igpu.json", "--rocm-gfx=gfx1036")
    got = outcomes(rec)
    assert got["test_gfx_glob"] == (S, "would run on gfx1036 (plan)")  # gfx1036 matches gfx10*
    assert got["test_skip_gfx"][1] == "broken on rdna2 (rdna2 matches: the plan is for gfx1036 (rdna2))"
    assert got["test_min_vram"][1] == "needs 20.0 GiB of GPU memory, the plan's recorded device has 512 MiB"
    assert got["test_gpus2"][1] == "needs 2 GPUs, the plan has 1"


def test_plan_decides_markers_as_if_the_device_were_here(pytester: pytest.Pytester) -> None:
    """A plan decides each test's markers as on gfx942, and never executes one that needs a
    device (issue 20: rocm_gpu tests without the rocm_device fixture ran, and failed)."""
    pytester.makepyfile(
        test_suite=SUITE
        + """
def test_uses_device(rocm_device): pass

@pytest.mark.rocm_gpu
def test_gpu_body_needs_cuda():
    raise RuntimeError("Torch not compiled with CUDA enabled")
"""
    )
    rec = pytester.inline_run(f"--rocm-env={ENVS}/cpu_only.json", "--rocm-gfx=gfx942")
    got = outcomes(rec)
    would = "would run on gfx942 (plan)"
    for name in ("test_gpu", "test_rocm", "test_gfx_family", "test_uses_device", "test_gpu_body_needs_cuda"):
        assert got[name] == (S, would), name
    assert got["test_xfail_gfx"] == (
        S,
        f"{would}, expected to fail there: wrong numbers on cdna3 (gfx942 matches: the plan is for gfx942 (cdna3))",
    )
    assert got["test_gfx_exact"][1] == "needs gfx1100 (rdna3), the plan is for gfx942 (cdna3)"
    assert got["test_gpus2"][1] == "needs 2 GPUs, the plan has 1"
    assert got["test_rocm_version"][1].startswith("needs ROCm >=6.2.1, the plan for gfx942 knows no ROCm version")
    # every gfx942 product has at least 20 GiB (data/vram.json, AMD's table): it would run there
    assert got["test_min_vram"] == (S, would)
    assert got["test_torch_version"][0] == P  # needs no device: it ran here
    assert not [name for name, (outcome, _) in got.items() if outcome == F]


NVIDIA_SUITE = """
import pytest

@pytest.mark.gpu
def test_gpu(): pass

@pytest.mark.rocm
def test_rocm(): pass

@pytest.mark.gfx("sm_90")
def test_hopper(): pass

@pytest.mark.gfx("sm_8*")
def test_ampere(): pass

@pytest.mark.gfx("cdna3")
def test_cdna3(): pass

@pytest.mark.skip_gfx("sm_90", reason="broken on hopper")
def test_skip_hopper(): pass

@pytest.mark.rocm_version(">=6.1")
def test_rocm_version(): pass

def test_uses_device(rocm_device): pass

@pytest.mark.torch_version(">=2.6")
def test_torch(): pass
"""


def test_a_plan_for_an_nvidia_architecture_is_the_cuda_column_planned_the_same_way(pytester: pytest.Pytester) -> None:
    """``--rocm-gfx=sm_90`` with no device here: a CUDA plan (backend cuda, arch sm_90), each test
    decided as on that device; before, "a plan needs one architecture: sm_90 could be nothing known"."""
    pytester.makepyfile(NVIDIA_SUITE)
    got = outcomes(pytester.inline_run(f"--rocm-env={ENVS}/cpu_only.json", "--rocm-gfx=sm_90"))
    would = "would run on sm_90 (plan)"
    for name in ("test_gpu", "test_hopper", "test_uses_device"):
        assert got[name] == (S, would), name
    assert got["test_rocm"] == (S, "needs the ROCm backend, the plan is for sm_90 (CUDA)")
    assert got["test_ampere"] == (S, "needs sm_8*, the plan is for sm_90")
    assert got["test_cdna3"] == (S, "needs cdna3, the plan is for sm_90")
    assert got["test_skip_hopper"] == (S, "broken on hopper (sm_90 matches: the plan is for sm_90)")
    assert got["test_rocm_version"] == (
        S,
        "needs ROCm >=6.1, the plan for sm_90 is a CUDA plan, which has no ROCm runtime",
    )
    assert got["test_torch"][0] == P  # needs no device: it ran here
    result = pytester.runpytest(f"--rocm-env={ENVS}/cpu_only.json", "--rocm-gfx=sm_90", "-p", "no:cacheprovider")
    assert "rocm: backend=cuda torch=2.6.0+cpu device=plan:sm_90 [plan: sm_90, no device here]" in result.outlines


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--rocm-gfx=sm_90", "--rocm-plan-rocm=6.2"], "--rocm-plan-rocm: the plan for sm_90 is a CUDA plan, which assumes no ROCm*"),
        (["--rocm-gfx=sm_9*"], "--rocm-gfx=sm_9*: no device here, so this run is a plan, and a plan needs one architecture: sm_9* could be no single one (name one: sm_90)"),
    ],
    ids=["rocm-version", "glob"],
)  # fmt: skip
def test_a_cuda_plan_refuses_what_it_cannot_plan_in_one_line(
    pytester: pytest.Pytester, args: list[str], message: str
) -> None:
    pytester.makepyfile(NVIDIA_SUITE)
    result = pytester.runpytest(f"--rocm-env={ENVS}/cpu_only.json", *args, "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])


ARCH_AND_VERSION = """
import pytest

@pytest.mark.rocm_version(">=6.1")
@pytest.mark.rocm_gfx("cdna3")
def test_ck(): pass

@pytest.mark.rocm_torch_version(">=2.6")
@pytest.mark.rocm_gpu
def test_new_torch(): pass
"""


@pytest.mark.parametrize(
    ("args", "ck", "new_torch"),
    [
        (
            ["--rocm-gfx=gfx942"],
            "fits gfx942 (cdna3); needs ROCm >=6.1, the plan for gfx942 knows no ROCm version (give it one: "
            "--rocm-plan-rocm=6.2 or --rocm-plan-combo=NAME, or use --rocm-env)",
            "would run on gfx942 (plan)",  # this machine's torch (2.13) when the plan names none
        ),
        (["--rocm-gfx=gfx1100"], "needs cdna3, the plan is for gfx1100 (rdna3)", "would run on gfx1100 (plan)"),
        (["--rocm-gfx=gfx942", "--rocm-plan-rocm=6.2"], "would run on gfx942 (plan)", "would run on gfx942 (plan)"),
        (["--rocm-gfx=gfx942", "--rocm-plan-rocm=6.0"], "fits gfx942 (cdna3); needs ROCm >=6.1, this is 6.0", None),
        (
            ["--rocm-gfx=gfx942", "--rocm-plan-combo=torch2.5-rocm6.2"],
            "would run on gfx942 (plan)",
            "needs torch >=2.6, this is 2.5.1",
        ),
        (  # an explicit version wins over the combination's
            ["--rocm-gfx=gfx942", "--rocm-plan-combo=torch2.5-rocm6.2", "--rocm-plan-torch=2.6"],
            "would run on gfx942 (plan)",
            "would run on gfx942 (plan)",
        ),
    ],
    ids=["mi300x-no-version", "7900-arch-first", "rocm6.2", "rocm6.0", "combo", "combo-and-torch"],
)
def test_a_plan_answers_the_architecture_first_and_takes_versions(
    pytester: pytest.Pytester, args: list[str], ck: str, new_torch: str | None
) -> None:
    """Issue 20: gfx("cdna3") + rocm_version(">=6.1") said "the plan knows no ROCm version" on
    both gfx942 and gfx1100, so it never answered "MI300X but not a 7900?"."""
    pytester.makepyfile(ARCH_AND_VERSION)
    got = outcomes(pytester.inline_run(f"--rocm-env={ENVS}/cpu_only.json", *args))
    assert got["test_ck"] == (S, ck)
    if new_torch:
        assert got["test_new_torch"] == (S, new_torch)


def test_the_plan_summary_counts_what_would_run_and_why_the_rest_skips(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest(f"--rocm-env={ENVS}/cpu_only.json", "--rocm-gfx=gfx942", "-p", "no:cacheprovider")
    out = result.stdout.str()
    summary = out[out.index("rocm plan") :].splitlines()
    got = outcomes(pytester.inline_run(f"--rocm-env={ENVS}/cpu_only.json", "--rocm-gfx=gfx942"))
    would = sum(1 for outcome, reason in got.values() if outcome == S and reason == "would run on gfx942 (plan)")
    xfail = sum(1 for outcome, reason in got.values() if outcome == S and "expected to fail there" in reason)
    skips = sum(1 for outcome, reason in got.values() if outcome == S and "(plan)" not in reason)
    ran = sum(1 for outcome, _ in got.values() if outcome != S)
    assert would >= 3 and skips >= 4 and ran >= 1  # the suite has each kind
    assert summary[1] == (
        f"plan for gfx942: {would} test(s) would run there ({xfail} more expected to fail), "
        f"{skips} would skip; {ran} need no device and ran here"
    )
    assert any(line.endswith("skip: needs 2 GPUs, the plan has 1") for line in summary)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--rocm-gfx=gfx942", "--rocm-plan-rocm=six"], "--rocm-plan-rocm='six': expected a version such as 6.2*"),
        (
            ["--rocm-gfx=gfx942", "--rocm-plan-combo=cpu-torch2.13"],
            "--rocm-plan-combo='cpu-torch2.13': no ROCm combination of that name in matrix/combos.toml (known: *",
        ),
        (
            [f"--rocm-env={ENVS}/mi300x_8.json", "--rocm-plan-rocm=6.2", "-m", "rocm_gpu"],
            "--rocm-plan-rocm: only a plan takes versions (--rocm-gfx with no device here)*",
        ),
    ],
    ids=["bad-version", "not-a-rocm-combo", "no-plan"],
)
def test_plan_versions_are_validated_in_one_line(pytester: pytest.Pytester, args: list[str], message: str) -> None:
    pytester.makepyfile(ARCH_AND_VERSION)
    result = pytester.runpytest(*args, "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])


def test_plan_versions_come_from_the_variable_and_the_ini(pytester: pytest.Pytester, monkeypatch) -> None:
    pytester.makepyfile(ARCH_AND_VERSION)
    pytester.makeini("[pytest]\nrocm_plan_rocm = 6.0\n")
    ini = outcomes(pytester.inline_run(f"--rocm-env={ENVS}/cpu_only.json", "--rocm-gfx=gfx942"))
    assert ini["test_ck"][1].endswith("this is 6.0")
    monkeypatch.setenv("PYTEST_ROCM_PLAN_ROCM", "6.3")  # the variable wins over the ini
    env = outcomes(pytester.inline_run(f"--rocm-env={ENVS}/cpu_only.json", "--rocm-gfx=gfx942"))
    assert env["test_ck"] == (S, "would run on gfx942 (plan)")
    cli = outcomes(pytester.inline_run(f"--rocm-env={ENVS}/cpu_only.json", "--rocm-gfx=gfx942", "--rocm-plan-rocm=5.7"))
    assert cli["test_ck"][1].endswith("this is 5.7")  # the command line wins over both


def test_forced_cpu_runs_the_rest(pytester: pytest.Pytester) -> None:
    # the device fixture under --rocm-device=cpu (which imports torch) is covered in test_plugin.py
    pytester.makepyfile(test_suite=SUITE)
    rec = pytester.inline_run(f"--rocm-env={ENVS}/mi300x_8.json", "--rocm-device=cpu")
    got = outcomes(rec)
    assert got["test_gpu"] == (S, "needs a GPU, the device under test is the CPU (--rocm-device=cpu)")
    assert got["test_torch_version"][0] == P
    assert got["test_xfail_gfx"][0] == F  # no device architecture: the expectation does not apply


def test_markers_added_after_collection_are_still_validated(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("""
        import pytest
        def pytest_collection_modifyitems(items):
            for item in items:
                item.add_marker(pytest.mark.min_vram("a lot"))
    """)
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest(f"--rocm-env={ENVS}/mi300x_8.json")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*test_x*min_vram('a lot'): bad size 'a lot'*"])
    assert "Traceback" not in result.stdout.str()


BAD_MARKERS = {
    "test_bad_gfx": ('gfx("gfx11OO")', "gfx('gfx11OO')"),
    "test_bad_family": ('gfx("rdna9")', "rdna9"),
    "test_bad_skip": ('skip_gfx("navi")', "navi"),
    "test_bad_rocm": ('rocm_version("6.1")', "bad version specifier '6.1'"),
    "test_bad_torch": ('torch_version(">>2")', "bad version specifier '>>2'"),
    "test_bad_vram": ('min_vram("16 gigs")', "bad size '16 gigs'"),
    "test_bad_count": ("gpus(1, 2)", "wrong arguments"),
    "test_bad_req": ('requires("foo >== 1")', "bad requirement"),
}


def test_bad_marker_is_a_collection_error_naming_test_and_value(pytester: pytest.Pytester) -> None:
    for module, (marker, _) in BAD_MARKERS.items():
        pytester.makepyfile(
            **{
                module: f"""
            import pytest
            def test_fine(): pass
            @pytest.mark.{marker}
            def test_marked(): pass
        """
            }
        )
    pytester.makepyfile(test_good="def test_good(): pass")
    result = pytester.runpytest(f"--rocm-env={ENVS}/cpu_only.json")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    out = result.stdout.str()
    assert "Traceback" not in out
    for module, (_, fragment) in BAD_MARKERS.items():
        result.stdout.fnmatch_lines([f"*ERROR collecting {module}.py*", f"*{module}.py::test_marked: *{fragment}*"])
    assert f"{len(BAD_MARKERS)} errors" in out


def test_strict_markers_runs_clean_and_markers_are_listed(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest("--strict-markers", f"--rocm-env={ENVS}/mi300x_8.json")
    assert result.ret == pytest.ExitCode.OK
    listed = pytester.runpytest("--markers").stdout.str()
    for sig in (
        "gpu:",
        "gpus(n):",
        "rocm:",
        "gfx(*patterns):",
        "skip_gfx(*patterns, reason=None):",
        "xfail_gfx(*patterns, reason=None, strict=None):",
        "rocm_version(spec):",
        "torch_version(spec):",
        "min_vram(size):",
        "requires(spec):",
        "feature(name):",
    ):
        assert f"@pytest.mark.{sig}" in listed


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (  # 2.6's rocm6.2.4 wheels carry gfx1100 but no gfx1151 (Strix Halo): hipErrorNoBinaryForGpu
            ["--rocm-gfx=gfx1151", "--rocm-plan-combo=torch2.6-rocm6.2.4"],
            "would fail on gfx1151: the torch2.6-rocm6.2.4 wheel has no gfx1151 kernels "
            "(hipErrorNoBinaryForGpu at the first kernel)",
        ),
        (["--rocm-gfx=gfx1151", "--rocm-plan-combo=torch2.13-rocm7.2"], "would run on gfx1151 (plan)"),
        (["--rocm-gfx=gfx1100", "--rocm-plan-combo=torch2.6-rocm6.2.4"], "would run on gfx1100 (plan)"),
    ],
    ids=["strix-halo-on-rocm6.2.4", "strix-halo-on-rocm7.2", "7900-on-rocm6.2.4"],
)
def test_a_plan_with_a_combination_says_when_its_wheel_cannot_run_on_the_gfx(
    pytester: pytest.Pytester, args: list[str], reason: str
) -> None:
    """Issue 17: 'this wheel on that GPU' is planned from the wheel's gfx list, before the install."""
    pytester.makepyfile(ARCH_AND_VERSION + "\ndef test_device(rocm_device): pass\n")
    got = outcomes(pytester.inline_run(f"--rocm-env={ENVS}/cpu_only.json", *args))
    assert got["test_new_torch"] == (S, reason)
    assert got["test_device"] == (S, reason)
