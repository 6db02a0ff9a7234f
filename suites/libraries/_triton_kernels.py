"""Triton kernels the triton suite runs, and host wrappers that launch them like torch ops.

Imported only inside tests (after conftest decided TRITON_INTERPRET): @triton.jit chooses
compiler or interpreter when a kernel is defined, and importing triton at collection would turn
a triton that is absent or crashes into a collection error instead of an outcome.
Sizes are small: the interpreter runs each program instance in Python.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)  # in the input dtype, as the tutorial does


@triton.jit
def _softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    y = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_row_stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    s_am,
    s_ak,
    s_bk,
    s_bn,
    s_cm,
    s_cn,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        kk = k0 + rk
        a = tl.load(
            a_ptr + rm[:, None] * s_am + kk[None, :] * s_ak, mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0
        )
        b = tl.load(
            b_ptr + kk[:, None] * s_bk + rn[None, :] * s_bn, mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0
        )
        # ieee: the default tf32 on float32 inputs would be a different (documented) precision
        acc = tl.dot(a, b, acc, input_precision="ieee")
    tl.store(
        c_ptr + rm[:, None] * s_cm + rn[None, :] * s_cn,
        acc.to(c_ptr.dtype.element_ty),
        mask=(rm[:, None] < M) & (rn[None, :] < N),
    )


@triton.jit
def _layer_norm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, row_stride, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    centred = tl.where(mask, x - mean, 0.0)
    var = tl.sum(centred * centred, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask).to(tl.float32)
    y = centred * rstd * w + b
    tl.store(y_ptr + row * row_stride + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    _add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
    return out


def softmax(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    out = torch.empty_like(x)
    _softmax_kernel[(rows,)](out, x, x.stride(0), out.stride(0), cols, BLOCK=triton.next_power_of_2(cols))
    return out


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    (m, k), (_, n) = a.shape, b.shape
    c = torch.empty((m, n), dtype=a.dtype, device=a.device)
    grid = (triton.cdiv(m, 32), triton.cdiv(n, 32))
    _matmul_kernel[grid](a, b, c, m, n, k, *a.stride(), *b.stride(), *c.stride(), BM=32, BN=32, BK=32)
    return c


def layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    rows, cols = x.shape
    x = x.contiguous()
    y = torch.empty_like(x)
    _layer_norm_kernel[(rows,)](x, weight, bias, y, x.stride(0), cols, eps, BLOCK=triton.next_power_of_2(cols))
    return y
