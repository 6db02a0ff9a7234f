"""Knowledge that depends on a version or a dispute: a space in the install path (ROCm < 7),
gfx906's rocBLAS (ROCm >= 6.4), WSL's DXG variable (7.0 to 7.12), gfx13's wave sizes, names the
sources disagree on, and the override reported for gfx1152. Sources are in the data files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_rocm.doctor.build import check_gfx_in_build
from pytest_rocm.doctor.checks import diagnose
from pytest_rocm.doctor.machine import check_wsl
from pytest_rocm.doctor.model import Extras
from pytest_rocm.doctor.probe import probe_extras
from pytest_rocm.doctor.stack import check_install_path, check_rocblas_targets
from pytest_rocm.env import arch
from pytest_rocm.env.model import Environment
from pytest_rocm.env.seam import Seam

ENVS = Path(__file__).parents[1] / "data" / "envs"


def _env(torch: str = "2.6.0+rocm6.2.4", rocm: str | None = "6.2.4", gfx: str = "gfx1100", **edit: Any) -> Environment:
    data = json.loads((ENVS / "rx7900xtx_rocm6.json").read_text())
    data["torch"], data["rocm"] = torch, rocm
    for device in data["devices"]:
        device.update(arch=gfx, gfx=gfx, hardware_gfx=gfx, in_build=gfx in edit.get("arch_list", data["arch_list"]))
    for gpu in data["system"]["gpus"]:
        gpu["gfx"] = gfx
    data["system"].update(edit.pop("system", {}))
    data.update(edit)
    return Environment.from_dict(data)


SPACED = {"torch": "/home/ana/My Projects/venv/lib/python3.12/site-packages/torch", "the Python environment": "/usr"}


@pytest.mark.parametrize(
    ("torch", "rocm", "paths", "status"),
    [
        ("2.6.0+rocm6.2.4", "6.2.4", SPACED, "fail"),
        ("2.10.0+rocm7.1", "7.1", SPACED, "ok"),  # ROCm 7.0 fixed it
        ("2.6.0+rocm6.2.4", "6.2.4", {"torch": "/opt/venv/torch"}, "ok"),
        ("2.6.0+rocm6.2.4", "6.2.4", {}, "skipped"),  # not probed: a recorded environment
    ],
)
def test_a_space_in_the_install_path_breaks_rocm_6(torch: str, rocm: str, paths: dict[str, str], status: str) -> None:
    check = check_install_path(_env(torch, rocm), Extras(install_paths=paths))
    assert check.status == status, check
    if status == "fail":
        assert "'/home/ana/My Projects/venv" in check.evidence and "no kernel image is available" in check.evidence
        assert check.fix and "without spaces" in check.fix


def test_the_probe_reads_where_torch_and_the_environment_live(tmp_path: Path) -> None:
    class Spaced(Seam):
        def module_dir(self, name: str) -> str | None:
            return "/srv/GPU tests/venv/lib/torch" if name == "torch" else None

        def python_prefix(self) -> str:
            return "/srv/GPU tests/venv"

    env = _env()
    extras = probe_extras(Spaced(sysroot=tmp_path, environ={}), env)
    assert extras.install_paths == {
        "torch": "/srv/GPU tests/venv/lib/torch",
        "the Python environment": "/srv/GPU tests/venv",
    }
    checks = {c.id: c for c in diagnose(env, extras)}
    assert checks["install-path"].status == "fail"


@pytest.mark.parametrize(
    ("gfx", "torch", "rocm", "status"),
    [
        ("gfx906", "2.8.0+rocm6.4", "6.4", "fail"),  # ROCm/ROCm#4625
        ("gfx906", "2.10.0+rocm7.1", "7.1", "fail"),
        ("gfx906", "2.7.1+rocm6.3", "6.3", "ok"),  # the last ROCm with the files
        ("gfx90a", "2.8.0+rocm6.4", "6.4", "ok"),
    ],
)
def test_gfx906_has_no_rocblas_kernels_from_rocm_6_4(gfx: str, torch: str, rocm: str, status: str) -> None:
    check = check_rocblas_targets(_env(torch, rocm, gfx), Extras())
    assert check.status == status, check
    if status == "fail":
        assert "TensileLibrary.dat: No such file or directory for GPU arch : gfx906" in check.evidence
        assert check.fix and "rocm6.3" in check.fix


@pytest.mark.parametrize(
    ("rocm", "advised"),
    [
        ("7.2.0", "ROCm 7.2.0 also needs export HSA_ENABLE_DXG_DETECTION=1"),
        ("7.13.0", None),
        ("6.4.1", None),
        (None, "with ROCm 7.0 up to the release before 7.13"),
    ],
)
def test_wsl_dxg_detection_is_advised_only_where_it_is_needed(rocm: str | None, advised: str | None) -> None:
    env = _env(torch="2.6.0+rocm6.2.4", rocm=None, system={"wsl": True, "rocm_version": rocm})
    check = check_wsl(env, Extras())
    assert check.status == "warn" and check.fix
    if advised is None:
        assert "HSA_ENABLE_DXG_DETECTION" not in check.fix
    else:
        assert advised in check.fix


def test_gfx13_supports_both_wave_sizes_and_gfx1250_one() -> None:
    assert arch.wave_sizes("gfx1310") == [32, 64] and arch.wave_size("gfx1310") == 32
    assert arch.wave_sizes("gfx1250") == [32]
    assert arch.wave_sizes("gfx942") == [64]
    # RDNA runs wave64 too (LLVM's wavefrontsize64 feature on every GFX10-12 processor); wave32 by default
    assert arch.wave_sizes("gfx1100") == [32, 64] and arch.wave_size("gfx1100") == 32


def test_names_added_and_disputed() -> None:
    assert "Radeon RX 9070 GRE" in arch.marketing_names("gfx1201")
    for gfx in ("gfx1152", "gfx1153"):
        assert "Radeon 840M (disputed: gfx1152 or gfx1153)" in (arch.marketing_name(gfx) or ""), gfx
    assert "840M" not in (arch.marketing_name("gfx1151") or "")


def test_gfx1152_without_kernels_names_the_reported_override() -> None:
    env = _env(torch="2.12.0+rocm7.2", rocm="7.2", gfx="gfx1152", arch_list=["gfx1100", "gfx1150", "gfx1151"])
    check = check_gfx_in_build(env, Extras())
    assert check.status == "fail" and check.fix
    assert "export HSA_OVERRIDE_GFX_VERSION=11.5.0 (runs gfx1150 code)" in check.fix
    assert arch.override_for("gfx1152") is None  # reported, not the usual fix: no wheel counts as carrying it


@pytest.mark.parametrize(
    "gfx", ["gfx1010", "gfx1030", "gfx1036", "gfx1100", "gfx1103", "gfx1151", "gfx1200", "gfx1201"]
)
def test_every_rdna_gfx_runs_both_wave_sizes(gfx: str) -> None:
    assert arch.wave_sizes(gfx) == [32, 64] and arch.wave_size(gfx) == 32


def test_gfx1151_names_and_the_820m_dispute() -> None:
    names = arch.marketing_names("gfx1151")
    assert {"Radeon 8060S", "Radeon 8050S", "Radeon 8065S", "Radeon 8040S"} <= {n.split(" (")[0] for n in names}
    for gfx in ("gfx1152", "gfx1153"):  # the data said gfx1153; AMD's matrix does not: both, said so
        assert "Radeon 820M (disputed: gfx1152 or gfx1153)" in (arch.marketing_name(gfx) or ""), gfx
    assert "820M" not in " ".join(arch.marketing_names("gfx1153"))  # not also stated as a plain fact


@pytest.mark.parametrize(
    ("gfx", "ids"),
    [("gfx1201", {"7550", "7551"}), ("gfx1200", {"7590"}), ("gfx1151", {"1586"}), ("gfx1150", {"150e"})],
)
def test_rdna4_and_strix_device_ids(gfx: str, ids: set[str]) -> None:
    from pytest_rocm._resources import load_json

    assert set(load_json("gpu_device_ids.json")["gfx"][gfx]) == ids


@pytest.mark.parametrize(
    ("torch", "rocm", "status"), [("2.12.0.dev20260408+rocm7.2", "7.2", "fail"), ("2.10.0+rocm7.1", "7.1", "ok")]
)
def test_rocblas_without_gfx900_kernels_from_rocm_7_2(torch: str, rocm: str, status: str) -> None:
    """pytorch/pytorch#179865: the rocBLAS of the ROCm 7.2 wheels ships no gfx900 files."""
    check = check_rocblas_targets(_env(torch=torch, rocm=rocm, gfx="gfx900"), Extras())
    assert check.status == status, check
    if status == "fail":
        assert "Illegal seek for GPU arch : gfx900" in check.evidence and "whl/rocm7.1" in (check.fix or "")
