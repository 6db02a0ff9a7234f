"""Boundary families beyond the first catalogue: FFT, linear algebra, optimizer steps and gradient
clipping (``clip_grad_norm_`` / ``_foreach_norm``), the op families of PyTorch's own databases
(OpInfo's ``op_db``, OptimInfo's ``optim_db``) the first catalogue left out (docs/coverage.md).

Why these values:

* FFT: powers of two and their neighbours (64/65), a prime (17, 4099: Bluestein / a non-radix
  plan), a composite non-power-of-two (1000); ``full`` adds long transforms (4099, 2^16, 2^20 + 1); a
  transform over a strided dimension (``strided``: dim 0 of an (n, 3) tensor, stride 3); c2r of an
  input that is not Hermitian (``irfft_nonhermitian``: the imaginary parts of bins 0 and n/2 are
  not zero, a kernel may read or drop them), batch 1 and 7;
* linear algebra: triangular solves (upper/lower, left/right, unit diagonal), batched solves and
  decompositions (cholesky, qr, eigh, svd, lu_factor) with batch counts 1, 3, 65 and in ``full``
  513 (one block per matrix: a batch past the batched kernels' grid split), sizes 1, 7, 33, 64;
* optimizer step: every optimizer of ``optim_db`` that offers ``foreach`` (and ``fused`` where it
  offers it) with that implementation forced, as a GPU would take it; 113 parameters of mixed sizes
  (more than the most tensors one multi-tensor launch takes at any depth: 110 at depth 1, 64, 48,
  36, 30 at depths 2-5, ATen's ``depth_to_max_tensors``: every foreach op of every optimizer runs
  more than one launch), ``full`` adds one tensor of 70,000 elements (more than one 65,536-element
  chunk); fp32/fp16/bf16 parameters;
* gradient clipping: ``clip_grad_norm_`` with ``foreach`` on and off, norm types 2, inf and 1,
  the same mixed sizes, a total norm below and above ``max_norm``;
* sorting (``sort``, ``topk``): line lengths 1, 17, 257 (past a 256-element one-block sort), 1025,
  4097 (past the in-register/bitonic sizes), ``full`` 65537 (a multi-pass radix sort); 1 and 7
  lines, ``full`` 65536 (one past the 65535 grid-y limit); along the last or first dim, transposed
  storage; ties, a NaN, infinities; ascending/descending and stable sort; topk's k 1, 5 and half
  the line, largest or smallest. A row returns the values and the input gathered at the returned
  indices (any tie order passes, a wrong index does not), and a stable sort's indices themselves.
"""

from __future__ import annotations

from pytest_rocm.coverage.arrays import Exclude
from pytest_rocm.coverage.catalogue_types import DTYPE, Axis, OpSpace

__all__ = ["MORE", "MULTI_TENSOR_MAX", "OPTIMIZERS", "PARAMS"]

#: the most tensors one multi-tensor launch takes, per depth (the number of tensor lists) 1-5:
#: ATen's MultiTensorApply ``depth_to_max_tensors``
MULTI_TENSOR_MAX = (110, 64, 48, 36, 30)
#: the parameter count of an optimizer / clipping row: past every depth's launch
PARAMS = max(MULTI_TENSOR_MAX) + 3

#: the optimizers of ``optim_db`` the generator steps: name -> implementations it forces
#: (``tests/coverage/test_families.py`` checks this against the installed torch's optim_db)
OPTIMIZERS: dict[str, tuple[str, ...]] = {
    "Adadelta": ("foreach",),
    "Adafactor": ("foreach",),
    "Adagrad": ("foreach", "fused"),
    "Adam": ("foreach", "fused"),
    "Adamax": ("foreach",),
    "AdamW": ("foreach", "fused"),
    "ASGD": ("foreach",),
    "NAdam": ("foreach",),
    "RAdam": ("foreach",),
    "RMSprop": ("foreach",),
    "Rprop": ("foreach",),
    "SGD": ("foreach", "fused"),
}

#: ci keeps one prime (17) and the composite 1000; the long prime 4099 and the big sizes are full's
_FFT_LENGTH = Axis("length", ("n8", "n17", "n64", "n65", "n1000"), ("n4099", "n65536", "n1048577"))
_FFT = tuple(
    OpSpace(
        "fft",
        op,
        (
            _FFT_LENGTH,
            Axis("batch", ("b1", "b7")),
            Axis("dim", ("last", "strided")),
            Axis("norm", ("backward", "ortho", "forward")),
            Axis("values", ("randn", "constant")),
            # complex64 only: a half-precision FFT exists on a GPU for powers of two alone and not on
            # the CPU, where every such row would be a skip
            Axis("dtype", ("float32",)),
        ),
        (Exclude({"length": {"n1048577"}, "batch": {"b7"}}, "memory of the float64 reference"),),
    )
    for op in ("fft", "ifft", "rfft", "irfft", "irfft_nonhermitian", "hfft")
)

_LINALG_BATCH = Axis("batch", ("b1", "b3", "b65"), ("b513",))
_LINALG_SIZE = Axis("size", ("n1", "n7", "n33"), ("n64",))  # ci time: 64x64 decompositions are full's
#: the CPU's float64 reference of 65 batched 33x33 decompositions costs seconds a row
_LINALG_COST = (Exclude({"batch": {"b65", "b513"}, "size": {"n33", "n64"}}, "CPU time of the float64 reference"),)
_LINALG = (
    OpSpace(
        "linalg",
        "solve_triangular",
        (
            _LINALG_BATCH,
            _LINALG_SIZE,
            Axis("upper", ("upper", "lower")),
            Axis("side", ("left", "right")),
            Axis("unit", ("non_unit", "unit")),
            Axis("rhs", ("k1", "k5")),
            Axis("layout", ("contiguous", "transposed")),
            Axis("dtype", ("float32",)),
        ),
        _LINALG_COST,
    ),
    *(
        OpSpace(
            "linalg",
            op,
            (_LINALG_BATCH, _LINALG_SIZE, Axis("layout", ("contiguous", "transposed")), Axis("dtype", ("float32",))),
            _LINALG_COST,
        )
        for op in ("solve", "cholesky", "qr", "eigh", "svdvals", "lu_factor", "inv")
    ),
)

_OPTIM = tuple(
    OpSpace(
        "optimizer",
        name.lower(),
        (
            Axis("impl", impls),
            Axis("params", (f"p{PARAMS}_mixed",), (f"p{PARAMS}_chunked",)),
            # ci time: the options beyond the defaults are full's (an optimizer row costs ~0.2 s of CPU)
            Axis("options", ("defaults",), ("weight_decay" if name != "Rprop" else "maximize",)),
            DTYPE,
        ),
    )
    for name, impls in OPTIMIZERS.items()
)

_CLIP = (
    OpSpace(
        "clipping",
        "clip_grad_norm_",
        (
            Axis("foreach", ("foreach", "for_loop")),
            Axis("norm_type", ("l2", "inf", "l1")),
            Axis("params", (f"p{PARAMS}_mixed",), (f"p{PARAMS}_chunked",)),
            Axis("scale", ("clipped", "not_clipped")),
            DTYPE,
        ),
    ),
)

_SORT_AXES = (
    Axis("rows", ("r1", "r7"), ("r65536",)),
    Axis("length", ("l1", "l17", "l257", "l1025", "l4097"), ("l65537",)),
    Axis("dim", ("last", "first")),
    Axis("layout", ("contiguous", "transposed")),
    Axis("values", ("randn", "ties", "nan", "neg_inf")),
    DTYPE,
)
_SORT_COST = Exclude({"rows": {"r65536"}, "length": {"l1025", "l4097", "l65537"}}, "CPU time of the reference")
_SORTING = (
    OpSpace(
        "sorting",
        "sort",
        (*_SORT_AXES, Axis("order", ("ascending", "descending")), Axis("stable", ("stable", "unstable"))),
        (_SORT_COST,),
    ),
    OpSpace(
        "sorting",
        "topk",
        (*_SORT_AXES, Axis("k", ("k1", "k5", "k_half")), Axis("largest", ("largest", "smallest"))),
        (_SORT_COST, Exclude({"k": {"k5"}, "length": {"l1"}}, "k is larger than the line")),
    ),
)

#: the families above, ``family/op`` -> space
MORE: dict[str, OpSpace] = {s.key: s for s in (*_FFT, *_LINALG, *_OPTIM, *_CLIP, *_SORTING)}
