"""Which corpus rows a profile has, and the call each row makes (through the adapter, corpus_db).

``ci`` reaches every entry of both databases, in two tiers. *Deep*: a fixed list of ops and
modules, one or more per family where GPU libraries switch kernels (GEMM, convolution, norms,
softmax, reductions and scans, pooling and interpolation, indexing and sorting, activations and
elementwise math, losses, embeddings, RNNs), in fp32/fp16/bf16, and per op and dtype the first
samples of *new* conditions: a sample is kept when its (rank, layout, size class, keyword names)
differ from those already kept, up to ``CI_SAMPLES``. *Thin*: every other OpInfo entry (op and
variant) and every other ModuleInfo entry gets two rows: float32 (``THIN_DTYPES``: else the first
the entry lists on the device) and a half-precision one (``THIN_LOW``), each one sample of a new condition among its first
``THIN_WINDOW`` (``corpus_dims.pick_new_condition``), modules in ``THIN_MODE``. An entry that has no
such row here (no floating dtype, no sample) still gets its row, skipped with the reason: the gate
names every entry. Deterministic for a given torch: the same samples in the same order (OpInfo
seeds each sample).

``full``: every OpInfo entry and every ModuleInfo entry of the installed torch, every sample of
``sample_inputs`` (ids ``s<i>``) and of ``reference_inputs`` (``r<i>``, where the entry has its own),
in fp32/fp16/bf16, modules in train and eval. Select rows on a CPU with ``-k``.

``PYTEST_ROCM_CORPUS_OPS`` (comma-separated globs over entry names: ``nn.functional.conv*,nn.BatchNorm*``)
keeps only those entries, in either profile, before any sample is generated: ``-k`` selects after
collection, and collecting the whole full corpus generates every sample (minutes on 2 cores).
"""

from __future__ import annotations

import fnmatch
import zlib
from collections.abc import Iterator, Sequence
from typing import Any

import corpus_db as db
import corpus_dims as dims_

#: ops of the ci profile, by family (OpInfo names; the variant follows a dot-free ``:``)
CI_OPS: dict[str, tuple[str, ...]] = {
    "gemm": ("matmul", "addmm", "baddbmm", "nn.functional.linear"),
    "conv": ("nn.functional.conv2d", "nn.functional.conv_transpose2d", "nn.functional.conv1d"),
    "norm": (
        "nn.functional.layer_norm",
        "nn.functional.group_norm",
        "nn.functional.batch_norm",
        "nn.functional.rms_norm",
    ),
    "softmax": ("softmax", "log_softmax", "logsumexp"),
    "reduction": ("sum", "mean", "var", "amax", "cumsum", "prod", "linalg.vector_norm"),
    "pool_interp": (
        "nn.functional.avg_pool2d",
        "nn.functional.adaptive_avg_pool2d",
        "nn.functional.interpolate:bilinear",
        "nn.functional.interpolate:nearest",
        "nn.functional.grid_sample",
    ),
    "index_sort": ("index_select", "gather", "scatter_add", "index_add", "sort", "topk", "cat"),
    "elementwise": (
        "nn.functional.gelu",
        "nn.functional.silu",
        "sigmoid",
        "exp",
        "pow",
        "div:no_rounding_mode",
        "addcmul",
        "where",
        "clamp",
    ),
    "loss": ("nn.functional.cross_entropy", "nn.functional.mse_loss", "nn.functional.nll_loss"),
    "embedding": ("nn.functional.embedding",),
}
CI_SAMPLES = 2
#: modules of the ci profile (ModuleInfo names)
CI_MODULES: tuple[str, ...] = (
    "nn.BatchNorm1d",
    "nn.BatchNorm2d",
    "nn.InstanceNorm2d",
    "nn.LayerNorm",
    "nn.LSTM",
    "nn.GRU",
    "nn.Conv2d",
    "nn.ConvTranspose2d",
    "nn.Embedding",
    "nn.MaxPool2d",
    "nn.MultiheadAttention",
)
CI_MODULE_SAMPLES = 2
MODES = ("train", "eval")
#: the thin tier's dtype: the first of these the entry lists on the device
THIN_DTYPES = ("float32", "float16", "bfloat16")
#: and its second row's, where the first is float32: half precision, where ROCm's kernels break
#: most; fp16 or bf16 by ``crc32`` of the entry's name (the other where the entry lists only it),
#: so that both reach every family
THIN_LOW = ("float16", "bfloat16")
#: samples a thin row chooses among: generating every sample of every entry costs ~20 s of CPU
#: (a few entries make 1,000+), the first few hold the conditions the pick looks for
THIN_WINDOW = 8
#: the thin tier's module mode: the forward, the gradients of input and parameters, and the state
#: a step leaves behind (running statistics) are all compared in train mode
THIN_MODE = "train"


def patterns(text: str | None) -> tuple[str, ...]:
    """``"conv*, nn.BatchNorm*"`` -> ("conv*", "nn.BatchNorm*"); empty or None: no filter."""
    return tuple(p.strip() for p in (text or "").split(",") if p.strip())


def wanted(name: str, only: Sequence[str]) -> bool:
    return not only or any(fnmatch.fnmatchcase(name, p) for p in only)


def ci_ops() -> list[tuple[str, str]]:
    """(name, variant) of the ci ops, in family order."""
    out = []
    for names in CI_OPS.values():
        for spec in names:
            name, _, variant = spec.partition(":")
            out.append((name, variant or "default"))
    return out


# ---- OpInfo rows --------------------------------------------------------------------------------
def opinfo_rows(scale: str, device_type: str, backend: str, only: Sequence[str] = ()) -> list[db.Row]:
    """Every OpInfo row of the profile (entries matching ``only``, when given); rows that cannot run
    carry the reason (never an exception)."""
    try:
        table = db.entries("opinfo")
    except db.Unavailable as exc:
        names = ci_ops() if scale == "ci" else [("corpus", "default")]
        return [db.Row("opinfo", n, v, d, db.NO_SAMPLE, problem=str(exc)) for n, v in names for d in db.DTYPES]
    keys = [k for k in (ci_ops() if scale == "ci" else sorted(table)) if wanted(k[0], only)]
    limit = CI_SAMPLES if scale == "ci" else None
    rows: list[db.Row] = []
    if scale == "ci":  # the thin tier: every other entry, float32 and half precision
        deep = set(ci_ops())
        for name, variant in sorted(k for k in table if k not in deep and wanted(k[0], only)):
            rows.extend(_thin_op_rows(table[(name, variant)], name, variant, device_type, backend))
    for name, variant in keys:
        entry = table.get((name, variant))
        for dtype in db.DTYPES:
            if entry is None:
                why = f"OpInfo has no entry {name!r} (variant {variant!r}) in this torch: the corpus changed"
                rows.append(db.Row("opinfo", name, variant, dtype, db.NO_SAMPLE, problem=why))
                continue
            rows.extend(_op_rows(entry, name, variant, dtype, limit, scale == "full"))
    return rows


def _op_rows(entry: Any, name: str, variant: str, dtype: str, limit: int | None, refs: bool) -> Iterator[db.Row]:
    sources = ["s"] + (["r"] if refs and getattr(entry, "reference_inputs_func", None) is not None else [])
    for source in sources:
        try:
            samples = db.op_samples(name, variant, dtype, source)
            dims = [(i, _op_dims(s, dtype, variant, f"{source}{i}")) for i, s in enumerate(samples)]
        except Exception as exc:  # the entry's fields or its sample function changed
            why = f"OpInfo entry {name!r} changed in this torch: {db.first_line(exc)}"
            yield db.Row("opinfo", name, variant, dtype, f"{source}-{db.NO_SAMPLE}", problem=why)
            continue
        for i in dims_.pick_diverse(iter(dims), limit):
            yield db.Row(
                "opinfo", name, variant, dtype, f"{source}{i}", dims=dims[i][1], entry_class=type(entry).__name__
            )


def _thin_op_rows(entry: Any, name: str, variant: str, device_type: str, backend: str) -> list[db.Row]:
    """The thin tier's rows of one entry: float32 (else the first of ``THIN_DTYPES`` it lists) and a
    half-precision dtype, one sample of a new condition each (another one for the second where
    the entry has another); a row that cannot run here says why (``problem``)."""
    key = f"{name}.{variant}"
    dtype = next((d for d in THIN_DTYPES if _lists(entry, device_type, backend, d)), None)
    if dtype is None:
        why = f"OpInfo lists no {'/'.join(THIN_DTYPES)} for {name} on {backend}: the corpus compares floating results"
        return [db.Row("opinfo", name, variant, THIN_DTYPES[0], db.NO_SAMPLE, problem=why)]
    first = _thin_op_row(entry, name, variant, dtype, key, ())
    low = _low(key, lambda d: _lists(entry, device_type, backend, d)) if dtype == THIN_DTYPES[0] else None
    if low is None or first.problem is not None:
        return [first]
    return [first, _thin_op_row(entry, name, variant, low, key, (int(first.sample[1:]),))]


def _low(key: str, lists: Any) -> str | None:
    """The second thin row's dtype: ``THIN_LOW`` rotated by the entry's name, the other where the
    entry lists only that; None where it lists neither."""
    turn = zlib.crc32(key.encode()) % len(THIN_LOW)
    return next((d for d in (*THIN_LOW[turn:], *THIN_LOW[:turn]) if lists(d)), None)


def _thin_op_row(entry: Any, name: str, variant: str, dtype: str, key: str, taken: tuple[int, ...]) -> db.Row:
    try:
        samples = db.op_samples(name, variant, dtype, "s", THIN_WINDOW)
        dims = [_op_dims(s, dtype, variant, f"s{i}") for i, s in enumerate(samples)]
    except Exception as exc:
        why = f"OpInfo entry {name!r} changed in this torch: {db.first_line(exc)}"
        return db.Row("opinfo", name, variant, dtype, f"s-{db.NO_SAMPLE}", problem=why)
    i = dims_.pick_new_condition(dims, key, taken)
    if i is None:
        why = f"OpInfo entry {name!r} makes no {dtype} sample on the CPU"
        return db.Row("opinfo", name, variant, dtype, db.NO_SAMPLE, problem=why)
    return db.Row(
        "opinfo", name, variant, dtype, f"s{i}", dims=dims[i], entry_class=type(entry).__name__, window=THIN_WINDOW
    )


def _lists(entry: Any, device_type: str, backend: str, dtype: str) -> bool:
    try:
        return db.supported(entry, device_type, backend, dtype)
    except Exception:  # the entry's dtype fields changed: let the row find out and say so
        return dtype == THIN_DTYPES[0]


def _op_dims(sample: Any, dtype: str, variant: str, sample_id: str) -> dict[str, str]:
    return dims_.sample_dims(sample.input, (*sample.args, sample.kwargs), dtype, variant, sample_id)


# ---- ModuleInfo rows ----------------------------------------------------------------------------
def moduleinfo_rows(scale: str, only: Sequence[str] = ()) -> list[db.Row]:
    """Every ModuleInfo row of the profile, train and eval (entries matching ``only``, when given)."""
    try:
        table = db.entries("moduleinfo")
    except db.Unavailable as exc:
        names = list(CI_MODULES) if scale == "ci" else ["corpus"]
        return [
            db.Row("moduleinfo", n, m, d, db.NO_SAMPLE, problem=str(exc))
            for n in names
            for m in MODES
            for d in db.DTYPES
        ]
    names = [n for n in (list(CI_MODULES) if scale == "ci" else sorted(n for n, _ in table)) if wanted(n, only)]
    limit = CI_MODULE_SAMPLES if scale == "ci" else None
    rows: list[db.Row] = []
    if scale == "ci":  # the thin tier: every other module, float32 and half precision
        for n in sorted(n for n, _ in table if n not in CI_MODULES and wanted(n, only)):
            rows.extend(_thin_module_rows(n))
    for name in names:
        entry = table.get((name, "default"))
        for mode in MODES:
            for dtype in db.DTYPES:
                if entry is None:
                    why = f"ModuleInfo has no entry {name!r} in this torch: the corpus changed"
                    rows.append(db.Row("moduleinfo", name, mode, dtype, db.NO_SAMPLE, problem=why))
                    continue
                rows.extend(_module_rows(name, mode, dtype, limit))
    return rows


def _module_rows(name: str, mode: str, dtype: str, limit: int | None) -> Iterator[db.Row]:
    try:
        samples = db.module_samples(name, dtype, mode == "train")
        dims = [(i, _module_dims(s, dtype, mode, f"s{i}")) for i, s in enumerate(samples)]
    except Exception as exc:
        why = f"ModuleInfo entry {name!r} changed in this torch: {db.first_line(exc)}"
        yield db.Row("moduleinfo", name, mode, dtype, db.NO_SAMPLE, problem=why)
        return
    for i in dims_.pick_diverse(iter(dims), limit):
        yield db.Row("moduleinfo", name, mode, dtype, f"s{i}", dims=dims[i][1])


def _thin_module_rows(name: str) -> list[db.Row]:
    """float32 and a half-precision dtype (``_low``: every module runs both), train mode."""
    first = _thin_module_row(name, THIN_DTYPES[0], ())
    if first.problem is not None:
        return [first]
    low = _low(name, lambda d: True)
    assert low is not None
    return [first, _thin_module_row(name, low, (int(first.sample[1:]),))]


def _thin_module_row(name: str, dtype: str, taken: tuple[int, ...]) -> db.Row:
    mode = THIN_MODE
    try:
        samples = db.module_samples(name, dtype, mode == "train")
        dims = [_module_dims(s, dtype, mode, f"s{i}") for i, s in enumerate(samples)]
    except Exception as exc:
        why = f"ModuleInfo entry {name!r} changed in this torch: {db.first_line(exc)}"
        return db.Row("moduleinfo", name, mode, dtype, db.NO_SAMPLE, problem=why)
    i = dims_.pick_new_condition(dims, name, taken)
    if i is None:
        why = f"ModuleInfo entry {name!r} makes no {dtype} forward input"
        return db.Row("moduleinfo", name, mode, dtype, db.NO_SAMPLE, problem=why)
    return db.Row("moduleinfo", name, mode, dtype, f"s{i}", dims=dims[i])


def _module_dims(sample: db.ModuleSample, dtype: str, mode: str, sample_id: str) -> dict[str, str]:
    dims = dims_.sample_dims(sample.forward_args, (sample.forward_kwargs,), dtype, mode, sample_id)
    dims["mode"] = mode
    ctor = [k for k in sample.constructor_kwargs]
    if ctor:
        dims["constructor"] = ",".join(sorted(ctor))
    return dims
