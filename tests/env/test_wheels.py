"""pytest_rocm.env.wheels: published torch/ROCm pairs, AMD's own builds, the gfx of each wheel.

Version strings and arch lists are the real ones of tests/data/detect/torch_strings.json (each
entry names its source).
"""

from __future__ import annotations

import json

import pytest
from fake_machines import DETECT
from packaging.version import Version

from pytest_rocm._resources import load_json
from pytest_rocm.env import arch, wheels


def _strings() -> list[dict[str, object]]:
    entries: list[dict[str, object]] = json.loads((DETECT / "torch_strings.json").read_text())["entries"]
    return entries


def test_pairs_of_the_newest_releases() -> None:
    pairs = wheels.published_pairs()
    assert pairs["2.12"] == ["7.1", "7.2"] and pairs["2.13"] == ["7.1", "7.2"]
    assert pairs["2.14"] == ["7.2", "7.14"]
    # dropped for lack of evidence; 2.3 on rocm5.7 is back: PyTorch's rocm5.7 index has 2.3.1
    assert "5.0" not in pairs["1.12"] and "5.5" not in pairs["2.1"] and "5.7" in pairs["2.3"]


def test_every_pair_and_row_names_a_source() -> None:
    data = load_json("torch_wheels.json")
    for minor, entry in data["pairs"]["releases"].items():
        assert entry["rocm"] and entry["sources"], minor
    for row in data["wheel_gfx"]["list"]:
        assert row["sources"] and all(arch.is_gfx(g) for g in row["gfx"]), row
    for build in data["amd_builds"]["list"]:
        assert build["sources"], build["id"]
        for example in build["examples"]:
            if "+" in example and not example.startswith("+"):
                assert wheels.amd_build(example) is not None, example
    assert "_date" in data


@pytest.mark.parametrize(
    ("version", "kind"),
    [
        ("2.12.0+rocm7.14.0", "amd-release"),  # ROCm/pytorch#3518
        ("2.9.0+rocmsdk20251116", "amd-windows-sdk"),  # ROCm/ROCm#5834
        ("2.7.0a0+rocm7.0.0rc20250717", "therock-nightly"),  # ROCm/TheRock#1066
        ("2.10.0a0+rocm7.10.0a20251120", "therock-nightly"),
        ("2.14.0+rocm7.15.0a20260718", "therock-nightly"),
        ("2.6.0+rocm6.4.1.git1ded221d", "amd-repo-radeon"),
        ("2.13.0+rocm7.13.0", "amd-release"),
        ("2.8.0+rocm6.4", None),  # PyTorch's own wheel (facebookresearch/xformers#1314)
        ("2.14.0+rocm7.2", None),
        ("2.12.0+cu130", None),
        ("2.7.0.dev20250301+rocm6.2.4", None),  # a PyTorch nightly: the doctor's own rule
    ],
)
def test_amd_builds(version: str, kind: str | None) -> None:
    build = wheels.amd_build(version)
    assert (build.id if build else None) == kind


@pytest.mark.parametrize(
    ("version", "kind"),
    [
        ("2.13.0+rocm10.0.0", "amd"),  # AMD's stable whl-next index: no listed version decides
        ("2.15.0+rocm11.2.0", "amd"),  # nor for the next one
        ("2.9.1+rocm7.2.1", "amd"),  # repo.radeon.com manylinux
        ("2.8.0+rocm7.1.0.lw.git4f3e6c21", "amd"),
        ("2.6.0+rocm6.2.4", "pytorch-release"),  # a patch-release index that is PyTorch's own
        ("2.3.1+rocm5.7", "pytorch-release"),
        ("2.14.0+rocm7.14", "pytorch-release"),
        ("2.7.0.dev20250301+rocm6.2.4", "pytorch-nightly"),
        ("2.5.1+rocm6.2.custom", "other"),
        ("2.6.0+cu124", None),
        ("2.6.0", None),
    ],
)
def test_build_origin_by_the_shape_of_the_version(version: str, kind: str | None) -> None:
    origin = wheels.build_origin(version)
    assert (origin.kind if origin else None) == kind


def test_the_real_amd_strings_of_the_fixtures_are_recognised() -> None:
    versions = {str(e["torch_version"]) for e in _strings() if "torch_version" in e}
    for version in ("2.12.0+rocm7.14.0", "2.9.0+rocmsdk20251116", "2.7.0a0+rocm7.0.0rc20250717"):
        assert version in versions
        assert wheels.amd_build(version) is not None, version


@pytest.mark.parametrize(
    ("torch", "index", "has", "lacks"),
    [
        ("2.7.1", "rocm6.2.4", ["gfx1100", "gfx1201", "gfx942"], ["gfx1151", "gfx950", "gfx1103"]),
        ("2.9.1", "https://download.pytorch.org/whl/rocm6.4", ["gfx1030"], ["gfx1151", "gfx1031"]),
        ("2.10.0", "rocm7.1", ["gfx950", "gfx1150", "gfx1151"], ["gfx1103", "gfx1152"]),
        ("2.12.0", "rocm7.2", ["gfx1151"], ["gfx1103"]),
        ("2.13.0", "rocm7.2", ["gfx1103", "gfx1151"], ["gfx1152", "gfx1153", "gfx1250", "gfx1036"]),
        ("2.5.1", "rocm6.2", ["gfx1100", "gfx942"], ["gfx1101", "gfx1201"]),
    ],
)
def test_wheel_gfx(torch: str, index: str, has: list[str], lacks: list[str]) -> None:
    listed = wheels.wheel_gfx(torch, index)
    assert listed is not None
    assert set(has) <= set(listed) and not set(lacks) & set(listed)


def test_wheel_gfx_agrees_with_real_arch_lists() -> None:
    """get_arch_list() of real pytorch.org wheels (astral-sh/uv#14086) is what the table says."""
    compared = 0
    for entry in _strings():
        version, arch_list = entry.get("torch_version"), entry.get("arch_list")
        if not isinstance(version, str) or not isinstance(arch_list, list) or "+rocm" not in version:
            continue
        index = "rocm" + version.split("+rocm", 1)[1]
        assert sorted(wheels.wheel_gfx(version, index) or []) == sorted(arch_list), version
        compared += 1
    assert compared >= 2


@pytest.mark.parametrize(
    ("torch", "index"), [("2.14.0", "rocm7.14"), ("2.0.1", "rocm5.4.2"), ("banana", "rocm7.2"), ("2.13.0", "cu130")]
)
def test_wheel_gfx_unknown_is_none(torch: str, index: str) -> None:
    assert wheels.wheel_gfx(torch, index) is None


def carrying(gfx: str) -> list[tuple[str, str]]:
    """(torch minor, index) of the published pairs whose wheels have ``gfx``'s own kernels, newest first."""
    found = [
        (minor, f"rocm{rocm}")
        for minor, rocms in wheels.published_pairs().items()
        for rocm in rocms
        if wheels.kernels_for(wheels.wheel_gfx(f"{minor}.0", f"rocm{rocm}"), gfx) == "yes"
    ]
    return sorted(found, key=lambda p: (Version(p[0]), Version(p[1].removeprefix("rocm"))), reverse=True)


def test_no_pytorch_wheel_carries_these() -> None:
    carried = wheels.known_gfx_everywhere()
    for gfx in ("gfx1152", "gfx1153", "gfx1250", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036"):
        assert gfx not in carried, gfx
    assert carrying("gfx1152") == []
    assert wheels.amd_indexes_for("gfx1152") == [("https://repo.amd.com/rocm/whl-multi-arch/", "torch[device-all]")]


def test_the_wheels_that_carry_a_gfx() -> None:
    found = carrying("gfx1151")
    assert found[0] == ("2.14", "rocm7.2")
    assert ("2.10", "rocm7.0") in found and all(index not in ("rocm6.4", "rocm6.3") for _, index in found)
    assert carrying("gfx1103") == [("2.14", "rocm7.2"), ("2.13", "rocm7.2"), ("2.13", "rocm7.1")]


@pytest.mark.parametrize(
    ("listed", "gfx", "verdict"),
    [
        (["gfx1030", "gfx1100"], "gfx1100", "yes"),
        (["gfx90a", "gfx942"], "gfx90a:xnack-", "yes"),  # target features do not change the kernels
        (["gfx1030"], "gfx1031", "override"),  # RDNA2 consumer cards run gfx1030's with 10.3.0
        (["gfx1100"], "gfx1031", "no"),
        (["gfx942"], "gfx1151", "no"),
        (None, "gfx1100", None),  # a wheel the table does not know
    ],
)
def test_kernels_for_is_the_one_rule(listed: list[str] | None, gfx: str, verdict: str | None) -> None:
    assert wheels.kernels_for(listed, gfx) == verdict
