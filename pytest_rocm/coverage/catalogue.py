"""The boundary dimensions of each op family: where GPU libraries switch kernels or break.

Each op has axes (a dimension with its ``ci`` values and the values only ``full`` adds) and the
combinations that are invalid (:class:`~pytest_rocm.coverage.arrays.Exclude`). The bundled boundary
suite (``suites/operators/test_boundary.py``) turns each row of the covering array into inputs; the
table's coverage section reads the same catalogue to list the values no row tried.

Value labels are self-describing (``m65``, ``k4097``, ``stride2``, ``channels_last``) because a row
is named by its labels joined (``boundary/matmul/mm[m65-k17-n1-transposed-...]``): the same row has
the same name in every column. Why the sizes:

* 1, a power of two and its neighbours (64/65, 16/17, 4096/4097): full tiles, a remainder tile, the
  vectorized path and its tail; primes (7, 13, 17) split no tile evenly;
* 65536 rows / batches: one past the 65535 grid-y limit of a launch that maps rows to blocks;
* long reductions (4097, 65537): split-K / multi-block reductions; inputs past 2^16 elements;
  2^31 elements are not generated: the float64 CPU reference alone would need 16 GiB;
* layouts: ``transposed`` (a transposed view), ``offset`` (a slice whose storage starts 64 elements
  in), ``unaligned`` (one element in: the data pointer loses its 16-byte alignment), ``expanded``
  (stride-0 broadcast), ``channels_last`` (2d and 3d);
* values: ``zeros``, ``const_rows`` (zero variance along the reduced dimension), ``near_max`` (a
  quarter of the dtype's largest finite value where the op keeps it finite), ``subnormal`` (inputs
  below the dtype's smallest normal whose results are normal), ``nan`` (one NaN: it must propagate
  to the same places), ``masked_rows`` (a row of -inf), ``duplicates`` (repeated indices).

Why this module is long: it is data, one entry per op (29 ops), each with its axes and the reasons
for its exclusions next to them; split per family, the shared axes and reasons would be repeated.
"""

from __future__ import annotations

from pytest_rocm.coverage.arrays import Exclude
from pytest_rocm.coverage.catalogue_more import MORE
from pytest_rocm.coverage.catalogue_types import DTYPE, MASKING, SCALE_STRENGTH, Axis, OpSpace
from pytest_rocm.coverage.geometry import conv_window_excludes

__all__ = [
    "BOUNDARY_CATALOGUE",
    "CATALOGUE",
    "MASKING",
    "SCALE_STRENGTH",
    "Axis",
    "OpSpace",
    "boundary_row_id",
    "row_id",
]


def row_id(row: dict[str, str]) -> str:
    """``m65-k17-n1-...``: the row's value labels in axis order."""
    return "-".join(row.values())


boundary_row_id = row_id


VALUES = Axis("values", ("randn", "zeros", "const_rows", "near_max", "subnormal", "nan"))
#: a 1x1 image is channels_last and contiguous at once: the layout would be tried in name only
NO_OP_CHANNELS_LAST = Exclude({"layout": {"channels_last"}, "spatial": {"s1"}}, "channels_last of 1x1 is contiguous")
NO_AUTOCAST_FP32 = Exclude({"variant": {"autocast"}, "dtype": {"float32"}}, "CPU autocast has no float32 target")


def _space(family: str, op: str, *axes: Axis, excludes: tuple[Exclude, ...] = ()) -> OpSpace:
    return OpSpace(family, op, axes, excludes)


_MATMUL = (
    _space(
        "matmul",
        "mm",
        Axis("m", ("m1", "m7", "m64", "m65"), ("m4096", "m65536")),
        Axis("k", ("k1", "k16", "k17"), ("k4096", "k4097")),
        Axis("n", ("n1", "n8", "n33"), ("n4096",)),
        Axis("layout_a", ("contiguous", "transposed", "offset")),
        Axis("layout_b", ("contiguous", "transposed", "unaligned")),
        VALUES,
        DTYPE,
        Axis("variant", ("functional", "out", "autocast")),
        excludes=(
            NO_AUTOCAST_FP32,
            Exclude({"m": {"m65536"}, "k": {"k4096", "k4097"}}, "memory of the float64 reference"),
            Exclude({"m": {"m65536", "m4096"}, "n": {"n4096"}}, "memory of the float64 reference"),
        ),
    ),
    _space(
        "matmul",
        "bmm",
        Axis("batch", ("b1", "b3"), ("b129", "b257", "b65536")),
        Axis("m", ("m1", "m17"), ("m512",)),
        Axis("k", ("k8", "k17"), ("k4097",)),
        Axis("n", ("n1", "n16")),
        Axis("layout", ("contiguous", "transposed", "expanded", "offset")),
        VALUES,
        DTYPE,
        Axis("variant", ("functional", "out", "autocast")),
        excludes=(
            NO_AUTOCAST_FP32,
            Exclude({"batch": {"b65536"}, "m": {"m512"}}, "memory of the float64 reference"),
            Exclude({"batch": {"b65536"}, "k": {"k4097"}}, "memory of the float64 reference"),
        ),
    ),
    _space(
        "matmul",
        "linear",
        Axis("tokens", ("t1", "t9"), ("t65536",)),
        Axis("in_features", ("in16", "in17"), ("in4096",)),
        Axis("out_features", ("out8", "out33"), ("out4096",)),
        Axis("bias", ("bias", "no_bias")),
        Axis("layout", ("contiguous", "transposed", "unaligned")),
        VALUES,
        DTYPE,
        Axis("variant", ("functional", "autocast")),
        excludes=(NO_AUTOCAST_FP32, Exclude({"tokens": {"t65536"}, "in_features": {"in4096"}}, "memory")),
    ),
)

#: non-square kernels (1xk, kx1: separable convolutions, a kernel switch per dim), asymmetric
#: stride, dilation and padding: a 1d convolution has one dim, so none of them
_NON_SQUARE_KERNELS = {
    "conv1d": (),
    "conv2d": ("k1x3", "k3x1"),
    "conv3d": ("k1x3", "k3x1"),
    "conv_transpose2d": ("k1x3", "k3x1"),
}
_CONV_PADDING = {
    "conv1d": ("pad0", "pad1", "reflect", "circular"),
    "conv2d": ("pad0", "pad1", "pad1x0", "reflect", "circular"),
    "conv3d": ("pad0", "pad1", "pad1x0", "reflect", "circular"),
    "conv_transpose2d": ("pad0", "pad1", "pad1x0"),
}
_CONV_VALUES = Axis("values", ("randn", "zeros", "const_channels", "near_max", "nan"))
_CONV_DIMS = {"conv1d": 1, "conv2d": 2, "conv3d": 3, "conv_transpose2d": 2}


def _conv_space(op: str) -> OpSpace:
    kernel = Axis("kernel", ("k1", "k3", "k4", *_NON_SQUARE_KERNELS[op]), ("k7", "k11"))
    dilation = Axis("dilation", ("dil1", "dil2", *(("dil2x1",) if op != "conv1d" else ())))
    padding = Axis("padding", _CONV_PADDING[op])
    spatial = Axis("spatial", ("s7", "s8", "s13"), ("s64", "s127", "s224"))
    # a transposed convolution grows its input: any window fits
    geometry = () if op.startswith("conv_t") else conv_window_excludes(
        _CONV_DIMS[op], *(a.values("full") for a in (kernel, dilation, padding, spatial))
    )  # fmt: skip
    return _space(
        "conv",
        op,
        Axis("batch", ("b1", "b2"), ("b129",)),
        Axis("groups", ("g1", "g2", "depthwise")),
        kernel,
        Axis("stride", ("stride1", "stride2", *(("stride1x2",) if op != "conv1d" else ()))),
        dilation,
        padding,
        spatial,
        Axis("layout", ("contiguous", "channels_last", "offset")),
        _CONV_VALUES,
        DTYPE,
        excludes=(
            Exclude({"kernel": {"k7", "k11"}, "spatial": {"s7", "s8"}}, "the kernel is larger than the input"),
            Exclude({"kernel": {"k4", "k7", "k11"}, "dilation": {"dil2"}, "spatial": {"s7"}}, "larger than the input"),
            Exclude({"batch": {"b129"}, "spatial": {"s127", "s224"}}, "CPU time of the float64 reference"),
            Exclude({"spatial": {"s224"}, "kernel": {"k7", "k11"}, "dilation": {"dil2", "dil2x1"}}, "CPU time"),
            *geometry,
        ),
    )


_CONV = tuple(_conv_space(op) for op in ("conv1d", "conv2d", "conv3d", "conv_transpose2d"))

_POOL = (
    _space(
        "pooling",
        "max_pool2d",
        Axis("kernel", ("k2", "k3", "k1x3", "k3x1"), ("k16",)),
        Axis("stride", ("stride1", "stride2", "stride_kernel", "stride1x2")),
        Axis("padding", ("pad0", "pad1", "pad1x0")),
        Axis("dilation", ("dil1", "dil2", "dil2x1")),
        Axis("ceil_mode", ("floor", "ceil")),
        Axis("spatial", ("s7", "s8", "s13"), ("s64", "s224", "s65536")),
        Axis("layout", ("contiguous", "channels_last")),
        Axis("values", ("distinct", "ties", "neg_inf", "nan")),
        DTYPE,
        excludes=(
            Exclude({"kernel": {"k16"}, "spatial": {"s7", "s8", "s13"}}, "the window is larger than the input"),
            Exclude({"kernel": {"k16"}, "dilation": {"dil2", "dil2x1"}, "spatial": {"s64"}}, "larger than the input"),
        ),
    ),
    _space(
        "pooling",
        "avg_pool2d",
        Axis("kernel", ("k2", "k3", "k1x3", "k3x1"), ("k16",)),
        Axis("stride", ("stride1", "stride2", "stride_kernel", "stride1x2")),
        Axis("padding", ("pad0", "pad1", "pad1x0")),
        Axis("ceil_mode", ("floor", "ceil")),
        Axis("count_include_pad", ("include_pad", "exclude_pad")),
        Axis("spatial", ("s7", "s8", "s13"), ("s64", "s224", "s65536")),
        Axis("layout", ("contiguous", "channels_last")),
        Axis("values", ("randn", "const_rows", "near_max", "nan")),
        DTYPE,
        excludes=(Exclude({"kernel": {"k16"}, "spatial": {"s7", "s8", "s13"}}, "the window is larger than the input"),),
    ),
    _space(
        "pooling",
        "adaptive_avg_pool2d",
        Axis("spatial", ("s7", "s13", "s64"), ("s65536",)),
        Axis("output", ("o1", "o3", "o5")),
        Axis("layout", ("contiguous", "channels_last")),
        Axis("values", ("randn", "const_rows", "near_max", "nan")),
        DTYPE,
    ),
)

_INTERP = (
    _space(
        "interpolation",
        "interpolate",
        Axis("mode", ("nearest", "nearest-exact", "bilinear", "bicubic", "area")),
        Axis("align_corners", ("default", "align", "no_align")),
        Axis("resize", ("up_odd", "down", "scale2", "scale1.7")),
        Axis("spatial", ("s1", "s5", "s8", "s13"), ("s4096",)),
        Axis("layout", ("contiguous", "channels_last")),
        Axis("values", ("randn", "const_rows", "near_max", "nan")),
        DTYPE,
        excludes=(
            Exclude(
                {"mode": {"nearest", "nearest-exact", "area"}, "align_corners": {"align", "no_align"}},
                "linear modes only",
            ),
            Exclude({"spatial": {"s1"}, "resize": {"down"}}, "a size-1 input cannot shrink"),
            NO_OP_CHANNELS_LAST,
            Exclude({"spatial": {"s4096"}, "resize": {"scale2", "scale1.7", "up_odd"}}, "memory"),
        ),
    ),
)

_NORM = (
    _space(
        "norm",
        "layer_norm",
        Axis("rows", ("r1", "r7", "r129"), ("r65536",)),
        Axis("features", ("f8", "f33", "f1024"), ("f4096", "f8193")),
        Axis("affine", ("affine", "no_affine")),
        Axis("layout", ("contiguous", "transposed", "offset")),
        Axis("values", ("randn", "zeros", "const_rows", "near_max", "nan")),
        DTYPE,
        excludes=(
            Exclude({"rows": {"r65536"}, "features": {"f1024", "f4096", "f8193"}}, "memory"),
            Exclude(
                {"affine": {"affine"}, "rows": {"r129", "r65536"}, "dtype": {"float16", "bfloat16"}},
                "the CPU's LayerNorm sums fp16/bf16 weight gradients over rows in the dtype",
            ),
        ),
    ),
    _space(
        "norm",
        "batch_norm",
        Axis("batch", ("b1", "b2", "b9"), ("b257",)),
        Axis("channels", ("c1", "c3", "c16")),
        Axis("spatial", ("s1", "s5"), ("s64",)),
        Axis("mode", ("train", "eval")),
        Axis("affine", ("affine", "no_affine")),
        Axis("layout", ("contiguous", "channels_last")),
        Axis("values", ("randn", "const_channels", "near_max")),
        DTYPE,
        excludes=(
            Exclude({"batch": {"b1"}, "spatial": {"s1"}, "mode": {"train"}}, "one value per channel in training"),
            Exclude(
                {"batch": {"b2"}, "spatial": {"s1"}, "mode": {"train"}}, "two values: the gradient is cancellation"
            ),
            NO_OP_CHANNELS_LAST,
        ),
    ),
    _space(
        "norm",
        "group_norm",
        Axis("batch", ("b1", "b3")),
        Axis("groups", ("g1", "g2", "per_channel")),
        Axis("channels", ("c4", "c12"), ("c320",)),
        Axis("spatial", ("s1", "s7", "s16"), ("s128",)),
        Axis("layout", ("contiguous", "channels_last")),
        Axis("values", ("randn", "const_channels", "near_max", "nan")),
        DTYPE,
        excludes=(
            Exclude({"groups": {"per_channel"}, "spatial": {"s1"}}, "one value per group"),
            Exclude(
                {"groups": {"g2"}, "channels": {"c4"}, "spatial": {"s1"}}, "two values: the gradient is cancellation"
            ),
            NO_OP_CHANNELS_LAST,
        ),
    ),
)

_REDUCE_AXES = (
    Axis("rows", ("r1", "r7", "r65"), ("r65536",)),
    Axis("length", ("l1", "l8", "l33", "l1025"), ("l65537", "l262144")),
    Axis("dim", ("last", "first")),
    Axis("layout", ("contiguous", "transposed", "unaligned")),
    Axis("values", ("randn", "const_rows", "near_max", "masked_rows", "nan")),
    DTYPE,
)
_REDUCE_EXCLUDES = (Exclude({"rows": {"r65536"}, "length": {"l1025", "l65537", "l262144"}}, "memory"),)
_REDUCE = tuple(
    _space("reductions", op, *_REDUCE_AXES, Axis("variant", variants), excludes=_REDUCE_EXCLUDES)
    for op, variants in (
        ("softmax", ("functional", "dtype_float32")),
        ("log_softmax", ("functional", "dtype_float32")),
        ("sum", ("functional", "out", "keepdim")),
        ("var", ("functional", "keepdim")),
        ("cumsum", ("functional", "out")),
    )
)

_SDPA = (
    _space(
        "attention",
        "scaled_dot_product_attention",
        Axis("batch", ("b1", "b2"), ("b129",)),
        Axis("heads", ("h1", "h3")),
        Axis("seq_q", ("q1", "q17", "q64"), ("q1024",)),
        Axis("seq_k", ("kv1", "kv17", "kv65"), ("kv1025",)),
        Axis("head_dim", ("d8", "d16", "d40"), ("d128", "d256")),
        Axis("is_causal", ("not_causal", "causal")),
        Axis("mask", ("no_mask", "bool_mask", "float_mask", "masked_row")),
        Axis("layout", ("contiguous", "transposed", "v_transposed")),
        Axis("values", ("randn", "zeros", "near_max")),
        DTYPE,
        excludes=(
            Exclude(
                {"is_causal": {"causal"}, "mask": {"bool_mask", "float_mask", "masked_row"}}, "a mask or is_causal"
            ),
            Exclude({"batch": {"b129"}, "seq_q": {"q1024"}, "seq_k": {"kv1025"}}, "memory of the math reference"),
        ),
    ),
)

_INDEX = (
    _space(
        "indexing",
        "embedding",
        Axis("vocab", ("v1", "v17", "v1000"), ("v65537",)),
        Axis("count", ("n1", "n9", "n4097"), ("n65537",)),
        Axis("indices", ("distinct", "duplicates", "all_same")),
        Axis("index_dtype", ("int64", "int32")),
        Axis("padding_idx", ("no_padding", "padding0")),
        Axis("layout", ("contiguous", "offset")),
        DTYPE,
        excludes=(Exclude({"vocab": {"v1"}, "indices": {"distinct"}}, "one row has no distinct indices"),),
    ),
    _space(
        "indexing",
        "gather",
        Axis("size", ("s1", "s17", "s1025"), ("s65537",)),
        Axis("dim", ("last", "first")),
        Axis("indices", ("distinct", "duplicates", "all_same")),
        Axis("layout", ("contiguous", "transposed", "expanded")),
        DTYPE,
    ),
    _space(
        "indexing",
        "scatter_add",
        Axis("size", ("s1", "s17", "s1025"), ("s65537",)),
        Axis("dim", ("last", "first")),
        Axis("indices", ("distinct", "duplicates", "all_same")),
        Axis("layout", ("contiguous", "transposed")),
        Axis("variant", ("functional", "inplace")),
        DTYPE,
    ),
    _space(
        "indexing",
        "index_select",
        Axis("size", ("s1", "s17", "s1025"), ("s65537",)),
        Axis("dim", ("last", "first")),
        Axis("indices", ("distinct", "duplicates", "all_same")),
        Axis("index_dtype", ("int64", "int32")),
        Axis("layout", ("contiguous", "transposed", "offset")),
        DTYPE,
    ),
)

_ELEMENTWISE_AXES = (
    Axis("numel", ("n1", "n7", "n64", "n65537"), ("n1048577", "n16777217")),
    Axis("layout", ("contiguous", "transposed", "unaligned", "broadcast")),
    Axis("values", ("randn", "zeros", "near_max", "subnormal", "nan")),
    DTYPE,
)
_ELEMENTWISE = tuple(
    _space("elementwise", op, *_ELEMENTWISE_AXES, Axis("variant", variants))
    for op, variants in (
        ("add", ("functional", "inplace", "out")),
        ("mul", ("functional", "inplace", "out")),
        ("gelu", ("functional", "tanh")),
        ("silu", ("functional", "inplace")),
        ("exp", ("functional", "inplace", "out")),
    )
)

#: every op the generator knows, ``family/op`` -> its space
CATALOGUE: dict[str, OpSpace] = {
    **{s.key: s for s in (*_MATMUL, *_CONV, *_POOL, *_INTERP, *_NORM, *_REDUCE, *_SDPA, *_INDEX, *_ELEMENTWISE)},
    **MORE,  # FFT, linear algebra, optimizer steps, gradient clipping (catalogue_more)
}

#: the catalogue under the name the boundary suite imports (``from pytest_rocm.suite_support import BOUNDARY_CATALOGUE``)
BOUNDARY_CATALOGUE = CATALOGUE
