"""Device-only ROCm numerics bug classes for the boundary suite's mutant check (a pytester conftest).

Each mutant perturbs the device runs only (parity's float64 CPU reference is left alone) and only at
its condition: a shape, layout, keyword, value pattern or dtype. None of them is a condition the
hand-written sweeps name, and the boundary catalogue has no row written for any of them: the
generator has to reach them. The source is pasted into a conftest (``MUTANT`` picks one).
"""

# the conftest's source: {name!r} is formatted in
CONFTEST = r"""
import pytest, torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

import pytest_rocm.parity.check as check

MUTANT = {name!r}
aten = torch.ops.aten


def first(out, fn):
    if isinstance(out, torch.Tensor):
        return fn(out)
    return type(out)(fn(o) if i == 0 else o for i, o in enumerate(out))


def scaled(out, factor=1.05):
    return first(out, lambda t: t * factor if t.is_floating_point() else t)


def is_low(t):
    return isinstance(t, torch.Tensor) and t.dtype in (torch.float16, torch.bfloat16)


def ftz(t):
    tiny = torch.finfo(t.dtype).tiny
    return torch.where(t.abs() < tiny, torch.zeros_like(t), t)


def channels_last(t):
    return t.dim() in (4, 5) and not t.is_contiguous() and (
        t.is_contiguous(memory_format=torch.channels_last) or t.is_contiguous(memory_format=torch.channels_last_3d)
    )


def mutate(func, args, kwargs):
    a = args
    if MUTANT == "gemm_fp16_ftz" and func in (aten.mm.default, aten.bmm.default, aten.addmm.default, aten.mm.out, aten.bmm.out):
        if any(is_low(x) for x in a):  # MI200 fp16/bf16 MFMA flush denormal inputs and outputs
            a = tuple(ftz(x) if is_low(x) else x for x in a)
            return first(func(*a, **kwargs), lambda t: ftz(t) if is_low(t) else t)
    if MUTANT == "gemm_bf16_transposed_a" and func in (aten.mm.default, aten.mm.out):
        if a[0].dtype == torch.bfloat16 and a[0].dim() == 2 and a[0].stride(0) == 1 and a[0].shape[0] > 1:
            return scaled(func(*a, **kwargs))  # a TN-layout kernel with a wrong epilogue
    if MUTANT == "softmax_long_rows" and func in (aten._softmax.default, aten._log_softmax.default):
        if a[0].shape[a[1]] > 1024:  # the switch from the one-block kernel to the multi-block one
            return scaled(func(*a, **kwargs))
    if MUTANT == "elementwise_unaligned" and func in (aten.add.Tensor, aten.mul.Tensor, aten.gelu.default, aten.silu.default, aten.exp.default, aten.add_.Tensor, aten.mul_.Tensor, aten.exp_.default, aten.silu_.default, aten.add.out, aten.mul.out, aten.exp.out):
        if any(isinstance(x, torch.Tensor) and x.numel() > 1 and x.data_ptr() % 16 for x in a):
            out = func(*a, **kwargs)  # the vector path assumed alignment: its last element is wrong
            first(out, lambda t: t.view(-1)[-1:].mul_(2) if t.is_floating_point() else t)
            return out
    eval_bn = func == aten._native_batch_norm_legit_no_training.default or (
        func == aten.native_batch_norm.default and not a[5]
    )
    if MUTANT == "batch_norm_nhwc_eval" and eval_bn:
        if channels_last(a[0]):
            return scaled(func(*a, **kwargs))
    if MUTANT == "conv_dilated_strided" and func == aten.convolution.default:
        if max(a[3]) > 1 and max(a[5]) > 1:
            return scaled(func(*a, **kwargs))
    if MUTANT == "reflect_pad_backward" and func in (aten.reflection_pad1d_backward.default, aten.reflection_pad2d_backward.default, aten.reflection_pad3d_backward.default):
        return scaled(func(*a, **kwargs))
    if MUTANT == "bicubic_align_corners" and func in (aten.upsample_bicubic2d.default, aten.upsample_bicubic2d.vec):
        if a[2] is True:
            return scaled(func(*a, **kwargs))
    if MUTANT == "embedding_backward_int32" and func == aten.embedding_dense_backward.default:
        if a[1].dtype == torch.int32:
            return scaled(func(*a, **kwargs))
    if MUTANT == "max_pool_ceil_mode" and func == aten.max_pool2d_with_indices.default:
        if len(a) > 5 and a[5]:  # the partial last window is dropped (filled with the one before)
            out, idx = func(*a, **kwargs)
            out = out.clone()
            out[..., -1] = out[..., -2] if out.shape[-1] > 1 else out[..., -1] * 2
            return out, idx
    if MUTANT == "max_pool_drops_nan" and func == aten.max_pool2d_with_indices.default:
        x = a[0]
        if x.is_floating_point() and bool(torch.isnan(x).any()):  # fmax semantics: NaN ignored
            return func(torch.nan_to_num(x, nan=float("-inf")), *a[1:], **kwargs)
    if MUTANT == "cumsum_long_scan" and func in (aten.cumsum.default, aten.cumsum.out):
        if a[0].shape[a[1]] > 1024:  # the carry between scan blocks is lost for the second block
            out = func(*a, **kwargs).clone()
            out.narrow(a[1], 1024, out.shape[a[1]] - 1024).sub_(out.narrow(a[1], 1023, 1))
            return out
    if MUTANT == "layer_norm_odd_features" and func == aten.native_layer_norm.default:
        if torch.Size(a[1]).numel() % 8:
            return scaled(func(*a, **kwargs))
    if MUTANT == "group_norm_nhwc" and func == aten.native_group_norm.default:
        if channels_last(a[0]):
            return scaled(func(*a, **kwargs))
    if MUTANT == "scatter_add_lost_updates" and func in (aten.scatter_add.default, aten.scatter_add_.default):
        index = a[2]
        if index.numel() and index.unique().numel() < index.numel():  # racing atomics: last write wins
            return aten.scatter.src(a[0], a[1], index, a[3])
    if MUTANT == "foreach_norm_many_tensors" and func == aten._foreach_norm.Scalar:
        out = list(func(*a, **kwargs))  # the norms of a second launch's tensors are wrong
        return [t * 1.05 if i >= 32 else t for i, t in enumerate(out)] if len(out) > 32 else None
    if MUTANT == "fft_prime_length" and func in (aten._fft_c2c.default, aten._fft_r2c.default, aten._fft_c2r.default):
        n = a[3] if func == aten._fft_c2r.default else a[0].shape[a[1][-1]]
        if n > 13 and all(n % d for d in range(2, int(n**0.5) + 1)):  # a prime length: Bluestein's plan
            return scaled(func(*a, **kwargs))
    if MUTANT == "pool_asymmetric_padding" and func in (aten.max_pool2d_with_indices.default, aten.avg_pool2d.default):
        kernel = list(a[1]) * (2 // len(a[1]))
        pad = list(a[3]) * (2 // len(a[3])) if len(a) > 3 and len(a[3]) else [0, 0]
        if kernel[0] != kernel[1] and any(pad):
            return scaled(func(*a, **kwargs))
    if MUTANT == "conv_asymmetric_padding_wrw" and func == aten.convolution_backward.default:
        pad = list(a[6])
        if len(pad) >= 2 and len(set(pad)) > 1:  # the weight gradient of an asymmetric padding
            out = list(func(*a, **kwargs))
            out[1] = out[1] * 1.05 if out[1] is not None else None
            return tuple(out)
    if MUTANT == "batched_solve_past_65536" and func in (aten._linalg_solve_ex.default, aten.linalg_lu_solve.default):
        if a[0].dim() > 2 and a[0].shape[:-2].numel() > 65536:
            return scaled(func(*a, **kwargs))
    if MUTANT == "getrf_huge_batch" and func in (aten.linalg_lu_factor_ex.default, aten.linalg_lu.default):
        if a[0].dim() > 2 and a[0].shape[:-2].numel() > 65536 and a[0].shape[-1] <= 8:
            return scaled(func(*a, **kwargs))
    if MUTANT == "batched_eigh_vectors" and func == aten._linalg_eigh.default:
        if a[0].dim() > 2 and a[0].shape[:-2].numel() > 1:  # another matrix's eigenvectors (workspace)
            w, v = func(*a, **kwargs)
            return w, v.roll(1, dims=0)
    if MUTANT == "fused_adam_fp16" and func in (aten._fused_adamw_.default, aten._fused_adam_.default):
        if is_low(a[0][0]) and a[0][0].dtype == torch.float16:
            before = [p.clone() for p in a[0]]
            out = func(*a, **kwargs)
            for p, old in zip(a[0], before):
                p.add_(0.05 * (p - old))  # the step is 5 % too long
            return out
    if MUTANT == "layer_norm_huge_rows" and func == aten.native_layer_norm.default:
        rows = a[0].numel() // max(torch.Size(a[1]).numel(), 1)
        if rows >= 2**23 and torch.Size(a[1]).numel() % 4:
            return scaled(func(*a, **kwargs))
    return None


class Mutant(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {{}}
        out = mutate(func, args, kwargs)
        return func(*args, **kwargs) if out is None else out


def causal_bottom_right(real):
    def sdpa(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, **kw):
        if is_causal and q.shape[-2] != k.shape[-2]:  # the other alignment of the causal diagonal
            L, S = q.shape[-2], k.shape[-2]
            mask = torch.ones(L, S, dtype=torch.bool, device=q.device).tril(diagonal=S - L)
            return real(q, k, v, attn_mask=mask, dropout_p=dropout_p, **kw)
        return real(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, **kw)
    return sdpa


@pytest.fixture(autouse=True)
def break_the_device_run(monkeypatch):
    real_run = check._run

    def run(fn, args, kwargs, dev, dtype, *rest, **more):
        # the float64 runs (the reference, the model criterion's yardstick: round_to) are left alone
        if dtype == torch.float64 or more.get("round_to") is not None or MUTANT == "none":
            return real_run(fn, args, kwargs, dev, dtype, *rest, **more)
        with pytest.MonkeyPatch.context() as mp:
            if MUTANT == "sdpa_causal_alignment":
                mp.setattr(F, "scaled_dot_product_attention", causal_bottom_right(F.scaled_dot_product_attention))
            with Mutant():
                return real_run(fn, args, kwargs, dev, dtype, *rest, **more)

    monkeypatch.setattr(check, "_run", run)
"""

#: mutant -> (the boundary family its ops belong to, the public report of the bug class)
MUTANTS: dict[str, tuple[str, str]] = {
    "gemm_fp16_ftz": ("matmul", "pytorch/pytorch#182952: hipBLASLt fp16 backward GEMMs flush subnormals (gfx90a)"),
    "gemm_bf16_transposed_a": ("matmul", "class: a GEMM kernel chosen for a transposed (TN) operand, wrong epilogue"),
    "softmax_long_rows": ("reductions", "class: the multi-block softmax past 1024 columns"),
    "elementwise_unaligned": ("elementwise", "class: a vectorized kernel that assumes 16-byte-aligned pointers"),
    "batch_norm_nhwc_eval": ("norm", "class: MIOpen NHWC batch-norm inference"),
    "conv_dilated_strided": ("conv", "class: MIOpen solvers for stride > 1 with dilation > 1"),
    "reflect_pad_backward": ("conv", "class: reflection-pad backward (reflect padding mode of a convolution)"),
    "bicubic_align_corners": ("interpolation", "class: bicubic upsampling with align_corners=True"),
    "embedding_backward_int32": ("indexing", "class: embedding backward with int32 indices"),
    "max_pool_ceil_mode": ("pooling", "class: ceil_mode's partial last window (rten#1416, mlpack#2886 elsewhere)"),
    "max_pool_drops_nan": ("pooling", "class: max pooling with fmax semantics, NaN not propagated"),
    "cumsum_long_scan": ("reductions", "class: a block scan that loses its carry past 1024 elements"),
    "layer_norm_odd_features": ("norm", "class: LayerNorm's vectorized path with a feature count not a multiple of 8"),
    "group_norm_nhwc": ("norm", "class: GroupNorm on channels_last input"),
    "scatter_add_lost_updates": ("indexing", "class: scatter_add with duplicate indices losing atomic updates"),
    "foreach_norm_many_tensors": ("clipping", "pytorch/pytorch#140066: _foreach_norm wrong for a list of many tensors"),
    "fft_prime_length": ("fft", "ROCm/rocFFT#219: prime-length (Bluestein) transforms wrong"),
    "pool_asymmetric_padding": ("pooling", "ROCm/MIOpen#1670: asymmetric 2d pooling with padding fails validation"),
    "conv_asymmetric_padding_wrw": ("conv", "ROCm/MIOpen#142, #179: backward-weights solver with asymmetric padding"),
    "batched_solve_past_65536": ("linalg", "pytorch/pytorch#196745: batched linalg.solve wrong past 65536 matrices"),
    "getrf_huge_batch": (
        "linalg",
        "ROCm/rocSOLVER#987: getrf_strided_batched wrong for huge batches of small matrices",
    ),
    "batched_eigh_vectors": ("linalg", "ROCm/rocm-libraries#9118: batched syevd returns another matrix's eigenvectors"),
    "fused_adam_fp16": ("optimizer", "pytorch/pytorch#96755: fused AdamW off for fp16 parameters"),
    "layer_norm_huge_rows": ("norm", "pytorch/pytorch#184826: ROCm layer_norm wrong for M >= 2^23 rows, C % 4 != 0"),
    "sdpa_causal_alignment": (
        "attention",
        "microsoft/onnxruntime#29020, ROCm/rocm-libraries#10999: is_causal diagonal alignment with seq_q != seq_k",
    ),
}
