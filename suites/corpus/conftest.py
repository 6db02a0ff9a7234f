"""The corpus suite: rows from PyTorch's own OpInfo and ModuleInfo databases (see corpus_rows).

Rows are made at collection from the session's scale profile and the device under test; each row
is named by a ``rocm_feature`` marker (``opinfo/<op>[<variant>-<dtype>-<sample id>]``) so the same
sample lines up across columns.
"""

from __future__ import annotations

import os

import pytest

from pytest_rocm import device_string, get_environment, get_scale

#: comma-separated globs over OpInfo/ModuleInfo names: only those entries get rows (see corpus_rows)
OPS_VARIABLE = "PYTEST_ROCM_CORPUS_OPS"


def where(config: pytest.Config) -> tuple[str, str]:
    """(OpInfo device type, backend): ``("cpu", "cpu")``, ``("cuda", "rocm")``, ``("cuda", "cuda")``."""
    if device_string(config) == "cpu":
        return "cpu", "cpu"
    return "cuda", get_environment(config).backend


def _params(rows: list) -> list:
    return [pytest.param(r, id=r.id, marks=pytest.mark.rocm_feature(r.feature)) for r in rows]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    import corpus_rows  # torch and its test databases: only when a corpus test is collected

    only = corpus_rows.patterns(os.environ.get(OPS_VARIABLE))
    if "op_row" in metafunc.fixturenames:
        device_type, backend = where(metafunc.config)
        rows = corpus_rows.opinfo_rows(get_scale(metafunc.config), device_type, backend, only)
        metafunc.parametrize("op_row", _params(rows))
    if "module_row" in metafunc.fixturenames:
        metafunc.parametrize("module_row", _params(corpus_rows.moduleinfo_rows(get_scale(metafunc.config), only)))


@pytest.fixture
def corpus_where(pytestconfig: pytest.Config) -> tuple[str, str]:
    return where(pytestconfig)
