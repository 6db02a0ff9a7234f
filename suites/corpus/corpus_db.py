"""The one adapter over PyTorch's internal test databases: OpInfo (``op_db``) and ModuleInfo (``module_db``).

Both live in ``torch.testing._internal`` and change between torch releases (entries are renamed,
added, split into variants; attributes move). Everything the corpus suite reads from them goes
through this module, and every way of reading can fail softly: an entry that is missing, or whose
shape changed in the installed torch, becomes a :class:`Row` whose ``problem`` says so, and the test
skips with that sentence. Nothing here raises at collection.

The databases are imported on first use (``load``), never when pytest loads the plugin: the import
takes ~5 s and needs ``expecttest``. Importing ``common_utils`` freezes ``torch.backends`` flags
(``disable_global_flags``) for the rest of the process; :func:`load` undoes that so the other suites
that set flags keep working in the same session.
"""

from __future__ import annotations

import contextlib
import importlib
import itertools
import random
import sys
import unittest
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any

import torch

OPINFO_MODULE = "torch.testing._internal.common_methods_invocations"
MODULEINFO_MODULE = "torch.testing._internal.common_modules"
#: the dtypes of the corpus rows: what parity checks on a device
DTYPES: tuple[str, ...] = ("float32", "float16", "bfloat16")
#: the OpInfo test whose known skips and tolerance overrides apply to a device-vs-CPU comparison
COMPARE_TEST = ("TestCommon", "test_compare_cpu")
MODULE_TEST = ("TestModule", "test_forward")
NO_SAMPLE = "none"


@dataclass(frozen=True)
class Row:
    """One corpus row as collection sees it: its name parts, the dimensions it exercises, and the
    reason it cannot run here (None: it can)."""

    kind: str  # "opinfo" | "moduleinfo"
    name: str  # op name ("nn.functional.conv2d") or module name ("nn.BatchNorm2d")
    variant: str  # OpInfo's variant_test_name ("default" when empty); for modules the mode
    dtype: str
    sample: str  # "s3" (sample_inputs #3), "r7" (reference_inputs #7), "none"
    dims: dict[str, str] = field(default_factory=dict, compare=False, hash=False)
    problem: str | None = field(default=None, compare=False, hash=False)
    #: the database entry's class (``UnaryUfuncInfo``, ...): the coverage map places the op by it
    entry_class: str = field(default="", compare=False, hash=False)
    #: how many samples the row's sample list holds (None: all): a thin ci row generates only the
    #: first few, at collection and again at the call (the same list: seeded)
    window: int | None = field(default=None, compare=False, hash=False)

    @property
    def feature(self) -> str:
        """``opinfo/<op>[<variant>-<dtype>-<sample id>]`` (module rows: ``moduleinfo/<module>[<mode>-...]``)."""
        return f"{self.kind}/{self.name}[{self.variant}-{self.dtype}-{self.sample}]"

    @property
    def id(self) -> str:
        return f"{self.name}-{self.variant}-{self.dtype}-{self.sample}"

    def origin(self, passed: Sequence[int]) -> Any:
        """The block in which this row's parity call names its sample (``passed``: the indices of the
        tensors it passes among the sample's leaves), so that a failure's reproducer rebuilds it."""
        from pytest_rocm.suite_support import reproducer_sample

        try:
            return reproducer_sample(
                self.kind, self.name, self.variant, self.dtype, self.sample, torch.__version__, passed
            )
        except ValueError:  # a name a later torch spells otherwise: the row runs, its reproducer is not named
            return contextlib.nullcontext()

    def info(self) -> dict[str, Any]:
        """What the row records (``record_property(INFO_PROPERTY, ...)``): the coverage map reads it."""
        info: dict[str, Any] = {"op": self.name, "dims": dict(self.dims), "corpus": self.kind}
        if self.entry_class:
            info["entry_class"] = self.entry_class
        return info


class Unavailable(Exception):
    """A database, an entry or an attribute the adapter needs is not what it expects."""


# ---- loading ------------------------------------------------------------------------------------
@cache
def load(kind: str) -> Any:
    """The database list (``op_db`` / ``module_db``); Unavailable naming why not."""
    module_name, attr = (OPINFO_MODULE, "op_db") if kind == "opinfo" else (MODULEINFO_MODULE, "module_db")
    frozen = torch.backends.flags_frozen()
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # ImportError (expecttest missing, module moved) or an error inside it
        raise Unavailable(f"cannot import {module_name} in torch {torch.__version__}: {exc}") from None
    finally:
        if not frozen:  # common_utils freezes torch.backends flags at import: keep them settable
            torch.backends.__dict__["__allow_nonbracketed_mutation_flag"] = True
    db = getattr(module, attr, None)
    if not isinstance(db, (list, tuple)):
        raise Unavailable(f"{module_name} in torch {torch.__version__} has no list {attr}")
    return db


@cache
def entries(kind: str) -> dict[tuple[str, str], Any]:
    """{(name, variant): entry} of a database; the variant is ``default`` for an unnamed one."""
    out: dict[tuple[str, str], Any] = {}
    for entry in load(kind):
        try:
            key = (_name(kind, entry), _variant(kind, entry))
        except Exception:  # an entry without the fields: left out (counted as changed by callers)
            continue
        out.setdefault(key, entry)
    return out


def _name(kind: str, entry: Any) -> str:
    return str(entry.name)


def _variant(kind: str, entry: Any) -> str:
    if kind == "moduleinfo":
        return "default"
    return str(getattr(entry, "variant_test_name", "") or "default")


def torch_dtype(name: str) -> torch.dtype:
    value = getattr(torch, name)
    assert isinstance(value, torch.dtype), name
    return value


# ---- what an entry says about a device ----------------------------------------------------------
def supported(entry: Any, device_type: str, backend: str, dtype: str, backward: bool = False) -> bool:
    """The entry lists ``dtype`` for this device (ROCm reads OpInfo's ``dtypesIfROCM`` when it has one)."""
    dt = torch_dtype(dtype)
    if device_type == "cuda" and backend == "rocm" and hasattr(entry, "dtypesIf"):
        listed = entry.dtypesIf.get("rocm") or entry.dtypesIf.get("cuda") or entry.dtypes
        if backward:
            listed = getattr(entry, "backward_dtypesIfROCM", None) or listed
        return dt in set(listed)
    getter = entry.supported_backward_dtypes if backward else entry.supported_dtypes
    return dt in set(getter(device_type))


def decorations(entry: Any, test: tuple[str, str], device_type: str, dtype: str) -> list[Any]:
    """The decorators the entry's DecorateInfos apply to ``test`` on this device and dtype."""
    found: list[Any] = []
    for info in getattr(entry, "decorators", ()) or ():
        try:
            active = info.is_active(test[0], test[1], device_type, torch_dtype(dtype), {})
        except Exception:
            active = False
        if active:
            found.extend(info.decorators)
    return found


def known_skip(decorators: Sequence[Any]) -> str | None:
    """The reason of an unconditional ``unittest.skip`` / ``expectedFailure`` among an entry's
    decorators. Conditional ones (``skipMPS``, ``skipCUDAIfRocm`` ...) decide inside a test class we
    do not run, so they are left to the dtype and device lists."""
    for dec in decorators:
        if dec is unittest.expectedFailure:
            return "expected to fail (unittest.expectedFailure)"
        if getattr(dec, "__qualname__", "") == "skip.<locals>.decorator":
            cells = [c.cell_contents for c in (getattr(dec, "__closure__", None) or ()) if _safe(c)]
            reason = next((c for c in cells if isinstance(c, str)), "no reason given")
            return f"unittest.skip({reason!r})"
    return None


def _safe(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018  (an empty cell raises)
    except ValueError:
        return False
    return True


def tolerance_overrides(decorators: Sequence[Any], dtype: str) -> dict[str, float]:
    """``{"rtol": ..., "atol": ...}`` from a ``toleranceOverride`` for ``dtype`` among the decorators."""
    dt = torch_dtype(dtype)
    for dec in decorators:
        table = getattr(dec, "d", None)
        if isinstance(table, dict) and dt in table:
            tol = table[dt]
            return {"rtol": float(tol.rtol), "atol": float(tol.atol)}
    return {}


# ---- samples ------------------------------------------------------------------------------------
def seeded(seed: int) -> None:
    torch.manual_seed(seed)
    random.seed(seed)


@lru_cache(maxsize=16)  # rows of one op run one after another: keep the last few ops' samples
def op_samples(name: str, variant: str, dtype: str, source: str, window: int | None = None) -> list[Any]:
    """The entry's SampleInputs on the CPU (``source``: ``s`` sample_inputs, ``r`` reference_inputs),
    generated with gradients where the op has them; the same list every call (seeded). ``window``:
    only the first that many (a generator stops there: some entries make 1,000+ samples, seconds)."""
    entry = entries("opinfo")[(name, variant)]
    grad = bool(getattr(entry, "supports_autograd", False))
    make = entry.sample_inputs if source == "s" else entry.reference_inputs
    with _no_test_lookup():
        for requires_grad in (grad, False) if grad else (False,):
            seeded(0)
            try:
                return list(itertools.islice(make("cpu", torch_dtype(dtype), requires_grad=requires_grad), window))
            except Exception:
                if not requires_grad:
                    raise
    raise AssertionError("unreachable")  # the last try re-raises


#: what OpInfo's sample iterators call by their module's global name, and what we give them
_LOOKUP_MODULES = ("torch.testing._internal.common_utils", "torch.testing._internal.opinfo.core")


@contextmanager
def _no_test_lookup() -> Iterator[None]:
    """Two costs of OpInfo's sample iterators that buy nothing outside PyTorch's own test classes:
    they look for the running ``unittest`` test (its per-sample skips, a seed from its name) by
    walking the stack with ``inspect.stack()``, which reads the source of every frame (under
    pytest's deep stack ~0.1 s of CPU per sample list, most of the ci collection); no unittest
    test runs here, so the answer is None: given at once. And they seed every sample with
    ``torch.manual_seed``, which on a build without a GPU queues a lazy seed per device type with
    a formatted stack each (ms per sample, and the queue grows); the samples are made on the CPU,
    so seeding the CPU generator (and ``random``, numpy, as ``set_rng_seed`` does) gives the same
    samples."""
    saved = []
    for module in map(sys.modules.get, _LOOKUP_MODULES):
        for attr, fast in (("extract_test_fn", _no_test), ("set_rng_seed", _seed_cpu)):
            if module is not None and hasattr(module, attr):
                saved.append((module, attr, getattr(module, attr)))
                setattr(module, attr, fast)
    try:
        yield
    finally:
        for module, attr, original in saved:
            setattr(module, attr, original)


def _no_test() -> None:
    return None


def _seed_cpu(seed: int | None = None) -> None:
    utils = sys.modules["torch.testing._internal.common_utils"]
    seed = utils.SEED if seed is None else seed
    torch.default_generator.manual_seed(seed)
    random.seed(seed)
    if getattr(utils, "TEST_NUMPY", False):
        import numpy

        numpy.random.seed(seed)


@dataclass
class ModuleSample:
    constructor_args: tuple[Any, ...]
    constructor_kwargs: dict[str, Any]
    forward_args: tuple[Any, ...]
    forward_kwargs: dict[str, Any]
    desc: str


@lru_cache(maxsize=8)
def module_samples(name: str, dtype: str, training: bool) -> list[ModuleSample]:
    """The ModuleInfo entry's constructor and forward inputs on the CPU, seeded."""
    entry = entries("moduleinfo")[(name, "default")]
    seeded(0)
    made = entry.module_inputs_func(
        entry, device="cpu", dtype=torch_dtype(dtype), requires_grad=True, training=training
    )
    out = []
    for m in made:
        if m.forward_input is None:
            continue
        c, f = m.constructor_input, m.forward_input
        out.append(ModuleSample(tuple(c.args), dict(c.kwargs), tuple(f.args), dict(f.kwargs), str(m.desc or "")))
    return out


def batched(items: Sequence[Any], n: int) -> Iterator[tuple[Any, ...]]:
    it = iter(items)
    while chunk := tuple(itertools.islice(it, n)):
        yield chunk


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:160]}" if text else type(exc).__name__


Call = Callable[..., Any]
