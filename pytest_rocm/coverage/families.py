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
        r"geqrf|householder_product|matrix_exp|lstsq|eig\w*|symeig|pca_lowrank|svd_lowrank)$",
    ),
    (
        "attention",
        r"scaled_dot_product_attention|multi_head_attention|MultiheadAttention|Transformer|attention_forward",
    ),
    ("loss", r"loss|Loss$|cross_entropy|^nn\.functional\.(nll|kl_div)"),
    ("rnn", r"^nn\.(RNN|LSTM|GRU)(Cell)?$"),
    ("padding", r"Pad\dd$|^nn\.functional\.pad$|^constant_pad_nd$"),
    ("conv", r"conv|Conv|^nn\.functional\.unfold$"),
    ("pooling", r"pool|Pool"),
    ("interpolation", r"interpolate|upsample|Upsample|grid_sample|affine_grid"),
    (
        "norm",
        r"batch_norm|_norm$|Norm\d?d?$|^nn\.functional\.(layer|batch|group|instance|rms|local_response)_norm|LayerNorm"
        r"|RMSNorm|^renorm$|^nn\.functional\.normalize$|^masked\.normalize$",
    ),
    ("clipping", r"^_foreach_norm$|clip_grad"),
    (
        "matmul",
        r"^(matmul|mm|bmm|addmm|addbmm|baddbmm|addmv|mv|dot|vdot|inner|outer|einsum|tensordot|kron|"
        r"chain_matmul|linalg\.multi_dot|addr|nn\.functional\.linear|nn\.functional\.bilinear|__rmatmul__)$"
        r"|^nn\.(Linear|Bilinear)$|^torch\._scaled_mm|^sparse\.(mm|sampled_addmm)$",
    ),
    ("distance", r"^(cdist|dist)$|^nn\.functional\.(pdist|pairwise_distance|cosine_similarity)$"),
    (
        "sorting",
        r"^(sort|argsort|msort|topk|kthvalue|median|nanmedian|mode|quantile|nanquantile|unique|unique_consecutive|"
        r"searchsorted|bucketize|masked\.median)$",
    ),
    ("histogram", r"^(histc|histogram|histogramdd|bincount)$"),
    (
        "random",
        r"dropout|^(bernoulli|cauchy|exponential|geometric|log_normal|normal|uniform|multinomial|rand\w*)$"
        r"|^nn\.functional\.feature_alpha_dropout$",
    ),
    ("indexing", r"gather|scatter|index_|^take|embedding|Embedding|^put$|masked_|^nonzero|^where$"),
    (
        "reductions",
        r"softmax|Softmax|softmin|Softmin|^(sum|nansum|mean|nanmean|var|std|var_mean|std_mean|prod|cumsum|cumprod|"
        r"logcumsumexp|cummax|cummin|logsumexp|amax|amin|max|min|norm|aminmax|argmax|argmin|count_nonzero|all|any|"
        r"trace|cov|corrcoef|_segment_reduce|trapezoid|trapz|cumulative_trapezoid|masked\.\w+)$",
    ),
    (
        "elementwise",
        r"^nn\.(CELU|ELU|GELU|GLU|Hardshrink|Hardswish|Hardtanh|LeakyReLU|LogSigmoid|Mish|PReLU|ReLU|ReLU6|SELU|SiLU|"
        r"Sigmoid|Softplus|Softshrink|Softsign|Tanh|Tanhshrink|Threshold)$"
        r"|^nn\.functional\.(gelu|glu|hardswish|leaky_relu)$|^(addcdiv|addcmul|lerp|clamp|logaddexp2|cross|diff|"
        r"gradient|jiterator_\w+)$",
    ),
)

#: families the catalogue has no op of, and why their entries are not varied by it
_NOT_IN_CATALOGUE = {
    "loss": "no loss family in the generator (its reductions and softmax rows vary the kernels losses "
    "are built from); the corpus rows reach it",
    "rnn": "no recurrent family in the generator (its matmul rows vary the GEMMs an RNN runs); the corpus rows reach it",
    "padding": "the generator varies reflect/circular padding inside convolutions (conv ops' padding axis), "
    "not the standalone op; the corpus rows reach it",
    "distance": "no distance family in the generator (its matmul and reductions rows vary the kernels); "
    "the corpus rows reach it",
    "histogram": "no histogram family in the generator: counts are exact (integer atomics); the corpus rows reach it",
    "random": "random numbers: a device's stream differs from the CPU's by design, there is no float64 "
    "reference to vary sizes against; the corpus rows reach it",
}

#: entries with no arithmetic a boundary could break (shape, view, copy, creation, comparison): a
#: wrong number there is a wrong copy, which the corpus rows check. An entry that neither a family
#: nor this list places has no place (tests/coverage/test_families.py fails on it)
_NO_FAMILY = (
    r"^(H|T|mH|mT|t|t_copy|__getitem__|alias_copy|as_strided\w*|atleast_\dd|broadcast_\w+|cat|_chunk_cat|chunk|"
    r"column_stack|contiguous|clone|diagonal\w*|dsplit|dstack|expand\w*|flatten|flip\w*|hsplit|hstack|movedim|"
    r"narrow\w*|permute\w*|ravel|repeat|repeat_interleave|reshape\w*|resize_\w*|resolve_\w+|roll|rot90|select|"
    r"slice|split\w*|squeeze\w*|stack|tensor_split|tile|transpose\w*|tril|triu|unbind\w*|unflatten|unfold\w*|"
    r"unsafe_\w+|unsqueeze\w*|view\w*|vsplit|vstack|to|to_sparse|zero_|item|equal|allclose|isin|argwhere|"
    r"unravel_index|sum_to_size|arange|empty\w*|eye|full\w*|linspace|logspace|ones\w*|zeros\w*|new_\w+|"
    r"scalar_tensor|tril_indices|triu_indices|cartesian_prod|combinations|meshgrid|block_diag|diag|diag_embed|"
    r"diagflat)$"
    r"|^signal\.windows\.|^nn\.functional\.(pixel_shuffle|pixel_unshuffle|channel_shuffle|one_hot)$"
)
_NO_FAMILY_WHY = "no boundary family: a shape, view, copy, creation or comparison op (no arithmetic to vary); the corpus rows check it"


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
        # an entry neither a family nor the no-family list names has no place (why is empty)
        return Placement(None, None, _NO_FAMILY_WHY if re.search(_NO_FAMILY, name) else "")
    short = re.sub(r"^(nn\.functional\.|linalg\.|fft\.|special\.)", "", name)
    key = f"{family}/{short}"
    if key in CATALOGUE:
        return Placement(family, key)
    if family == "linalg" and f"linalg/{short.removeprefix('linalg_')}" in CATALOGUE:
        return Placement(family, f"linalg/{short.removeprefix('linalg_')}")
    if family in _NOT_IN_CATALOGUE:
        return Placement(family, None, _NOT_IN_CATALOGUE[family])
    ops = sorted(k.split("/", 1)[1] for k in CATALOGUE if k.startswith(f"{family}/"))
    return Placement(
        family,
        None,
        f"the generator varies {family} through {', '.join(ops)}: their kernels' boundaries, not this "
        "entry's own; the corpus rows reach it",
    )
