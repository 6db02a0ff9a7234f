"""perf.peaks and data/peaks.json: a device gets its own product's peak or none; every number has a source."""

from __future__ import annotations

import pytest

from pytest_rocm.env import arch
from pytest_rocm.perf.peaks import DTYPE_KEYS, entries, entry_for, peak_of


def test_every_number_names_its_source_and_is_dense_positive() -> None:
    for entry in entries():
        assert entry["arch"] in arch.known_gfx() or entry["arch"].startswith("sm_"), entry["arch"]
        assert entry["names"] and entry["product"]
        figures = [*entry.get("tflops", {}).items(), ("bandwidth", entry.get("bandwidth_gbs"))]
        for key, figure in figures:
            if figure is None:
                continue
            assert key in set(DTYPE_KEYS.values()) | {"bandwidth"}, key
            assert figure["value"] > 0 and figure["source"].strip(), (entry["product"], key)


def test_products_sharing_an_architecture_are_told_apart_by_name() -> None:
    assert peak_of("sm_90", "NVIDIA H200", "bytes", None) == 4800.0
    assert peak_of("sm_90", "NVIDIA H100 80GB HBM3", "bytes", None) == 3350.0
    # the longest matching name wins: an XTX is not an XT
    assert entry_for("gfx1100", "AMD Radeon RX 7900 XTX")["product"] == "AMD Radeon RX 7900 XTX"  # type: ignore[index]
    assert entry_for("gfx1100", "Radeon RX 7900 XT")["product"] == "AMD Radeon RX 7900 XT"  # type: ignore[index]


@pytest.mark.parametrize(
    ("arch_name", "device", "kind", "dtype"),
    [
        ("gfx1100", "AMD Radeon RX 7800 XT", "bytes", None),  # same arch, another card: no peak
        ("gfx942", "AMD Instinct MI300X", "flops", "float64"),  # a dtype the file does not give
        (None, None, "flops", "float32"),  # the CPU
        ("gfx90a", "AMD Instinct MI250", "bytes", None),  # the MI250X's smaller sibling: not in the file
        ("gfx950", "AMD Instinct MI355X", "flops", "bfloat16"),  # FP16 and FP8 are sourced, BF16 is not yet
        ("gfx1100", "AMD Radeon PRO W7900", "flops", "float32"),  # bandwidth only: no compute figure found
        ("gfx1151", "AMD Radeon 8050S", "bytes", None),  # Strix Halo's 32-CU part: not the 8060S
        ("gfx1201", "AMD Radeon RX 9070", "bytes", None),  # the non-XT card is not the XT
    ],
)
def test_unknown_is_none_never_a_neighbours_figure(
    arch_name: str | None, device: str | None, kind: str, dtype: str | None
) -> None:
    assert peak_of(arch_name, device, kind, dtype) is None


def test_flops_come_back_in_gflops() -> None:
    assert peak_of("gfx942:sramecc+:xnack-", "AMD Instinct MI300X", "flops", "bfloat16") == pytest.approx(1307.4e3)
    assert peak_of("sm_90", "NVIDIA H100", "flops", "float8_e4m3fn") == pytest.approx(1978.9e3)


@pytest.mark.parametrize(
    ("arch_name", "device", "product", "kind", "dtype", "value"),
    [
        ("gfx90a:sramecc+:xnack-", "AMD Instinct MI210", "AMD Instinct MI210", "flops", "float16", 181.0e3),
        ("gfx90a", "AMD Instinct MI210", "AMD Instinct MI210", "flops", "bfloat16", 181.0e3),
        ("gfx942:sramecc+:xnack-", "AMD Instinct MI300X", "AMD Instinct MI300X", "flops", "float32", 163.4e3),
        ("gfx90a", "AMD Instinct MI250X", "AMD Instinct MI250X (one GCD)", "flops", "bfloat16", 191.5e3),
        ("gfx942:sramecc+:xnack-", "AMD Instinct MI325X", "AMD Instinct MI325X", "bytes", None, 6000.0),
        ("gfx950", "AMD Instinct MI355X", "AMD Instinct MI355X", "bytes", None, 8000.0),
        ("gfx950", "AMD Instinct MI355X", "AMD Instinct MI355X", "flops", "float16", 2500.0e3),
        ("gfx950", "AMD Instinct MI355X", "AMD Instinct MI355X", "flops", "float8_e4m3fn", 5000.0e3),
        ("gfx950", "AMD Instinct MI355X", "AMD Instinct MI355X", "flops", "float32", 157.3e3),
        ("gfx1100", "AMD Radeon PRO W7900", "AMD Radeon PRO W7900", "bytes", None, 864.0),
        ("gfx1201", "AMD Radeon RX 9070 XT", "AMD Radeon RX 9070 XT", "flops", "float32", 48.7e3),
        (
            "gfx1151",
            "AMD Radeon 8060S Graphics",
            "AMD Radeon 8060S (Strix Halo, Ryzen AI Max+ 395 / Max 390)",
            "bytes",
            None,
            256.0,
        ),
    ],
)
def test_each_added_device_is_matched_by_its_name_and_arch(
    arch_name: str, device: str, product: str, kind: str, dtype: str | None, value: float
) -> None:
    entry = entry_for(arch_name, device)
    assert entry is not None and entry["product"] == product
    assert peak_of(arch_name, device, kind, dtype) == pytest.approx(value)
    assert entry_for("gfx1030", device) is None  # the name alone is not enough: the arch must match too


def test_an_mi300x_is_not_given_its_sibling_mi325x_figures() -> None:
    assert peak_of("gfx942", "AMD Instinct MI300X", "bytes", None) == 5300.0
    assert peak_of("gfx942", "AMD Instinct MI325X", "bytes", None) == 6000.0
    # the W7900 shares gfx1100 with the RX 7900 XTX / XT and gets neither of their figures
    assert entry_for("gfx1100", "AMD Radeon PRO W7900")["product"] == "AMD Radeon PRO W7900"  # type: ignore[index]
