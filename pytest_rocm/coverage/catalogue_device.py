"""The device profile: boundary rows at sizes a CPU cannot afford, each with its memory cost.

A GPU kernel breaks at limits a CPU-sized row never crosses: a flat index past 2^31 elements (int32
offsets), a batch past 65,535 (one block per matrix on a grid dimension capped at 65,535), an
embedding row whose element offset passes int32. Those rows are generated here, from per-family
size rules (not typed one by one), with the shapes of every input and output, so their memory cost
is computed from shapes and dtypes. They belong to the ``full`` profile and run only where the
device under test is a GPU with the memory (the boundary suite's ``test_boundary_device``; on the
CPU they skip naming the cost); ``benchmarks/gpu_run.sh`` runs them as their own step; the coverage
map lists them as "device profile only" with the same cost.

The cost of a row (:meth:`DeviceRow.cost`), as parity runs it:

* on the device: every input and output in the row's dtype (index tensors in int64);
* on the host: the float32 inputs parity starts from, their float64 copies for the reference, the
  float64 reference outputs, and the device outputs brought back and widened to float64 for the
  comparison (forward only: these rows run no backward).

Pure (no torch): tests/coverage/test_catalogue_device.py checks ids, costs and that every row
crosses the limit it names; tests/suites/test_boundary_device.py runs each row's op on meta tensors
of these shapes (the outputs' shapes are the ones declared here) and at a small size on the CPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["DEVICE_ROWS", "GRID_LIMIT", "INT32_LIMIT", "Cost", "DeviceRow", "TensorSpec", "device_rows", "gib"]

#: one past the largest int32 element index
INT32_LIMIT = 2**31
#: the largest grid dimension (y/z) a launch may have on ROCm and CUDA
GRID_LIMIT = 65535
_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int64": 8, "int32": 4}
_LOW_AND_FP32 = ("float32", "float16", "bfloat16")


@dataclass(frozen=True)
class TensorSpec:
    shape: tuple[int, ...]
    #: "row": the row's dtype; "int64": an index tensor (never cast)
    kind: str = "row"

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True)
class Cost:
    device_bytes: int
    host_bytes: int

    def text(self) -> str:
        return f"{gib(self.device_bytes)} on the device, {gib(self.host_bytes)} of host memory"


def gib(n: int) -> str:
    """``24.0 GiB``; under 1 GiB in MiB (``4.2 MiB``), so a small row never reads as 0."""
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"


@dataclass(frozen=True)
class DeviceRow:
    family: str
    op: str
    #: size labels in order (``{"rows": "r65537", "length": "l32769"}``); the dtype comes last in the id
    labels: tuple[tuple[str, str], ...]
    dtype: str
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    #: the limit the row crosses, in words
    crosses: str

    @property
    def key(self) -> str:
        return f"{self.family}/{self.op}"

    @property
    def dims(self) -> dict[str, str]:
        return {**dict(self.labels), "dtype": self.dtype}

    @property
    def row_id(self) -> str:
        return "-".join(self.dims.values())

    @property
    def feature(self) -> str:
        return f"boundary/{self.key}[{self.row_id}]"

    def _bytes(self, spec: TensorSpec, dtype: str) -> int:
        return spec.numel * _BYTES["int64" if spec.kind == "int64" else dtype]

    def cost(self) -> Cost:
        device = sum(self._bytes(t, self.dtype) for t in (*self.inputs, *self.outputs))
        floats_in = [t for t in self.inputs if t.kind == "row"]
        host = sum(self._bytes(t, "int64") for t in self.inputs if t.kind == "int64")
        host += sum(self._bytes(t, "float32") + self._bytes(t, "float64") for t in floats_in)
        host += sum(2 * self._bytes(t, "float64" if t.kind == "row" else "int64") for t in self.outputs)
        return Cost(device, host)


def _rows(
    family: str,
    op: str,
    labels: dict[str, str],
    inputs: list[tuple[int, ...] | TensorSpec],
    outputs: list[tuple[int, ...] | TensorSpec],
    crosses: str,
    dtypes: tuple[str, ...] = _LOW_AND_FP32,
) -> list[DeviceRow]:
    def spec(t: tuple[int, ...] | TensorSpec) -> TensorSpec:
        return t if isinstance(t, TensorSpec) else TensorSpec(t)

    ins, outs = tuple(spec(t) for t in inputs), tuple(spec(t) for t in outputs)
    return [DeviceRow(family, op, tuple(labels.items()), d, ins, outs, crosses) for d in dtypes]


_PAST_INT32 = "more than 2^31 elements: a flat int32 index wraps"
_PAST_GRID = "a batch past 65,535: one block per item on a grid dimension capped at 65,535"


def _elementwise() -> list[DeviceRow]:
    n = INT32_LIMIT + 1
    out = []
    for op, arity in (("add", 2), ("mul", 2), ("exp", 1), ("gelu", 1), ("silu", 1)):
        out += _rows("elementwise", op, {"numel": f"n{n}"}, [(n,)] * arity, [(n,)], _PAST_INT32)
    return out


def _reductions() -> list[DeviceRow]:
    #: rows x length past 2^31 with both past a power of two (a remainder tile in each)
    r, n = 65537, 32769
    long = INT32_LIMIT + 1
    # fp16 has no such row: a sum of 2^31 inputs of mean 5/32 is past its largest finite value
    out = _rows(
        "reductions", "sum", {"rows": "r1", "length": f"l{long}"}, [(1, long)], [(1,)], _PAST_INT32,
        ("float32", "bfloat16"),
    )  # fmt: skip
    for op in ("softmax", "log_softmax", "sum", "var", "cumsum"):
        shape_out = (r, n) if op in ("softmax", "log_softmax", "cumsum") else (r,)
        out += _rows("reductions", op, {"rows": f"r{r}", "length": f"l{n}"}, [(r, n)], [shape_out], _PAST_INT32)
    return out


def _norm() -> list[DeviceRow]:
    out = []
    # the last: rows past 2^23 with a feature count not a multiple of 4 (pytorch#184826's shapes)
    for rows, features in ((262145, 8193), (2097153, 1025), (8388609, 257)):
        shapes: list[tuple[int, ...] | TensorSpec] = [(rows, features), (features,), (features,)]
        labels = {"rows": f"r{rows}", "features": f"f{features}"}
        out += _rows("norm", "layer_norm", labels, shapes, [(rows, features)], _PAST_INT32)
    return out


def _matmul() -> list[DeviceRow]:
    b, s, big = GRID_LIMIT + 2, 16, 32769
    out = []
    for op in ("bmm", "baddbmm"):
        ins: list[tuple[int, ...] | TensorSpec] = [(b, s, s)] * (3 if op == "baddbmm" else 2)
        out += _rows(
            "matmul", op, {"batch": f"b{b}", "m": f"m{s}", "k": f"k{s}", "n": f"n{s}"}, ins, [(b, s, s)], _PAST_GRID
        )
    out += _rows(
        "matmul", "bmm", {"batch": "b2", "m": f"m{big}", "k": f"k{s}", "n": f"n{big}"},
        [(2, big, s), (2, s, big)], [(2, big, big)], "an output past 2^31 elements: int32 offsets into C wrap",
    )  # fmt: skip
    m = 65537
    out += _rows(
        "matmul", "mm", {"m": f"m{m}", "k": f"k{s}", "n": f"n{big}"}, [(m, s), (s, big)], [(m, big)],
        "an output past 2^31 elements: int32 offsets into C wrap",
    )  # fmt: skip
    wide = 64 * (GRID_LIMIT + 1) + 1
    out += _rows(
        "matmul", "mm", {"m": f"m{s}", "k": f"k{s}", "n": f"n{wide}"}, [(s, s), (s, wide)], [(s, wide)],
        "more than 65,535 column tiles of 64: a free dimension mapped to grid y overflows",
    )  # fmt: skip
    return out


def _linalg() -> list[DeviceRow]:
    b, n = GRID_LIMIT + 2, 4
    out = []
    for op in ("solve", "solve_triangular"):
        out += _rows(
            "linalg",
            op,
            {"batch": f"b{b}", "size": f"n{n}"},
            [(b, n, n), (b, n, 1)],
            [(b, n, 1)],
            _PAST_GRID,
            ("float32",),
        )
    for op in ("inv", "cholesky", "lu_factor"):
        out += _rows(
            "linalg", op, {"batch": f"b{b}", "size": f"n{n}"}, [(b, n, n)], [(b, n, n)], _PAST_GRID, ("float32",)
        )
    return out


def _conv() -> list[DeviceRow]:
    b = GRID_LIMIT + 2
    out = _rows(
        "conv", "conv2d", {"batch": f"b{b}", "channels": "c3", "spatial": "s8", "layout": "contiguous"},
        [(b, 3, 8, 8), (4, 3, 3, 3)], [(b, 4, 8, 8)], _PAST_GRID,
    )  # fmt: skip
    s = 32769  # 2 x 32769^2 > 2^31 elements in the input and the output (padding 1 keeps the size)
    for layout in ("contiguous", "channels_last"):
        out += _rows(
            "conv", "conv2d", {"batch": "b1", "channels": "c2", "spatial": f"s{s}", "layout": layout},
            [(1, 2, s, s), (2, 2, 3, 3)], [(1, 2, s, s)], _PAST_INT32,
        )  # fmt: skip
    return out


def _indexing() -> list[DeviceRow]:
    vocab, dim, count = 2097153, 1024, 4097  # the last row starts past element 2^31
    crosses = "an index whose element offset (index x row length) is past 2^31: int32 offsets wrap"
    labels = {"vocab": f"v{vocab}", "dim": f"d{dim}", "count": f"n{count}"}
    out = _rows("indexing", "embedding", labels, [TensorSpec((count,), "int64"), (vocab, dim)], [(count, dim)], crosses)
    out += _rows(
        "indexing", "index_select", labels, [(vocab, dim), TensorSpec((count,), "int64")], [(count, dim)], crosses
    )
    return out


def _fft() -> list[DeviceRow]:
    n = 2**28  # one long transform: a multi-kernel plan
    # complex inputs are (re, im) pairs of real tensors; outputs view_as_real
    out = _rows(
        "fft",
        "fft",
        {"batch": "b1", "length": f"n{n}"},
        [(n,), (n,)],
        [(n, 2)],
        "a transform of 2^28 points",
        ("float32",),
    )
    out += _rows(
        "fft",
        "rfft",
        {"batch": "b1", "length": f"n{n}"},
        [(n,)],
        [(n // 2 + 1, 2)],
        "a transform of 2^28 points",
        ("float32",),
    )
    b, m = 8193, 262144  # batch x length past 2^31
    out += _rows(
        "fft", "ifft", {"batch": f"b{b}", "length": f"n{m}"}, [(b, m), (b, m)], [(b, m, 2)], _PAST_INT32, ("float32",)
    )
    return out


def _sorting() -> list[DeviceRow]:
    r, n, k = 65537, 32769, 1024
    long = 2**27 + 1
    idx = "int64"
    out = _rows(
        "sorting",
        "sort",
        {"rows": f"r{r}", "length": f"l{n}"},
        [(r, n)],
        [(r, n), TensorSpec((r, n), idx)],
        _PAST_INT32,
    )
    out += _rows(
        "sorting", "sort", {"rows": "r1", "length": f"l{long}"}, [(1, long)], [(1, long), TensorSpec((1, long), idx)],
        "one segment of 2^27 + 1 elements: a multi-pass radix sort",
    )  # fmt: skip
    out += _rows(
        "sorting", "topk", {"rows": f"r{r}", "length": f"l{n}", "k": f"k{k}"}, [(r, n)],
        [(r, k), TensorSpec((r, k), idx)], _PAST_INT32,
    )  # fmt: skip
    return out


def device_rows() -> list[DeviceRow]:
    """Every row of the device profile, in family order. Pure."""
    return [
        *_elementwise(),
        *_reductions(),
        *_norm(),
        *_matmul(),
        *_linalg(),
        *_conv(),
        *_indexing(),
        *_fft(),
        *_sorting(),
    ]


DEVICE_ROWS: tuple[DeviceRow, ...] = tuple(device_rows())
