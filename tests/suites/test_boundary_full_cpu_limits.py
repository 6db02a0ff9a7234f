"""The boundary rows the CPU backend gets wrong (or crashes on) at ``full``'s sizes are known limits
there, with their figures, and nowhere else: a GPU and the ``ci`` profile judge them as usual."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

SUITE = Path(__file__).resolve().parents[2] / "suites" / "operators"
sys.path.insert(0, str(SUITE))
from boundary_cpu_limits import full_cpu_marking  # noqa: E402

from pytest_rocm.suite_support import BOUNDARY_CATALOGUE  # noqa: E402

#: rows of the measured full control run (torch 2.13.0+cpu) that failed or crashed on the CPU's own
MEASURED = (
    "conv/conv2d[b2-g2-k11-stride1-dil1-pad1-s224-channels_last-near_max-float16]",
    "conv/conv3d[b1-g1-k4-stride1-dil1-pad1x0-s13-channels_last-randn-float16]",
    "conv/conv_transpose2d[b2-g2-k11-stride1-dil1-pad1x0-s224-channels_last-randn-float16]",
    "conv/conv2d[b2-g2-k4-stride1-dil2-pad1x0-s224-channels_last-near_max-bfloat16]",
    "conv/conv_transpose2d[b2-g2-k4-stride1x2-dil2x1-pad1x0-s224-channels_last-nan-float32]",
    "pooling/max_pool2d[k16-stride1-pad1-dil2x1-floor-s224-channels_last-distinct-bfloat16]",
    "pooling/avg_pool2d[k16-stride1-pad0-floor-exclude_pad-s224-channels_last-const_rows-float16]",
    "optimizer/rmsprop[foreach-p113_mixed-weight_decay-bfloat16]",
    "optimizer/adamw[foreach-p113_mixed-weight_decay-float16]",
)
CRASHED = "conv/conv_transpose2d[b2-depthwise-k4-stride1-dil2-pad0-s224-channels_last-const_channels-bfloat16]"


def _row(row_id: str) -> tuple[str, dict[str, str]]:
    key, labels = row_id.rstrip("]").split("[", 1)
    names = [a.name for a in BOUNDARY_CATALOGUE[key].axes]
    return key, dict(zip(names, labels.split("-"), strict=True))


@pytest.mark.parametrize("row_id", MEASURED)
def test_a_measured_cpu_failure_is_a_known_limit_in_full_on_the_cpu_only(row_id: str) -> None:
    key, row = _row(row_id)
    limit = full_cpu_marking(key, row, "cpu", "full")
    assert limit is not None and not limit.crashes
    assert "CPU" in limit.why and any(ch.isdigit() for ch in limit.why)  # a reason with its figures
    assert full_cpu_marking(key, row, "cuda", "full") is None  # the GPU judges it
    assert full_cpu_marking(key, row, "cpu", "ci") is None


def test_a_crashing_row_is_skipped_on_the_cpu_not_run_under_xfail() -> None:
    key, row = _row(CRASHED)
    limit = full_cpu_marking(key, row, "cpu", "full")
    assert limit is not None and limit.crashes and "SIGSEGV" in limit.why
    assert full_cpu_marking(key, row, "cuda", "full") is None


def test_the_limits_stay_narrow() -> None:
    """The same shapes in fp32 (where the CPU passes) and small bf16 images are not excused."""
    for row_id in (
        "conv/conv2d[b2-g2-k11-stride1-dil1-pad1-s224-channels_last-near_max-float32]",
        "pooling/max_pool2d[k16-stride1-pad1-dil2x1-floor-s224-channels_last-distinct-float32]",
        "conv/conv_transpose2d[b2-depthwise-k4-stride1-dil2-pad0-s13-channels_last-const_channels-bfloat16]",
        "conv/conv1d[b2-g1-k3-stride2-dil2-pad1-s224-contiguous-randn-float16]",
        "optimizer/rmsprop[foreach-p113_mixed-weight_decay-float32]",
        "optimizer/adamw[fused-p113_mixed-weight_decay-float16]",
    ):
        key, row = _row(row_id)
        assert full_cpu_marking(key, row, "cpu", "full") is None, row_id


def test_the_suite_applies_the_marking() -> None:
    source = (SUITE / "test_boundary.py").read_text()
    assert "full_cpu_marking(key, row, rocm_device.type, rocm_scale)" in source
