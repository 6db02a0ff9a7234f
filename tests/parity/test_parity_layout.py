"""assert_parity runs the device at the caller's layout: a sliced view, a strided view, a storage
offset reach the op with the caller's strides and offset in every run (forward and with gradients),
so a kernel that is wrong only for such a layout fails the check. Proven with a device-only break
(``kernel_mutants.PerturbsStridedInput``) that fires only for non-contiguous input."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from kernel_mutants import PerturbsStridedInput  # noqa: E402

import pytest_rocm.parity.check as check  # noqa: E402
from pytest_rocm import ParityError, assert_parity  # noqa: E402
from pytest_rocm.parity.layout import copy_laid_out  # noqa: E402


@pytest.fixture
def device() -> torch.device:
    return torch.device("cpu")  # its own object: the break below tells the device run by identity


def break_device_runs(monkeypatch: pytest.MonkeyPatch, device: torch.device, op: str) -> PerturbsStridedInput:
    """The layout-conditional kernel bug, active in the runs on ``device`` only (the float64
    reference runs on another device object and is left alone)."""
    mutant = PerturbsStridedInput(op)
    real_run = check._run

    def run(fn: Any, args: Any, kwargs: Any, dev: Any, dtype: Any, *rest: Any) -> Any:
        if dev is not device:
            return real_run(fn, args, kwargs, dev, dtype, *rest)
        with mutant:
            return real_run(fn, args, kwargs, dev, dtype, *rest)

    monkeypatch.setattr(check, "_run", run)
    return mutant


def _image() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return torch.randn(2, 3, 20, 19, generator=g), torch.randn(4, 3, 3, 3, generator=g) / 5


VIEWS = {
    "sliced": lambda x: x[:, :, 2:18, 1:17],
    "strided": lambda x: x[:, :, ::2, ::3],
    "offset": lambda x: x.reshape(-1)[7 : 7 + 2 * 3 * 16 * 16].view(2, 3, 16, 16),
}


@pytest.mark.parametrize("grad", [False, True], ids=["forward", "grad"])
@pytest.mark.parametrize("view", sorted(VIEWS))
def test_a_layout_conditional_device_bug_fails_the_callers_view(
    monkeypatch: pytest.MonkeyPatch, device: torch.device, view: str, grad: bool
) -> None:
    x, w = _image()
    given = VIEWS[view](x)
    mutant = break_device_runs(monkeypatch, device, "aten.convolution.default")
    with pytest.raises(ParityError) as info:
        assert_parity(F.conv2d, given, w, device=device, dtypes=("float32",), grad=grad)
    assert mutant.fired and info.value.kind == "mismatch"
    # the same bug, a contiguous copy of the same values: the layout is the condition, nothing else
    fired = mutant.fired
    assert assert_parity(F.conv2d, given.clone(), w, device=device, dtypes=("float32",), grad=grad).ok
    assert mutant.fired == fired


@pytest.mark.parametrize("view", sorted(VIEWS))
def test_the_view_runs_clean_without_the_bug(device: torch.device, view: str) -> None:
    x, w = _image()
    assert assert_parity(F.conv2d, VIEWS[view](x), w, device=device, grad=True).ok


@pytest.mark.parametrize("grad", [False, True], ids=["forward", "grad"])
def test_every_run_sees_the_callers_strides_and_offset(device: torch.device, grad: bool) -> None:
    x = torch.arange(300.0).reshape(10, 30)
    given = x[1:9:2, 3:27:3]  # strides (60, 3), offset 33
    seen: list[tuple[tuple[int, ...], int, torch.dtype]] = []

    def fn(t: torch.Tensor) -> torch.Tensor:
        seen.append((t.stride(), t.storage_offset(), t.dtype))
        return t * 2

    assert assert_parity(fn, given, device=device, grad=grad).ok
    assert {(s, o) for s, o, _ in seen} == {(given.stride(), given.storage_offset())}
    assert {d for *_, d in seen} >= {torch.float64, torch.float32, torch.float16, torch.bfloat16}


def test_an_in_place_fn_on_a_view_and_a_broadcast_input(device: torch.device) -> None:
    x = torch.randn(6, 8, generator=torch.Generator().manual_seed(2))
    assert assert_parity(lambda t: t.mul_(3), x[1:5, ::2], device=device, grad=True).ok
    strides: list[tuple[int, ...]] = []

    def fn(t: torch.Tensor) -> torch.Tensor:
        strides.append(t.stride())
        return t + 1

    row = torch.randn(8).expand(5, 8)
    assert assert_parity(fn, row, device=device).ok  # no gradients: the stride-0 view is kept
    assert set(strides) == {(0, 1)}
    assert assert_parity(lambda t: t.sin(), row, device=device, grad=True).ok  # gradients: a dense copy


def test_the_copy_holds_the_callers_values_in_the_gaps() -> None:
    x = torch.arange(24.0).reshape(4, 6)
    got = copy_laid_out(x[1:, 1::2], torch.device("cpu"), torch.float16)
    assert got.stride() == (6, 2) and got.storage_offset() == 7 and got.dtype == torch.float16
    assert torch.equal(got.float(), x[1:, 1::2])
    window = got.as_strided((17,), (1,), 7)  # from the first element of the view to its last
    assert torch.equal(window.float(), x.reshape(-1)[7:24])


def test_the_model_yardstick_rounds_what_an_op_writes_in_place() -> None:
    """The yardstick stores every result in the dtype, also what an op writes into its arguments
    (batch norm's running statistics, an in-place op): left exact, a module row's state had a
    yardstick error of 0 and any rounding failed it."""
    from pytest_rocm.parity.probe import RoundTo

    def stored(t: torch.Tensor) -> bool:
        return torch.equal(t, t.half().double())

    bn = torch.nn.BatchNorm1d(3).double()
    x = torch.randn(5, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0)) / 3
    with RoundTo(torch.float16):
        out = bn(x)
        y = x.clone()
        y.mul_(1 / 3)
    assert stored(bn.running_mean) and stored(bn.running_var) and stored(out) and stored(y)
