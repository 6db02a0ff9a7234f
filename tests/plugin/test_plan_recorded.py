"""Plans with a recording, plans that decide ``rocm_min_vram`` from the gfx's products, and the
plan summary naming the missing package: each through pytest (pytester), on an empty machine."""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_machines import build_tree, machines

from pytest_rocm.plugin.plan import architectures_here, min_vram_verdict, missing_package, product_memory
from pytest_rocm.plugin.versions import format_size

ENVS = Path(__file__).parents[1] / "data" / "envs"
S = "skipped"
pytestmark = pytest.mark.usefixtures("only_this_plugin")

README_EXAMPLE = """
import pytest

@pytest.mark.rocm_gpu
@pytest.mark.rocm_min_vram("16GiB")
def test_big_matmul_fits(rocm_device):
    raise AssertionError("a plan never runs a device test here")

@pytest.mark.rocm_min_vram("32GiB")
def test_needs_32(rocm_device): pass

@pytest.mark.rocm_min_vram("512GiB")
def test_needs_512(rocm_device): pass

@pytest.mark.rocm_requires("bitsandbytes>=0.45")
def test_bnb(rocm_device): pass

@pytest.mark.rocm_requires("surely-not-installed-34>=1")
def test_absent(rocm_device): pass
"""


def reasons(pytester: pytest.Pytester, *args: str) -> dict[str, tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {}
    for rep in pytester.inline_run(*args, "-p", "no:cacheprovider").getreports("pytest_runtest_logreport"):
        name = rep.nodeid.split("::")[-1]
        if rep.skipped:
            out[name] = (S, str(rep.longrepr[2]).removeprefix("Skipped: "))
        elif rep.failed:
            out[name] = ("failed", str(rep.longrepr))
        elif rep.when == "call":
            out[name] = ("passed", "")
    return out


def test_a_plan_with_a_recording_takes_its_versions_and_memory(pytester: pytest.Pytester) -> None:
    """``--rocm-gfx=gfx942 --rocm-env=mi300x.json`` on a machine without that GPU: every device test
    reads "would run" (not "device 0 (gfx942) is not here"), decided on the recorded MI300X."""
    pytester.makepyfile(test_plan=README_EXAMPLE)
    got = reasons(pytester, "--rocm-gfx=gfx942", f"--rocm-env={ENVS}/mi300x_8.json")
    would = (S, "would run on gfx942 (plan)")
    assert got["test_big_matmul_fits"] == would and got["test_needs_32"] == would
    assert got["test_needs_512"] == (S, "needs 512.0 GiB of GPU memory, the plan's recorded device has 192.0 GiB")
    assert not any("is not here" in reason for _, reason in got.values())
    result = pytester.runpytest("--rocm-gfx=gfx942", f"--rocm-env={ENVS}/mi300x_8.json", "-p", "no:cacheprovider")
    out = result.stdout.str()
    assert "device=plan:gfx942 (AMD Instinct MI300X, 192.0 GiB)" in out and "as recorded in" in out
    assert "plan for gfx942: 2 test(s) would run there, 3 would skip" in out
    # the summary names each missing package, never one "not installed" for all
    assert "1 skip: not installed: surely-not-installed-34" in out


def test_a_recording_of_this_machine_is_no_plan(pytester: pytest.Pytester, tmp_path: Path, monkeypatch) -> None:
    """Where the kernel shows the recorded gfx, the recorded device is here: markers decided on it
    and tests run as with ``--rocm-env`` alone (the fixture then checks the live torch)."""
    root = build_tree(tmp_path / "root", machines()["rx6800xt_igpu"].machine)
    monkeypatch.setenv("PYTEST_ROCM_SYSROOT", str(root))
    assert architectures_here() >= {"gfx1036"}
    pytester.makepyfile(
        """
import pytest

@pytest.mark.rocm_gfx("gfx10*")
def test_gfx_glob(): pass

@pytest.mark.rocm_min_vram("20GiB")
def test_min_vram(): pass
"""
    )
    got = reasons(pytester, f"--rocm-env={ENVS}/rx6800xt_igpu.json", "--rocm-gfx=gfx1036")
    assert got["test_gfx_glob"] == ("passed", "")
    assert got["test_min_vram"] == (S, "needs 20.0 GiB of GPU memory, device 1 has 512 MiB")


def test_a_plan_decides_min_vram_from_the_products_of_its_gfx(pytester: pytest.Pytester) -> None:
    """The README's first example would run on gfx942 (every product has at least 16 GiB); on
    gfx1100 32 GiB fits the workstation cards only, and the reason names which."""
    pytester.makepyfile(test_plan=README_EXAMPLE)
    got = reasons(pytester, "--rocm-gfx=gfx942", f"--rocm-env={ENVS}/cpu_only.json")
    assert got["test_big_matmul_fits"] == (S, "would run on gfx942 (plan)")
    assert got["test_needs_512"] == (
        S,
        "needs 512.0 GiB of GPU memory; no gfx942 product has that much "
        "(MI325X 256.0 GiB, MI300X 192.0 GiB, MI300A 128.0 GiB)",
    )
    rdna3 = reasons(pytester, "--rocm-gfx=gfx1100", f"--rocm-env={ENVS}/cpu_only.json")
    assert rdna3["test_big_matmul_fits"] == (S, "would run on gfx1100 (plan)")  # the smallest has 16 GiB
    reason = rdna3["test_needs_32"][1]
    assert reason.startswith("needs 32.0 GiB of GPU memory: would run on gfx1100 if the device has ≥ 32.0 GiB:")
    assert "Radeon PRO W7800 32.0 GiB" in reason and "not on Radeon RX 7900 XTX 24.0 GiB" in reason
    # an architecture whose products' memory is not fixed (an APU) stays unknown
    apu = reasons(pytester, "--rocm-gfx=gfx1151", f"--rocm-env={ENVS}/cpu_only.json")
    assert apu["test_big_matmul_fits"][1].endswith("the plan is for gfx1151 (rdna3.5) with unknown memory")


@pytest.mark.parametrize(
    ("size_gib", "verdict"),
    [(16, ""), (128, ""), (129, "some"), (192, "some"), (256, "some"), (257, "none")],
)
def test_min_vram_verdict_is_decided_at_the_products_sizes(size_gib: int, verdict: str) -> None:
    """The edges of gfx942's three sizes (128, 192, 256 GiB): every product, some, none."""
    got = min_vram_verdict("gfx942", size_gib << 30, "needs", format_size)
    assert got is not None
    kind = "" if got == "" else "none" if "no gfx942 product" in got else "some"
    assert kind == verdict, got


def test_product_memory_is_amds_table() -> None:
    assert product_memory("gfx942") == {"MI325X": 256 << 30, "MI300X": 192 << 30, "MI300A": 128 << 30}
    assert product_memory("gfx1151") == {} and product_memory("sm_90") == {}


@pytest.mark.parametrize(
    ("reason", "key"),
    [
        ("not installed: bitsandbytes (needs bitsandbytes>=0.45; in the recorded environment x.json)", "bitsandbytes"),
        ("not installed: flash_attn", "flash_attn"),
        ("not installed: triton: its CPU interpreter needs triton>=3.0", "triton"),
    ],
)
def test_the_summary_key_of_a_missing_package(reason: str, key: str) -> None:
    assert missing_package(reason) == f"not installed: {key}"
