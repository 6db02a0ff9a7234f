"""A test's row in the compatibility table: its ``suite`` (the table's section) and ``feature``.

Two naming schemes, told apart by the node id alone (pure, so ``report.load`` names old records
the same way):

- **bundled** suites (a ``suites/``/``_suites/`` folder in the path, or a bundled suite's folder
  first): ``suites/operators/test_gemm.py::test_matmul[bf16]`` -> section ``operators``, row
  ``operators/matmul[bf16]``: rows that stay the same when a test moves to another module.
- **foreign** suites (a library's own tests, vetted with ``--rocm-report``): the row keeps the module
  path, ``tests/unittests/regression/test_pearson::TestPearson::test_x[float32]``, and the section
  is the module's folder. Twelve torchmetrics modules each have a ``test_differentiability``: named
  after the test alone, their rows collided, and a new same-named test elsewhere made ``diff`` see
  the old one as missing.

In rows named from the node id (not from a ``rocm_feature`` marker), a device token among the
parameters is replaced by ``device``: kornia's ``[cpu-float32]`` and ``[cuda-float32]`` are the same
check run in two places, and a CPU column and a GPU column must share its row. The tokens are the
``rocm_device_ids`` option (``off``: ids kept as they are).

Within one run both halves of such a test may run (PyG's ``withCUDA``: ``test[cpu]`` and
``test[cuda:0]`` on any GPU machine): one row, two results. Each record keeps the device it ran on
as ``device_variant`` (:func:`device_variant_of`: ``cpu``, ``cuda``; the index dropped, so
``cuda:0`` and ``cuda:3`` are one half), and ``diff`` compares each half with its own.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

SUITE_FOLDERS = ("suites", "_suites")
#: the bundled suites' folders (tests/report checks this against suites/): a node id starting with
#: one is a bundled suite run from inside suites/
BUNDLED_SUITES = ("corpus", "distributed", "known_issues", "libraries", "models", "operators")
#: torch's device types a parametrize id names where the test runs (``torch.device`` types)
DEFAULT_DEVICE_TOKENS: tuple[str, ...] = ("cpu", "cuda", "hip", "mps", "xpu")
#: what a device token becomes in a row name
DEVICE_PLACEHOLDER = "device"


def _split(nodeid: str) -> tuple[list[str], str, list[str]]:
    """(folders, module file, names after the module) of a node id."""
    path, _, rest = nodeid.partition("::")
    parts = path.split("/")
    return parts[:-1], parts[-1], rest.split("::") if rest else []


def _stem(name: str) -> str:
    """``PurePath(name).stem`` for one path part, without building a path (this runs once per
    test: the report's per-test cost)."""
    dot = name.rfind(".")
    return name[:dot] if 0 < dot < len(name) - 1 else name


def _is_bundled(folders: list[str]) -> bool:
    return any(f in SUITE_FOLDERS for f in folders[:-1]) or (bool(folders) and folders[0] in BUNDLED_SUITES)


def is_bundled(nodeid: str) -> bool:
    return _is_bundled(_split(nodeid)[0])


def _suite(folders: list[str], module: str) -> str:
    for i, part in enumerate(folders[:-1]):
        if part in SUITE_FOLDERS:
            return folders[i + 1]
    if folders:
        return folders[0] if folders[0] in BUNDLED_SUITES else "/".join(folders)
    return _stem(module).removeprefix("test_")


def suite_of(nodeid: str) -> str:
    """Bundled: the folder under suites/ (``operators``). Foreign: the module's folder
    (``tests/unittests/regression``). A module at the root: its name without ``test_``."""
    folders, module, _ = _split(nodeid)
    return _suite(folders, module)


def parse_device_tokens(text: str) -> tuple[str, ...]:
    """``cpu,cuda`` -> ("cpu", "cuda"); ``off`` -> (); ValueError on a token that is not a name."""
    value = str(text).strip().lower()
    if value in ("off", "none", ""):
        return ()
    tokens = tuple(t.strip() for t in value.split(",") if t.strip())
    bad = [t for t in tokens if not re.fullmatch(r"[a-z][a-z0-9_]*", t)]
    if bad:
        raise ValueError(f"bad device token {bad[0]!r}: expected names like cpu,cuda (or off)")
    return tokens


def normalise_params(params: str, tokens: Iterable[str]) -> str:
    """``[cuda:0-float32]`` -> ``[device-float32]``: a device token (with an index: ``cuda:0``,
    ``cuda0``) that is a whole ``-``-separated part of the ids becomes ``device``."""
    if not params:
        return params
    pattern = _device_pattern(tuple(tokens))
    return pattern.sub(DEVICE_PLACEHOLDER, params) if pattern is not None else params


@lru_cache(maxsize=16)
def _device_pattern(tokens: tuple[str, ...]) -> re.Pattern[str] | None:
    """The compiled device-token pattern: one per token set (a session has one), not one per test."""
    names = "|".join(re.escape(t) for t in tokens)
    return re.compile(rf"(?<=[\[\-])(?:{names})(?::?[0-9]+)?(?=[\-\]])") if names else None


def device_variant_of(
    nodeid: str, marker_name: str | None = None, device_tokens: Iterable[str] = DEFAULT_DEVICE_TOKENS
) -> str | None:
    """The device a row's normalised token stood for: ``t.py::test_b[cuda:0-float16]`` -> ``cuda``;
    None where the row name kept its ids (a bundled suite, a marker's name, no device token)."""
    return row_facts(nodeid, marker_name, device_tokens)[2]


def _variant(params: str, tokens: tuple[str, ...]) -> str | None:
    pattern = _device_pattern(tokens)
    found = pattern.search(params) if pattern is not None else None
    if found is None:
        return None
    text = found.group(0)  # the token and its index: the longest token it begins with is the device
    return max((t for t in tokens if re.fullmatch(re.escape(t) + ":?[0-9]*", text)), key=len)


def feature_of(
    nodeid: str, marker_name: str | None = None, device_tokens: Iterable[str] = DEFAULT_DEVICE_TOKENS
) -> str:
    """``suites/operators/test_matmul.py::test_matmul[bfloat16]`` -> ``operators/matmul[bfloat16]``;
    ``tests/unit/test_a.py::test_b[cpu]`` -> ``tests/unit/test_a::test_b[device]``; a marker's name wins."""
    return row_of(nodeid, marker_name, device_tokens)[0]


def row_of(
    nodeid: str, marker_name: str | None = None, device_tokens: Iterable[str] = DEFAULT_DEVICE_TOKENS
) -> tuple[str, str]:
    """(:func:`feature_of`, :func:`suite_of`) of a node id."""
    feature, suite, _ = row_facts(nodeid, marker_name, device_tokens)
    return feature, suite


def row_facts(
    nodeid: str, marker_name: str | None = None, device_tokens: Iterable[str] = DEFAULT_DEVICE_TOKENS
) -> tuple[str, str, str | None]:
    """(:func:`feature_of`, :func:`suite_of`, :func:`device_variant_of`) of a node id, splitting it
    once: the report's per-test call. What depends on the module alone (its folders, section,
    whether it is bundled, a foreign row's prefix) is worked out once per module: the per-test
    part is the names after it (this runs once per test, cache-cold: the report's per-test cost)."""
    tokens = device_tokens if isinstance(device_tokens, tuple) else tuple(device_tokens)
    path, _, rest = nodeid.partition("::")
    suite, bundled, prefix, stem = _module_facts(path)
    if marker_name:
        return marker_name, suite, None
    names = rest.split("::") if rest else [stem]
    last = names[-1]
    params = ""
    if last.endswith("]"):
        bracket = last.find("[")
        if bracket >= 0:
            last, params = last[:bracket], last[bracket:]
    variant = None
    if params and not bundled:
        pattern = _device_pattern(tokens)
        found = pattern.search(params) if pattern is not None else None
        if found is not None:  # most ids name no device: one search, no substitution
            if rest:
                variant = _variant(params, tokens)
            params = normalise_params(params, tokens)
    if prefix is not None:
        return prefix + "::" + "::".join([*names[:-1], last + params]), suite, variant
    scope = [n.removeprefix("Test") or n for n in names[:-1]]
    name = ".".join([*scope, last.removeprefix("test_")])
    return f"{suite}/{name}{params}", suite, variant


@lru_cache(maxsize=1024)
def _module_facts(path: str) -> tuple[str, bool, str | None, str]:
    """(section, bundled, the row prefix of a foreign module in a folder or None, the module's
    stem) of a node id's path part: the same for every test of a module."""
    parts = path.split("/")
    folders, module = parts[:-1], parts[-1]
    bundled = _is_bundled(folders)
    prefix = "/".join([*folders, module.removesuffix(".py")]) if folders and not bundled else None
    return _suite(folders, module), bundled, prefix, _stem(module)


def row_detail(info: dict[str, Any]) -> tuple[str, int] | None:
    """(``aten.mm.default(f32[8,64], f32[64,32]), 12 calls``, 12) for a row whose info names its
    signature and call count (a workload row), else None."""
    signature, calls = info.get("signature"), info.get("calls")
    if not isinstance(signature, str) or not isinstance(calls, int) or isinstance(calls, bool):
        return None
    return f"{signature}, {calls} call{'s' if calls != 1 else ''}", calls


def collection_feature(nodeid: str) -> str:
    """The row of a module (or class) that failed to collect: its path, ``.py`` dropped."""
    path, _, rest = nodeid.partition("::")
    stem = path.removesuffix(".py") if path.endswith(".py") else path
    return stem + (f"::{rest}" if rest else "")
