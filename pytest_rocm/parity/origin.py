"""Where a parity call's inputs came from, for its reproducer: a corpus row names its sample in
torch's own test database (OpInfo/ModuleInfo) so that ``rocm-compat repro`` writes a script that
rebuilds the sample by op, variant, dtype and sample index of the torch that made it
(docs/report.md, ``repro``). The bundled corpus suite sets it around its parity call
(``suite_support.reproducer_sample``); nothing else does.

A context variable, not a ``ParityOptions`` field: it says nothing about how the call is judged,
and a failure's spec reads it once, when the check fails.
"""

from __future__ import annotations

import contextlib
import contextvars
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

_ORIGIN: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("pytest_rocm_origin", default=None)
#: an entry's name or variant (``nn.functional.interpolate``, ``nearest-exact``)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,99}")
_SAMPLE = re.compile(r"[sr][0-9]{1,6}")


def reproducer_sample(
    db: str, name: str, variant: str, dtype: str, sample: str, torch_version: str, passed: Sequence[int]
) -> contextlib.AbstractContextManager[None]:
    """Parity calls in the block come from sample ``sample`` (``s3``: ``sample_inputs``' 4th,
    ``r3``: ``reference_inputs``') of the ``db`` (``opinfo`` / ``moduleinfo``) entry ``name``
    and ``variant`` (a module row's: ``train``/``eval``) in ``dtype``, made by ``torch_version``;
    ``passed``: the indices, among the sample's flattened leaves, of the tensors the call passes.
    ValueError (one line), when called, for a field that is not one."""
    if db not in ("opinfo", "moduleinfo"):
        raise ValueError(f"reproducer_sample: db {db!r} is not opinfo or moduleinfo")
    for key, text, pattern in (("name", name, _WORD), ("variant", variant, _WORD), ("sample", sample, _SAMPLE)):
        if not isinstance(text, str) or not pattern.fullmatch(text):
            raise ValueError(f"reproducer_sample: {key} {text!r:.60} is not one of a corpus row")
    origin: dict[str, Any] = {"db": db, "name": name, "variant": variant, "dtype": dtype, "sample": sample}
    origin |= {"torch": str(torch_version), "passed": [int(i) for i in passed]}
    return _named(origin)


@contextlib.contextmanager
def _named(origin: dict[str, Any]) -> Iterator[None]:
    token = _ORIGIN.set(origin)
    try:
        yield
    finally:
        _ORIGIN.reset(token)


def current() -> Mapping[str, Any] | None:
    """The sample the running parity call's inputs came from, or None."""
    origin = _ORIGIN.get()
    return dict(origin) if origin is not None else None
