"""The compatibility table shows how many elements failed next to a parity figure (issue 15): a
failed cell whose figure is below the tolerance said "broken" without saying why."""

from __future__ import annotations

from pytest_rocm.table.model import Cell, _merge, bad_counts


def _record(outcome: str, parity: list[dict]) -> dict:
    return {
        "nodeid": "t.py::t",
        "feature": "models/x/forward[float16]",
        "suite": "models",
        "outcome": outcome,
        "reason": None,
        "parity": parity,
    }


def test_bad_elements_are_shown_next_to_the_figure_and_summed_over_records() -> None:
    parity = [
        {"dtype": "float16", "normwise": 1.4e-3, "ok": False, "n_bad": 3, "numel": 1536},
        {"dtype": "float16", "normwise": 2e-4, "ok": True, "n_bad": 1, "numel": 64},
        {"dtype": "bfloat16", "normwise": 9.1e-3, "ok": True, "n_bad": 0, "numel": 1536},
    ]
    cell = _merge(None, _record("failed", parity))
    assert cell.figure() == "fp16 1.4e-03 4/1600 bad bf16 9.1e-03"
    merged = _merge(cell, _record("passed", [{"dtype": "float16", "normwise": 1e-4, "n_bad": 2, "numel": 10}]))
    assert merged.bad["float16"] == (6, 1610)


def test_records_without_counts_still_load_and_show_only_the_figure() -> None:
    """report/1 files written before n_bad/numel, and hand-made records: no count, no error."""
    old = [{"dtype": "float16", "normwise": 1e-3, "ok": False}, {"dtype": "float16", "n_bad": True, "numel": 3}]
    assert bad_counts(old) == {}
    assert Cell("failed", None, {"float16": 1e-3}).figure() == "fp16 1.0e-03"
