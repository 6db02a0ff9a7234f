"""FFT (complex outputs compared as real/imag pairs) and linear algebra: solve, qr, svd, cholesky,
eigh, compared through forms that do not depend on a backend's sign or ordering choices.

Half-precision FFT and low-precision linalg are unsupported on many backends (the CPU has neither;
CUDA/ROCm half FFT needs power-of-two sizes): those are skips naming op, dtype and backend.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from opsupport import check, dtypes, randn


def _real_imag(z: torch.Tensor) -> torch.Tensor:
    # not view_as_real: its backward fails on the conjugated views FFT gradients produce
    return torch.stack((z.real, z.imag), dim=-1)


FFTS: dict[str, tuple[Callable[[torch.Tensor], torch.Tensor], torch.Tensor]] = {
    "fft": (lambda x: _real_imag(torch.fft.fft(x)), randn(4, 64, seed=1)),
    "ifft": (lambda x: _real_imag(torch.fft.ifft(x, norm="ortho")), randn(4, 64, seed=1)),
    "rfft": (lambda x: _real_imag(torch.fft.rfft(x)), randn(4, 64, seed=1)),
    "irfft": (lambda x: torch.fft.irfft(torch.fft.rfft(x), n=64), randn(4, 64, seed=1)),
    "fft2": (lambda x: _real_imag(torch.fft.fft2(x)), randn(2, 16, 16, seed=1)),
}

N = 6
EYE = torch.eye(N, dtype=torch.float64)


def _well_conditioned(a: torch.Tensor) -> torch.Tensor:
    return a + N * EYE.to(a)


def _spd(b: torch.Tensor) -> torch.Tensor:
    return b @ b.mT + N * EYE.to(b)


def _qr(a: torch.Tensor) -> tuple[torch.Tensor, ...]:
    q, r = torch.linalg.qr(a)
    # Q and R are unique only up to column/row signs: compare the product and the magnitudes.
    return q @ r, q.abs(), r.abs()


def _svd(a: torch.Tensor) -> tuple[torch.Tensor, ...]:
    u, s, vh = torch.linalg.svd(a, full_matrices=False)
    return s, (u * s.unsqueeze(-2)) @ vh  # singular values and the sign-free reconstruction


LINALG: dict[str, tuple[Callable[..., object], tuple[torch.Tensor, ...]]] = {
    "solve": (
        lambda a, b: torch.linalg.solve(_well_conditioned(a), b),
        (randn(2, N, N, seed=1), randn(2, N, 3, seed=2)),
    ),
    "qr": (_qr, (randn(2, N + 2, N, seed=1),)),
    "svd": (_svd, (randn(2, N, N - 2, seed=1),)),
    "cholesky": (lambda b: torch.linalg.cholesky(_spd(b)), (randn(2, N, N, seed=1),)),
    "eigh": (lambda b: torch.linalg.eigvalsh(b + b.mT), (randn(2, N, N, seed=1),)),
}


@dtypes
@pytest.mark.parametrize("op", list(FFTS))
def test_fft(op: str, dtype: str, parity, rocm_device: torch.device) -> None:
    fn, x = FFTS[op]
    check(parity, rocm_device, op, fn, x, dtype=dtype)


@dtypes
@pytest.mark.parametrize("op", list(LINALG))
def test_linalg(op: str, dtype: str, parity, rocm_device: torch.device) -> None:
    fn, args = LINALG[op]
    check(parity, rocm_device, op, fn, *args, dtype=dtype)
