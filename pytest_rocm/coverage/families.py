"""Which boundary family each entry of PyTorch's databases belongs to, and whether the generator
varies it: derived from the databases' own names (OpInfo's ``op_db``, ModuleInfo's ``module_db``,
OptimInfo's ``optim_db``) so that an op family cannot be forgotten. Every entry gets a
:class:`Placement`: the catalogue op that varies it (``conv/conv2d``), or the family it belongs to
and why the generator does not vary it, or why it has no family at all. The coverage map lists
every corpus op the generator does not vary, with that reason (docs/coverage.md).

Pure (no torch): names in, placements out; tests/coverage/test_families.py runs it over the
installed torch's databases and fails on an entry it cannot place.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pytest_rocm.coverage.catalogue import CATALOGUE
from pytest_rocm.coverage.catalogue_more import OPTIMIZERS

__all__ = ["NOT_STEPPED", "Placement", "place"]


@dataclass(frozen=True)
class Placement:
    #: the generator's family (``conv``), None when no family fits the entry
    family: str | None
    #: the catalogue op that varies this entry (``conv/conv2d``), None when none does
    varied_as: str | None
    #: why it is not varied (empty when it is)
    why: str = ""


#: optimizers of optim_db the generator does not step, and why
NOT_STEPPED = {
    "LBFGS": "closure-driven line search, no foreach or fused implementation to force",
    "SparseAdam": "sparse gradients only (a dense-parameter step is not what it runs)",
    "Muon": "no foreach or fused implementation; 2-d parameters only (Newton-Schulz iterations)",
}

#: (family, pattern over the entry's name): first match wins; the family's catalogue ops are
#: matched by name first (``nn.functional.conv2d`` -> ``conv/conv2d``)
_FAMILIES: tuple[tuple[str, str], ...] = (
    ("fft", r"^fft\.|^(stft|istft)$"),
    (
        "linalg",
        r"^linalg\.|^(cholesky\w*|qr|svd|pinverse|inverse|det|logdet|slogdet|triangular_solve|lu\w*|ormqr|"
        r"geqrf|householder_product|matrix_exp|lstsq|eig\w*|symeig)$",
    ),
    ("attention", r"scaled_dot_product_attention|multi_head_attention|MultiheadAttention|Transformer"),
    ("conv", r"conv|Conv"),
    ("pooling", r"pool|Pool"),
    ("interpolation", r"interpolate|upsample|Upsample|grid_sample|affine_grid"),
    (
        "norm",
        r"batch_norm|_norm$|Norm\d?d?$|^nn\.functional\.(layer|batch|group|instance|rms|local_response)_norm|LayerNorm|RMSNorm",
    ),
    ("clipping", r"^_foreach_norm$|clip_grad"),
    (
        "matmul",
        r"^(matmul|mm|bmm|addmm|addbmm|baddbmm|addmv|mv|dot|vdot|inner|outer|einsum|tensordot|kron|"
        r"chain_matmul|linalg\.multi_dot|addr|nn\.functional\.linear|nn\.functional\.bilinear|__rmatmul__)$|^nn\.(Linear|Bilinear)$",
    ),
    ("indexing", r"gather|scatter|index_|^take|embedding|Embedding|^put$|masked_|^nonzero|^where$"),
    (
        "reductions",
        r"softmax|Softmax|^(sum|nansum|mean|nanmean|var|std|var_mean|std_mean|prod|cumsum|cumprod|"
        r"logcumsumexp|cummax|cummin|logsumexp|amax|amin|max|min|norm|aminmax|argmax|argmin|count_nonzero|all|any)$",
    ),
)


def place(kind: str, name: str, info_class: str = "") -> Placement:
    """The entry's placement. ``kind``: ``opinfo`` / ``moduleinfo`` / ``optiminfo``; ``info_class``:
    the OpInfo subclass (``UnaryUfuncInfo``, ``BinaryUfuncInfo``, ``ReductionOpInfo``,
    ``SpectralFuncInfo``...), which places the elementwise and reduction ops by what they are."""
    if kind == "optiminfo":
        if name in OPTIMIZERS:
            return Placement("optimizer", f"optimizer/{name.lower()}")
        return Placement("optimizer", None, NOT_STEPPED.get(name, "not in the generator's optimizer list"))
    family = next((f for f, pattern in _FAMILIES if re.search(pattern, name)), None)
    if family is None and info_class in ("UnaryUfuncInfo", "BinaryUfuncInfo"):
        family = "elementwise"
    if family is None and info_class == "ReductionOpInfo":
        family = "reductions"
    if family is None and info_class == "SpectralFuncInfo":
        family = "fft"
    if family is None:
        return Placement(None, None, "no boundary family: shape, view, creation or other op; the corpus rows reach it")
    short = re.sub(r"^(nn\.functional\.|linalg\.|fft\.|special\.)", "", name)
    key = f"{family}/{short}"
    if key in CATALOGUE:
        return Placement(family, key)
    if family == "linalg" and f"linalg/{short.removeprefix('linalg_')}" in CATALOGUE:
        return Placement(family, f"linalg/{short.removeprefix('linalg_')}")
    ops = sorted(k.split("/", 1)[1] for k in CATALOGUE if k.startswith(f"{family}/"))
    return Placement(
        family,
        None,
        f"the generator varies {family} through {', '.join(ops)}: their kernels' boundaries, not this "
        "entry's own; the corpus rows reach it",
    )
