"""LLVM generic targets, the new gfx targets, rocminfo's extra ISAs (issue 17).

Member lists: LLVM AMDGPUUsage "AMDGPU Generic Processors" (llvmorg-20.1.0); the rocminfo listings
are real captures in tests/data/detect (each file's first line names its source).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fake_machines import DETECT, sample

from pytest_rocm.env import arch
from pytest_rocm.env.rocminfo import parse_rocminfo


def _rocminfo(name: str) -> str:
    return sample(name, DETECT).split("\n", 1)[1]


@pytest.mark.parametrize(
    ("generic", "members"),
    [
        ("gfx9-generic", ["gfx900", "gfx902", "gfx904", "gfx906", "gfx909", "gfx90c"]),
        ("gfx9-4-generic", ["gfx940", "gfx941", "gfx942", "gfx950"]),
        ("gfx10-1-generic", ["gfx1010", "gfx1011", "gfx1012", "gfx1013"]),
        ("gfx10-3-generic", ["gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036"]),
        ("gfx11-generic", ["gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153"]),
        ("gfx12-generic", ["gfx1200", "gfx1201"]),
        ("gfx12-5-generic", ["gfx1250", "gfx1251"]),
    ],
)
def test_generic_members_are_llvms(generic: str, members: list[str]) -> None:
    assert arch.generic_targets()[generic] == members
    assert all(arch.generic_of(m) == generic for m in members)
    assert arch.validate_pattern(generic) == generic
    assert all(arch.matches(generic, m) for m in members)
    assert arch.matches(generic, generic)


@pytest.mark.parametrize(
    ("pattern", "gfx", "expected"),
    [
        ("gfx11-generic", "gfx1151", True),
        ("gfx11-generic", "gfx1103:xnack-", True),
        ("gfx11-generic", "gfx1170", False),  # a gfx11 part of gfx11-7-generic: membership, not digits
        ("gfx11-generic", "gfx1200", False),
        ("gfx9-4-generic", "gfx942:sramecc+:xnack-", True),
        ("gfx9-generic", "gfx90a", False),  # gfx90a is in no generic target
        ("GFX12-GENERIC", "gfx1201", True),
    ],
)
def test_generic_patterns_match_by_membership(pattern: str, gfx: str, expected: bool) -> None:
    assert arch.matches(pattern, gfx) is expected


@pytest.mark.parametrize(
    ("pattern", "message"),
    [("gfx13-generic", "unknown generic target 'gfx13-generic'"), ("gfx11-generc", "bad architecture pattern")],
)
def test_unknown_generic_targets_are_rejected(pattern: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        arch.validate_pattern(pattern)


@pytest.mark.parametrize(
    ("gfx", "version", "family"),
    [
        ("gfx1250", 120500, "cdna5"),
        ("gfx1251", 120501, "cdna5"),
        ("gfx125f", 120515, "cdna5"),
        ("gfx1170", 110700, "gfx11.7"),
        ("gfx1310", 130100, "gfx13"),
    ],
)
def test_new_targets(gfx: str, version: int, family: str) -> None:
    assert arch.target_version(gfx) == version and arch.gfx_from_target_version(version) == gfx
    assert arch.family_of(gfx) == family and arch.wave_size(gfx) == 32
    assert arch.validate_pattern(gfx) == gfx


@pytest.mark.parametrize(
    ("gfx", "name"),
    [
        ("gfx1102", "RX 7700S/7600S"),
        ("gfx1102", "PRO W7600/W7500"),
        ("gfx1103", "740M"),
        ("gfx1103", "Hawk Point"),
        ("gfx1153", "Radeon 820M"),
        ("gfx1036", "Mendocino"),
        ("gfx803", "Fiji"),
        ("gfx1250", "MI455X"),
    ],
)
def test_marketing_names(gfx: str, name: str) -> None:
    assert name in (arch.marketing_name(gfx) or "")


@pytest.mark.parametrize(
    ("hardware", "target", "kinship"),
    [
        ("gfx1151", "gfx1100", "same generic target gfx11-generic"),
        ("gfx1103", "gfx1100", "same family rdna3"),
        ("gfx1031", "gfx1030", "same family rdna2"),
        ("gfx1170", "gfx1100", None),
        ("gfx1201", "gfx1030", None),
        ("gfx1010", "gfx1030", None),
        ("gfx90a", "gfx942", None),  # gfx90a is in no generic target, and cdna2 is not cdna3
    ],
)
def test_override_kinship(hardware: str, target: str, kinship: str | None) -> None:
    assert arch.override_kinship(hardware, target) == kinship


def test_rocminfo_generic_isa_of_a_gfx1150() -> None:
    """lmstudio-ai/lmstudio-bug-tracker#883: the gfx1150 agent's ISA 2 is gfx11-generic."""
    (agent,) = parse_rocminfo(_rocminfo("gfx1150_generic_isa_lmstudio-883_EXCERPT.txt"))
    assert (agent.number, agent.name, agent.isas, agent.generic_isas) == (
        2,
        "gfx1150",
        ["gfx11-generic"],
        ["gfx11-generic"],
    )
    assert all(arch.matches(isa, agent.name) for isa in agent.generic_isas)


@pytest.mark.parametrize(
    ("name", "gpus"),
    [
        ("gfx1100_rx7900xtx_rocm6.0.2.txt", [("gfx1100", 1, ["gfx1100"])]),
        ("gfx1030_rx6800xt_plus_gfx1036_igpu_rocm5.6.txt", [("gfx1030", 1, ["gfx1030"]), ("gfx1036", 2, ["gfx1036"])]),
        ("gfx942_mi300x_8gpu_rocm6.2.3_EXCERPT.txt", [("gfx942", 2, ["gfx942"])]),
    ],
)
def test_rocminfo_agents_of_older_runtimes(name: str, gpus: list[tuple[str, int, list[str]]]) -> None:
    agents = parse_rocminfo(_rocminfo(name))
    found = [(a.name, a.node, a.isas) for a in agents if a.isas]
    assert found[: len(gpus)] == gpus
    assert all(not a.errors for a in agents)
    # CPU agents list no ISA
    assert any(a.device_type == "CPU" and not a.isas for a in agents)


@pytest.mark.parametrize(
    ("isa", "parsed"),
    [
        ("amdgcn-amd-amdhsa--gfx11-generic", ("gfx11-generic", {})),
        ("amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-", ("gfx942", {"sramecc": True, "xnack": False})),
        ("amdgcn-amd-amdhsa--gfx12-5-generic:sramecc+", ("gfx12-5-generic", {"sramecc": True})),
    ],
)
def test_parse_isa(isa: str, parsed: tuple[str, dict[str, bool]]) -> None:
    assert arch.parse_isa(isa) == parsed


@pytest.mark.parametrize("isa", ["gfx1100", "amdgcn-amd-amdhsa-gfx1100", "x86_64-unknown-linux--gfx1100", ""])
def test_parse_isa_rejects_other_text(isa: str) -> None:
    with pytest.raises(ValueError, match="not an amdgcn ISA name"):
        arch.parse_isa(isa)


def test_rocminfo_names_a_malformed_isa() -> None:
    text = "Agent 2\n  Name:  gfx1100\n  ISA Info:\n    ISA 1\n      Name:  amdgcn-amd-amdhsa--gfx11@0\n"
    (agent,) = parse_rocminfo(text)
    assert agent.isas == [] and agent.errors and "gfx11@0" in agent.errors[0]


def test_therock_excludes_libraries_per_gfx() -> None:
    """TheRock cmake/therock_amdgpu_targets.cmake: no RCCL for gfx1103/1150/1152/1153, no hipBLASLt
    for RDNA1/2 and gfx906/90c."""
    for gfx in ("gfx1103", "gfx1150", "gfx1152", "gfx1153"):
        assert "rccl" in arch.therock_excludes(gfx), gfx
    for gfx in ("gfx906", "gfx90c", "gfx1010", "gfx1030", "gfx1036"):
        assert {"hipBLASLt", "composable_kernel", "rocWMMA"} <= set(arch.therock_excludes(gfx)), gfx
    assert "rccl" not in arch.therock_excludes("gfx1151")
    assert arch.therock_excludes("gfx942") == [] and arch.therock_excludes("gfx1300") == []


def test_a_generic_target_in_a_marker_matches_by_membership(pytester: pytest.Pytester) -> None:
    """gfx("gfx11-generic") is accepted and decided from the member list: a gfx1151 runs it."""
    import json

    from fake_machines import ENVS

    env = json.loads((ENVS / "rx7900xtx_rocm6.json").read_text())
    env["devices"][0].update(arch="gfx1151", gfx="gfx1151", hardware_gfx="gfx1151")
    env["system"]["gpus"][0].update(gfx="gfx1151", gfx_target_version=110501)
    pytester.makefile(".json", env=json.dumps(env))
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.rocm_gfx("gfx11-generic")
        def test_member(): pass

        @pytest.mark.rocm_gfx("gfx12-generic")
        def test_not_member(): pass
        """
    )
    result = pytester.runpytest("-p", "no:randomly", "--rocm-env", "env.json", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*needs gfx12-generic, device 0 is gfx1151 (rdna3.5)*"])


# -- generic targets with target-ID features (LLVM AMDGPUUsage "AMDGPU Generic Processors":
#    gfx9-generic supports xnack, gfx9-4-generic xnack and sramecc, gfx10-1-generic xnack) --------
@pytest.mark.parametrize(
    ("pattern", "gfx", "expected"),
    [
        ("gfx9-4-generic:sramecc+:xnack-", "gfx942:sramecc+:xnack-", True),
        ("gfx9-4-generic:sramecc+:xnack-", "gfx942:sramecc+:xnack+", False),  # the setting differs
        ("gfx9-4-generic:sramecc+", "gfx950:sramecc+:xnack-", True),
        ("gfx9-4-generic:sramecc+", "gfx90a:sramecc+:xnack-", False),  # not a member
        ("gfx9-generic:xnack+", "gfx906:xnack+", True),
        ("gfx9-generic:xnack+", "gfx906:xnack-", False),
        ("gfx10-1-generic:xnack-", "gfx1011:xnack-", True),
    ],
)
def test_generic_targets_with_features_match_members_with_those_settings(
    pattern: str, gfx: str, expected: bool
) -> None:
    assert arch.validate_pattern(pattern) == pattern
    assert arch.matches(pattern, gfx) is expected


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("gfx11-generic:xnack+", "LLVM lists no xnack feature for gfx11-generic (it takes no target-ID feature)"),
        ("gfx9-generic:sramecc+", "LLVM lists no sramecc feature for gfx9-generic (it takes xnack)"),
        ("gfx9-4-generic:sramecc", "a feature is written name+ or name-"),
        ("gfx12-5-generic:xnack-", "no xnack feature for gfx12-5-generic"),  # no LLVM row yet: none allowed
    ],
)
def test_generic_targets_refuse_features_llvm_does_not_list(pattern: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        arch.validate_pattern(pattern)


def test_generic_feature_lists_cover_every_generic_target() -> None:
    listed = {name for name in arch.generic_targets()}
    data = {k for k in arch._data()["generic_features"] if not k.startswith("_")}
    assert listed == data


def test_a_generic_target_with_features_is_a_marker_that_selects(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.rocm_gfx("gfx9-4-generic:sramecc+:xnack-")
        def test_mi300(): pass

        @pytest.mark.rocm_gfx("gfx9-4-generic:xnack+")
        def test_xnack_on(): pass
        """
    )
    envs = Path(__file__).parents[1] / "data" / "envs"
    result = pytester.runpytest(f"--rocm-env={envs / 'mi300x_8.json'}", "-p", "no:randomly", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
