"""Markers a fixture adds (``request.node.add_marker``) are validated and decided at the end of
setup, as the others are at collection (issue 19): a bad one is an error naming it, never a pass."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.usefixtures("only_this_plugin")
MI300X = f"--rocm-env={Path(__file__).parents[1] / 'data' / 'envs' / 'mi300x_8.json'}"


def test_a_marker_added_by_a_fixture_is_validated_and_decided(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_fx="""
        import pytest
        @pytest.fixture
        def lots(request):
            request.node.add_marker(pytest.mark.rocm_min_vram("lots"))
        @pytest.fixture
        def huge(request):
            request.node.add_marker(pytest.mark.rocm_min_vram(10**15))
        @pytest.fixture
        def fine(request):
            request.node.add_marker(pytest.mark.rocm_min_vram(1))
        def test_bad(lots):
            pass
        def test_too_big(huge):
            pass
        def test_fits(fine):
            pass
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "-rA", MI300X)
    result.assert_outcomes(errors=1, skipped=1, passed=1)
    result.stdout.fnmatch_lines(
        [
            "test_fx.py::test_bad: rocm_min_vram('lots')*",
            "SKIPPED * needs 931322.6 GiB of GPU memory, device 0 has 192.0 GiB",
        ],
        consecutive=False,
    )
