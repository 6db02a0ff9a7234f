"""pytest_rocm.env.arch: gfx arithmetic, features, families, patterns, overrides (data-driven)."""

from __future__ import annotations

import json
import re
from importlib import resources

import pytest

from pytest_rocm.env import arch, overrides

THEROCK_PROJECTS = {"hipBLASLt", "hipSPARSELt", "composable_kernel", "rocWMMA", "hipTensor", "rccl"}


@pytest.mark.parametrize(
    ("value", "gfx"),
    [
        (110000, "gfx1100"),
        (90010, "gfx90a"),
        (100301, "gfx1031"),
        (90402, "gfx942"),
        (110501, "gfx1151"),
        (120001, "gfx1201"),
        (130000, "gfx1300"),  # unknown future value still decodes
        (90000, "gfx900"),
        (80003, "gfx803"),
        (90012, "gfx90c"),
    ],
)
def test_gfx_from_target_version(value: int, gfx: str) -> None:
    assert arch.gfx_from_target_version(value) == gfx
    # and back: the arithmetic is invertible for every well-formed name
    assert arch.target_version(gfx) == value


def test_rocm_smi_style_names_are_not_produced() -> None:
    # rocm_smi_lib prints gfx9010 / gfx11000 for these: the bug we must not copy
    assert arch.gfx_from_target_version(90010) != "gfx9010"
    assert arch.gfx_from_target_version(110000) != "gfx11000"


@pytest.mark.parametrize("value", [0, -1])
def test_gfx_from_target_version_rejects_no_gpu(value: int) -> None:
    with pytest.raises(ValueError, match="names no GPU"):
        arch.gfx_from_target_version(value)


@pytest.mark.parametrize(
    ("arch_name", "base", "features"),
    [
        ("gfx90a:sramecc+:xnack-", "gfx90a", {"sramecc": True, "xnack": False}),
        ("gfx942:sramecc+:xnack-", "gfx942", {"sramecc": True, "xnack": False}),
        ("gfx1010:xnack-", "gfx1010", {"xnack": False}),
        ("gfx1100", "gfx1100", {}),
        ("GFX1100 ", "gfx1100", {}),
        ("gfx90a:xnack", "gfx90a", {}),  # no setting: dropped
    ],
)
def test_split_arch(arch_name: str, base: str, features: dict[str, bool]) -> None:
    assert arch.split_arch(arch_name) == (base, features)


@pytest.mark.parametrize(
    ("gfx", "family"),
    [
        ("gfx900", "gcn5"),
        ("gfx906", "gcn5"),
        ("gfx908", "cdna1"),
        ("gfx90a", "cdna2"),
        ("gfx90a:sramecc+:xnack-", "cdna2"),
        ("gfx942", "cdna3"),
        ("gfx950", "cdna4"),
        ("gfx1010", "rdna1"),
        ("gfx1030", "rdna2"),
        ("gfx1036", "rdna2"),
        ("gfx1100", "rdna3"),
        ("gfx1103", "rdna3"),
        ("gfx1151", "rdna3.5"),
        ("gfx1201", "rdna4"),
        ("gfx1300", None),
        ("sm_90", None),
    ],
)
def test_family_of(gfx: str, family: str | None) -> None:
    assert arch.family_of(gfx) == family


def test_wave_size() -> None:
    assert arch.wave_size("gfx942") == 64
    assert arch.wave_size("gfx1100") == 32
    assert arch.wave_size("gfx1300") is None


@pytest.mark.parametrize(
    ("gfx", "override"),
    [
        ("gfx1031", "10.3.0"),
        ("gfx1032", "10.3.0"),
        ("gfx1036", "10.3.0"),
        ("gfx1101", "11.0.0"),
        ("gfx1102", "11.0.0"),
        ("gfx1030", None),  # a build target itself
        ("gfx1100", None),
        ("gfx942", None),
        ("gfx1300", None),
    ],
)
def test_override_for(gfx: str, override: str | None) -> None:
    assert arch.override_for(gfx) == override


def test_every_usual_override_names_a_known_family_sibling() -> None:
    # an override must point at a gfx of the same family that the data knows
    for gfx in arch.known_gfx():
        value = arch.override_for(gfx)
        if value is None:
            continue
        target = arch.parse_override(value)
        assert target in arch.known_gfx(), (gfx, value)
        assert arch.family_of(target) == arch.family_of(gfx), (gfx, value)
        assert target != gfx


@pytest.mark.parametrize(
    ("value", "gfx"),
    # scanf's %u skips white space (and takes a sign) before a number, so these are accepted
    [("10.3.0", "gfx1030"), ("11.0.0", "gfx1100"), ("9.0.10", "gfx90a"), (" 9.4.2", "gfx942"), ("11. 0.+1", "gfx1101")],
)
def test_parse_override(value: str, gfx: str) -> None:
    assert arch.parse_override(value) == gfx
    assert arch.parse_override(arch.override_string(gfx) or "") == gfx


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("10.3", "not major.minor.stepping"),
        ("9.0.a", "not major.minor.stepping"),
        ("gfx1030", "not major.minor.stepping"),
        ("", "not major.minor.stepping"),
        ("10.3.0.1", "has '.1' after the stepping"),
        ("0.0.0", "names no GPU architecture"),
        # what a CRLF .env file, a trailing space or a here-doc leaves: the runtime rejects these
        ("11.0.0\r", "has '\\r' after the stepping"),
        ("11.0.0\n", "has '\\n' after the stepping"),
        ("11.0.0 ", "has ' ' after the stepping"),
        ("64.0.0", "out of range"),
        ("-1.0.0", "out of range"),  # %u stores -1 as 4294967295
        ("11.256.0", "out of range"),
        ("11.16.0", "names no GPU architecture"),  # the runtime takes it, but it is no gfx name
        ("11 .0.0", "not major.minor.stepping"),  # the '.' is literal: no space before it
    ],
)
def test_parse_override_rejects_what_the_runtime_rejects(value: str, why: str) -> None:
    with pytest.raises(ValueError, match="HSA_OVERRIDE_GFX_VERSION") as info:
        arch.parse_override(value)
    assert why in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("value", "fields"),
    [("11.0.0", (11, 0, 0)), ("11.16.0", (11, 16, 0)), ("63.255.255", (63, 255, 255)), ("\t10.3.0", (10, 3, 0))],
)
def test_scan_override_is_the_runtime_reading(value: str, fields: tuple[int, int, int]) -> None:
    assert overrides.scan_override(value) == fields


def test_per_node_override_wins_over_the_global_one() -> None:
    variables = {"HSA_OVERRIDE_GFX_VERSION": "10.3.0", "HSA_OVERRIDE_GFX_VERSION_2": "11.0.0"}
    assert overrides.applying(variables, 2) == ("HSA_OVERRIDE_GFX_VERSION_2", "11.0.0")
    assert overrides.applying(variables, 1) == ("HSA_OVERRIDE_GFX_VERSION", "10.3.0")
    assert overrides.applying({}, 1) is None
    assert (
        overrides.set_overrides({**variables, "HIP_VISIBLE_DEVICES": "0", "HSA_OVERRIDE_GFX_VERSION_3": None})
        == variables
    )


def test_marketing_name() -> None:
    assert "7900 XTX" in (arch.marketing_name("gfx1100") or "")
    assert "MI300X" in (arch.marketing_name("gfx942:sramecc+:xnack-") or "")
    assert arch.marketing_name("gfx1300") is None


@pytest.mark.parametrize(
    ("pattern", "gfx", "expected"),
    [
        ("gfx1100", "gfx1100", True),
        ("gfx1100", "gfx1101", False),
        ("GFX1100", "gfx1100", True),
        ("gfx11*", "gfx1100", True),
        ("gfx11*", "gfx1151", True),
        ("gfx11*", "gfx1030", False),
        ("gfx9*", "gfx90a:sramecc+:xnack-", True),
        ("rdna3", "gfx1102", True),
        ("rdna3", "gfx1151", False),  # rdna3.5 is its own family
        ("rdna3.5", "gfx1151", True),
        ("cdna3", "gfx942:sramecc+:xnack-", True),
        ("cdna3", "gfx90a", False),
        ("gfx90a", "gfx90a:sramecc+:xnack-", True),
        ("gfx90a:xnack-", "gfx90a:sramecc+:xnack-", True),
        ("gfx90a:xnack+", "gfx90a:sramecc+:xnack-", False),
        ("sm_90", "sm_90", True),
        ("sm_8*", "sm_90", False),
    ],
)
def test_matches(pattern: str, gfx: str, expected: bool) -> None:
    assert arch.matches(pattern, gfx) is expected


@pytest.mark.parametrize("pattern", ["gfx1100", "gfx11*", "rdna3", "cdna3", "sm_90", "gfx90a:xnack-", " RDNA2 "])
def test_validate_pattern_accepts(pattern: str) -> None:
    assert arch.validate_pattern(pattern) == pattern.strip().lower()


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("gfx11OO", "bad architecture pattern 'gfx11OO'"),
        ("rdna9", "bad architecture pattern 'rdna9'"),
        ("gfx1300", "unknown gfx 'gfx1300'"),
        ("gfx7*", "matches no known gfx"),
        ("*", "must start with gfx or sm_"),
        ("", "empty"),
        ("navi31", "bad architecture pattern"),
    ],
)
def test_validate_pattern_rejects(pattern: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)) as info:
        arch.validate_pattern(pattern)
    assert "\n" not in str(info.value)


def test_data_file_is_consistent() -> None:
    data = json.loads(resources.files("pytest_rocm").joinpath("data", "gfx.json").read_text())
    for gfx, entry in data["gfx"].items():
        assert arch.is_gfx(gfx), gfx
        assert entry["family"] in data["families"], gfx
        # names may be empty for a target with no product announced (gfx1310)
        assert isinstance(entry["names"], list), gfx
        assert set(entry.get("therock_excludes", [])) <= THEROCK_PROJECTS, gfx
        # the name round-trips through the KFD arithmetic
        assert arch.gfx_from_target_version(arch.target_version(gfx)) == gfx
    for generic, members in data["generic"].items():
        assert generic.endswith("-generic") and not arch.is_gfx(generic), generic
        assert members and all(m in data["gfx"] for m in members), generic
    # each gfx is in at most one generic target
    listed = [m for members in data["generic"].values() for m in members]
    assert len(listed) == len(set(listed))


def test_describe() -> None:
    assert arch.describe("gfx1100") == "gfx1100 (rdna3)"
    assert arch.describe("gfx1300") == "gfx1300"


@pytest.mark.parametrize("name", ["gfx١١00", "gfx11٠0", "gfx٩0a"])
def test_names_with_other_scripts_digits_are_not_architectures(name: str) -> None:
    # Python's \d and int() take Arabic-Indic digits; the runtime prints ASCII names only
    assert not arch.is_gfx(name)
