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
        ("gfx942", "AMD Instinct MI300X", "flops", "float32"),  # left out: no source found
        (None, None, "flops", "float32"),  # the CPU
        ("gfx90a", "AMD Instinct MI250X", "bytes", None),  # not in the file
    ],
)
def test_unknown_is_none_never_a_neighbours_figure(
    arch_name: str | None, device: str | None, kind: str, dtype: str | None
) -> None:
    assert peak_of(arch_name, device, kind, dtype) is None


def test_flops_come_back_in_gflops() -> None:
    assert peak_of("gfx942:sramecc+:xnack-", "AMD Instinct MI300X", "flops", "bfloat16") == pytest.approx(1307.4e3)
    assert peak_of("sm_90", "NVIDIA H100", "flops", "float8_e4m3fn") == pytest.approx(1978.9e3)
