"""Markers: argument validation, version and size rules, and evaluation (pure, no pytest run)."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

from pytest_rocm.env.model import Environment
from pytest_rocm.plugin import marks as markers
from pytest_rocm.plugin.device_choice import choose_device
from pytest_rocm.plugin.marks import MarkerError, parse_mark
from pytest_rocm.plugin.options import Settings
from pytest_rocm.plugin.versions import parse_size, satisfies

ENVS = Path(__file__).parents[1] / "data" / "envs"


def env(name: str) -> Environment:
    return Environment.load(ENVS / f"{name}.json")


DEFAULTS = Settings()


def decide(env_name: str, name: str, *args, settings: Settings = DEFAULTS, installed=None, **kwargs):
    choice = choose_device(env(env_name), settings)
    parsed = parse_mark(name, args, kwargs)
    lookup = markers.library_lookup(None, installed or (lambda dist: None))
    return markers.evaluate([parsed], choice, lookup)


# -- sizes ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("16GiB", 16 * 2**30),
        ("16 GiB", 16 * 2**30),
        ("512MiB", 512 * 2**20),
        ("1.5GiB", int(1.5 * 2**30)),
        ("16GB", 16 * 10**9),
        ("16gib", 16 * 2**30),
        (17179869184, 17179869184),
        ("1024", 1024),
    ],
)
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("bad", ["16 gigs", "GiB", "", "-1GiB", "0GiB", "١٦GiB", 0, -5, True, 3.5, None])
def test_parse_size_rejects(bad):
    with pytest.raises(ValueError, match="bad size"):
        parse_size(bad)


# -- versions ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("version", "spec", "ok"),
    [
        ("2.6.0+rocm6.2.4", ">=2.6,<2.7", True),
        ("2.5.1+rocm6.2", ">=2.6", False),
        # nightlies and pre-releases count as their release
        ("2.7.0.dev20250306+rocm6.3", ">=2.7", True),
        ("2.7.0.dev20250306+rocm6.3", "<2.7", False),
        ("2.7.0.dev20250306+rocm6.3", "==2.7.*", True),
        ("2.10.0a0+rocm7.10.0a20251120", ">=2.10", True),
        ("2.6.0+rocm6.4.1.git1ded221d", "~=2.6.0", True),
        # a specifier naming a pre-release compares the full version: nightlies can be told apart
        ("2.7.0.dev20250306+rocm6.3", ">=2.7.0.dev20250310", False),
        ("2.7.0.dev20250312+rocm6.3", ">=2.7.0.dev20250310", True),
        # ROCm versions as torch and HIP report them
        ("6.0.3", ">=6.1", False),
        ("6.2.4", ">=6.1,<6.3", True),
        ("6.2.41134-65d174c3e", ">=6.2", True),
        ("7.10.0a20251120", ">=7.10", True),
        ("garbage", ">=1", False),
    ],
)
def test_satisfies(version, spec, ok):
    assert satisfies(SpecifierSet(spec), version) is ok


# -- validation -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "args", "kwargs", "fragment"),
    [
        ("gfx", (), {}, "needs at least one architecture pattern"),
        ("gfx", ("gfx11OO",), {}, "'gfx11OO'"),
        ("gfx", ("rdna9",), {}, "rdna9"),
        ("gfx", ("gfx1100",), {"reason": "x"}, "wrong arguments"),
        ("gfx", (1100,), {}, "must be a string"),
        ("gpus", (), {}, "wrong arguments"),
        ("gpus", (0,), {}, "bad GPU count 0"),
        ("gpus", ("2",), {}, "bad GPU count '2'"),
        ("gpus", (1, 2), {}, "signature is gpus(n)"),
        ("gpu", (1,), {}, "wrong arguments"),
        ("skip_gfx", ("gfx1100",), {"reason": 3}, "reason must be a string"),
        ("xfail_gfx", ("gfx1100",), {"strict": "yes"}, "strict must be True or False"),
        ("rocm_version", ("6.1",), {}, "did you mean '>=6.1'"),
        ("torch_version", (">=two",), {}, "bad version specifier '>=two'"),
        ("torch_version", (2.6,), {}, "bad version specifier 2.6"),
        ("min_vram", ("lots",), {}, "bad size 'lots'"),
        ("requires", ("bits and bytes",), {}, "bad requirement 'bits and bytes'"),
        ("feature", ("",), {}, "bad feature name"),
    ],
)
def test_bad_marker_arguments_name_the_value(name, args, kwargs, fragment):
    with pytest.raises(MarkerError) as info:
        parse_mark(name, args, kwargs)
    message = str(info.value)
    assert fragment in message
    assert message.startswith(f"{name}(")  # names the marker as written


def test_every_marker_is_spec_parser_and_decision_together():
    assert list(markers.SPECS) == [
        "rocm_gpu",
        "rocm_gpus",
        "rocm_backend",
        "rocm_gfx",
        "rocm_skip_gfx",
        "rocm_xfail_gfx",
        "rocm_version",
        "rocm_torch_version",
        "rocm_min_vram",
        "rocm_requires",
        "rocm_feature",
        "rocm_tolerance",
    ]
    for name, spec in markers.SPECS.items():
        assert spec.name == name and callable(spec.parse) and callable(spec.decide) and spec.help
        assert name.startswith("rocm_")  # the prefix is the scheme: a canonical name is ours
    no_env = {"rocm_requires", "rocm_feature", "rocm_tolerance"}
    assert no_env | markers.ENV_NAMES == markers.NAMES and not no_env & markers.ENV_NAMES


def test_the_short_names_alias_the_canonical_ones():
    assert markers.ALIASES == {
        "gpu": "rocm_gpu",
        "gpus": "rocm_gpus",
        "rocm": "rocm_backend",
        "gfx": "rocm_gfx",
        "skip_gfx": "rocm_skip_gfx",
        "xfail_gfx": "rocm_xfail_gfx",
        "torch_version": "rocm_torch_version",
        "min_vram": "rocm_min_vram",
        "requires": "rocm_requires",
        "feature": "rocm_feature",
        "tolerance": "rocm_tolerance",
    }
    # parsed through an alias: the canonical name, the text as written
    parsed = parse_mark("gpus", (2,), {})
    assert (parsed.name, parsed.text) == ("rocm_gpus", "gpus(2)")


def test_what_the_project_registers_is_its_own_and_the_plugins_lines_are_not():
    lines = [
        "gpu(index): the project's own (a device index)",
        "tolerance: from pytest-tolerance",
        "rocm_gpu: run only where an accelerator is present. (pytest-rocm)",
        "requires(spec): short alias of rocm_requires ... (pytest-rocm)",
        "slow",
    ]
    owned = markers.owned_names(lines)
    assert owned == {"gpu", "tolerance", "slow"}
    names = markers.active_names(True, owned)
    assert "gpu" not in names and "tolerance" not in names  # the project's: never read
    assert names["requires"] == "rocm_requires" and names["rocm_gpu"] == "rocm_gpu"
    assert set(markers.active_names(False, ())) == set(markers.SPECS)  # the switch: canonical only


def test_a_bad_alias_says_how_a_project_steps_aside():
    with pytest.raises(MarkerError, match=r"gpu\(0\): wrong arguments .* signature is gpu \(if gpu is your"):
        parse_mark("gpu", (0,), {})
    with pytest.raises(MarkerError) as info:
        parse_mark("rocm_gpu", (0,), {})
    assert "rocm_short_markers" not in str(info.value)  # a canonical name is the plugin's: no hint


def test_evaluate_runs_each_markers_own_decision():
    """evaluate() asks each marker's spec; markers that need no environment decide without one."""
    lookup = markers.library_lookup(None, lambda d: "1.0")
    parsed = [parse_mark("rocm_feature", ("ops/x",), {}), parse_mark("requires", ("foo>=2",), {})]
    assert markers.evaluate(parsed, None, lookup).skip == "needs foo>=2, this is foo 1.0"
    assert markers.SPECS["rocm_requires"].decide(parsed[1].args, markers.Context(None, lookup)).skip is not None
    with pytest.raises(ValueError, match="needs the environment"):
        markers.evaluate([parse_mark("gpu", (), {})], None, lookup)


def test_signatures_are_registered_as_designed():
    sigs = {name: spec.signature for name, spec in markers.SPECS.items()}
    assert sigs["rocm_gpu"] == "rocm_gpu"
    assert sigs["rocm_gpus"] == "rocm_gpus(n)"
    assert sigs["rocm_gfx"] == "rocm_gfx(*patterns)"
    assert sigs["rocm_skip_gfx"] == "rocm_skip_gfx(*patterns, reason=None)"
    assert sigs["rocm_xfail_gfx"] == "rocm_xfail_gfx(*patterns, reason=None, strict=None)"
    assert sigs["rocm_min_vram"] == "rocm_min_vram(size)"
    assert sigs["rocm_requires"] == "rocm_requires(spec)"
    assert markers.SPECS["rocm_gpus"].signature_as("gpus") == "gpus(n)"


# -- evaluation: reasons name the observed fact ------------------------------------------------
def test_gfx_reason_names_need_and_device():
    d = decide("rx7900xtx_rocm6", "gfx", "gfx942")
    assert d.skip == "needs gfx942 (cdna3), device 0 is gfx1100 (rdna3)"
    assert decide("rx7900xtx_rocm6", "gfx", "gfx942", "rdna3").skip is None


def test_gfx_reason_shows_silicon_under_override():
    d = decide("rx6700xt_override", "gfx", "gfx1031")
    assert d.skip == (
        "needs gfx1031 (rdna2), device 0 is gfx1030 (rdna2) (silicon gfx1031 through HSA_OVERRIDE_GFX_VERSION=10.3.0)"
    )


def test_gfx_matches_features_of_the_reported_arch():
    assert decide("mi300x_8", "gfx", "gfx942:xnack-").skip is None
    assert decide("mi300x_8", "gfx", "gfx942:xnack+").skip is not None


def test_version_reasons():
    assert decide("rx6800xt_igpu", "rocm_version", ">=6.2.1").skip == "needs ROCm >=6.2.1, this is 6.2"
    assert decide("rx6800xt_igpu", "torch_version", ">=2.6").skip == "needs torch >=2.6, this is 2.5.1+rocm6.2"
    assert decide("nvidia_cuda", "rocm_version", ">=6").skip == (
        "needs ROCm >=6, torch 2.6.0+cu124 has no ROCm runtime (backend cuda)"
    )


def test_version_of_a_nightly_environment():
    nightly = env("rx7900xtx_rocm6")
    nightly.torch = "2.7.0.dev20250306+rocm6.3"
    nightly.rocm = "6.3"
    choice = choose_device(nightly, Settings())
    lookup = markers.library_lookup(None, lambda d: None)
    run = markers.evaluate([parse_mark("torch_version", (">=2.7",), {})], choice, lookup)
    assert run.skip is None
    skip = markers.evaluate([parse_mark("torch_version", ("<2.7",), {})], choice, lookup)
    assert skip.skip == "needs torch <2.7, this is 2.7.0.dev20250306+rocm6.3"


def test_min_vram_reasons():
    assert decide("rx6700xt_override", "min_vram", "16GiB").skip == (
        "needs 16.0 GiB of GPU memory, device 0 has 12.0 GiB"
    )
    assert decide("mi300x_8", "min_vram", "16GiB").skip is None
    assert decide("cpu_only", "min_vram", 1).skip.startswith("needs 1 B of GPU memory, torch 2.6.0+cpu is a CPU build")


def test_gpus_count_and_gfx_filter():
    assert decide("mi300x_8", "gpus", 8).skip is None
    assert decide("mi210_4", "gpus", 8).skip == "needs 8 GPUs, found 4"
    two = Settings(gfx=("gfx1030",), gfx_source="--rocm-gfx")
    # the iGPU is a device, but not one of the architectures under test
    assert decide("rx6800xt_igpu", "gpus", 2, settings=two).skip == "needs 2 GPUs, found 1 matching gfx1030"
    assert decide("rx6800xt_igpu", "gpus", 2).skip is None


def test_forced_cpu_skips_device_markers_and_keeps_versions():
    cpu = Settings(device="cpu", device_source="--rocm-device")
    assert decide("mi300x_8", "gpu", settings=cpu).skip == (
        "needs a GPU, the device under test is the CPU (--rocm-device=cpu)"
    )
    assert decide("mi300x_8", "rocm", settings=cpu).skip.startswith(
        "needs the ROCm backend, the device under test is the CPU"
    )
    assert decide("mi300x_8", "gfx", "gfx942", settings=cpu).skip.startswith(
        "needs gfx942 (cdna3), the device under test"
    )
    assert decide("mi300x_8", "rocm_version", ">=6.2", settings=cpu).skip is None


def test_rocm_marker_on_other_backends():
    assert decide("nvidia_cuda", "rocm").skip == "needs the ROCm backend, this is cuda (torch 2.6.0+cu124)"
    assert decide("rx7900xtx_rocm6", "rocm").skip is None


def test_skip_and_xfail_gfx():
    skip = decide("rx6800xt_igpu", "skip_gfx", "rdna2", reason="MIOpen bug")
    assert skip.skip == "MIOpen bug (rdna2 matches: device 0 is gfx1030 (rdna2))"
    assert decide("mi300x_8", "skip_gfx", "rdna2").skip is None
    xfail = decide("mi300x_8", "xfail_gfx", "gfx942", reason="wrong numbers", strict=True)
    assert xfail.skip is None and xfail.xfail == ("wrong numbers (gfx942 matches: device 0 is gfx942 (cdna3))", True)
    assert decide("rx7900xtx_rocm6", "xfail_gfx", "gfx942").xfail is None
    # strict not given: None, so pytest's xfail_strict ini decides (as for its own xfail marker)
    assert decide("mi300x_8", "xfail_gfx", "gfx942").xfail == ("gfx942 matches: device 0 is gfx942 (cdna3)", None)
    assert decide("mi300x_8", "xfail_gfx", "gfx942", strict=False).xfail[1] is False
    # no device: nothing matches, the test runs (and its device fixture decides)
    assert decide("cpu_only", "skip_gfx", "gfx1100").skip is None


def test_requires_absent_is_not_installed_and_wrong_version_names_both():
    from pytest_rocm.report.outcomes import is_not_installed

    absent = decide("cpu_only", "requires", "bitsandbytes>=0.43")
    assert is_not_installed(absent.skip)
    assert absent.skip == "not installed: bitsandbytes (needs bitsandbytes>=0.43)"
    old = decide("cpu_only", "requires", "bitsandbytes>=0.43", installed=lambda d: "0.42.0")
    assert old.skip == "needs bitsandbytes>=0.43, this is bitsandbytes 0.42.0"
    assert decide("cpu_only", "requires", "bitsandbytes>=0.43", installed=lambda d: "0.45.0.dev0").skip is None
    # a requirement whose environment marker excludes this platform does not apply
    assert decide("cpu_only", "requires", "foo>=1; python_version < '3'").skip is None


def test_requires_follows_a_recorded_environment():
    recorded = {"flash_attn": "2.7.3", "bitsandbytes": None}
    lookup = markers.library_lookup(recorded, lambda dist: "9.9")
    assert lookup("flash-attn") == "2.7.3"  # names compare canonicalised
    assert lookup("bitsandbytes") is None  # recorded as absent there
    assert lookup("numpy") == "9.9"  # not recorded: this machine


def test_requires_says_which_environment_answered() -> None:
    """Issue 20: with --rocm-env a recording's "not installed" read as this machine's."""
    lookup = markers.library_lookup({"bitsandbytes": None, "peft": "0.7.1"}, lambda dist: "0.50.2", "mi210.json")
    choice = choose_device(env("cpu_only"), Settings())
    absent = markers.evaluate([parse_mark("rocm_requires", ("bitsandbytes>=0.45",), {})], choice, lookup).skip
    assert absent == (
        "not installed: bitsandbytes (needs bitsandbytes>=0.45; "
        "in the recorded environment mi210.json (installed here: 0.50.2))"
    )
    old = markers.evaluate([parse_mark("rocm_requires", ("peft>=0.10",), {})], choice, lookup).skip
    assert old == "needs peft>=0.10, this is peft 0.7.1 in the recorded environment mi210.json (installed here: 0.50.2)"
    here = markers.evaluate([parse_mark("rocm_requires", ("numpy>=99",), {})], choice, lookup).skip
    assert here == "needs numpy>=99, this is numpy 0.50.2"  # this machine answered: nothing added


def test_first_skip_wins_and_xfail_kept():
    choice = choose_device(env("mi300x_8"), Settings())
    lookup = markers.library_lookup(None, lambda d: None)
    parsed = [parse_mark("xfail_gfx", ("cdna3",), {}), parse_mark("min_vram", ("1TiB",), {})]
    decision = markers.evaluate(parsed, choice, lookup)
    assert decision.skip == "needs 1024.0 GiB of GPU memory, device 0 has 192.0 GiB"
    parsed = [parse_mark("xfail_gfx", ("cdna3",), {}), parse_mark("gpu", (), {})]
    assert markers.evaluate(parsed, choice, lookup).xfail is not None


def test_min_vram_on_an_apu_counts_what_it_can_allocate():
    """Issue 17: an APU's reported memory is its BIOS carve-out or its GTT pool depending on kernel and
    ROCm; HIP allocates from GTT, so a Strix Halo with a 512 MiB carve-out and 64 GiB of GTT has room."""
    gib = 1024**3
    apu = env("rx7900xtx_rocm6")
    device, gpu = apu.devices[0], apu.system.gpus[0]
    device.arch = device.gfx = device.hardware_gfx = "gfx1151"
    device.total_memory = gib // 2
    gpu.gfx, gpu.vram, gpu.gtt = "gfx1151", gib // 2, 64 * gib
    choice = choose_device(apu, Settings())
    lookup = markers.library_lookup(None, lambda d: None)
    assert markers.evaluate([parse_mark("min_vram", ("16GiB",), {})], choice, lookup).skip is None
    assert markers.evaluate([parse_mark("min_vram", ("100GiB",), {})], choice, lookup).skip == (
        "needs 100.0 GiB of GPU memory, device 0 has 64.0 GiB (an APU: its GTT pool of system memory)"
    )
    # the same numbers on a discrete card: its GTT is not device memory
    device.arch = device.gfx = device.hardware_gfx = gpu.gfx = "gfx1100"
    assert markers.evaluate([parse_mark("min_vram", ("16GiB",), {})], choose_device(apu, Settings()), lookup).skip == (
        "needs 16.0 GiB of GPU memory, device 0 has 512 MiB"
    )


# -- typed arguments: each marker's own frozen dataclass, parsed once ---------------------------
def test_each_marker_parses_into_its_own_typed_arguments() -> None:
    from packaging.specifiers import SpecifierSet

    from pytest_rocm.plugin.marks import FeatureName, GfxExpectation, GfxPatterns, GpuCount, ToleranceOverride
    from pytest_rocm.plugin.markspec import NoArgs
    from pytest_rocm.plugin.versions import MemorySize, Required, VersionSpec

    assert parse_mark("gpu", (), {}).args == NoArgs()
    assert parse_mark("gpus", (2,), {}).args == GpuCount(2)
    assert parse_mark("gfx", ("gfx942", "rdna3"), {}).args == GfxPatterns(("gfx942", "rdna3"))
    assert parse_mark("skip_gfx", ("gfx1030",), {"reason": "NaN"}).args == GfxExpectation(("gfx1030",), "NaN")
    xfail = parse_mark("xfail_gfx", ("rdna3",), {"reason": "drift", "strict": False}).args
    assert (xfail.patterns, xfail.reason, xfail.strict) == (("rdna3",), "drift", False)
    assert parse_mark("xfail_gfx", ("rdna3",), {}).args.strict is None  # pytest's xfail_strict decides
    assert parse_mark("feature", (" ops/x ",), {}).args == FeatureName("ops/x")
    assert parse_mark("tolerance", ("bf16",), {"rtol": 0.1}).args == ToleranceOverride("bfloat16", {"rtol": 0.1})
    assert parse_mark("rocm_version", (" >=6.1 ",), {}).args == VersionSpec(SpecifierSet(">=6.1"), ">=6.1")
    assert parse_mark("min_vram", ("16GiB",), {}).args == MemorySize(16 * 2**30)
    required = parse_mark("requires", ("bitsandbytes>=0.45",), {}).args
    assert isinstance(required, Required) and required.requirement.name == "bitsandbytes"
    with pytest.raises(AttributeError):  # frozen: parsed once, never changed
        xfail.reason = "other"
