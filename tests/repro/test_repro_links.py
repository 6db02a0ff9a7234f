"""From the table and the diff to the reproducer: a failed cell whose check a script can rebuild
shows the command that writes it; ``rocm-compat diff`` lists it under each such regression. A
failure without a spec (or with one that says why not) gets no command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_rocm.cli import main

SPEC = {"version": 1, "op": "torch.mm", "mode": "absolute", "dtypes": ["float16"], "args": [], "kwargs": {},
        "tensors": [], "tolerances": {}}  # fmt: skip
UNNAMED = {"version": 1, "op": None, "why": "the op is <lambda>", "mode": "absolute", "dtypes": ["float16"]}


def record(ok: bool, spec: dict[str, Any] | None = None) -> dict[str, Any]:
    rec: dict[str, Any] = {"dtype": "float16", "ok": ok, "name": "mm", "kind": None if ok else "mismatch",
                           "max_abs": 0.5, "max_rel": 0.1, "normwise": None, "rtol": 1e-3, "atol": 1e-5,
                           "n_bad": 0 if ok else 3, "numel": 16, "mode": "absolute", "normwise_tol": 0.0}  # fmt: skip
    if spec is not None:
        rec["repro"] = spec
    return rec


def report(path: Path, label: str, rows: dict[str, list[dict[str, Any]]]) -> Path:
    results = [
        {"nodeid": f"tests/test_a.py::{name}", "feature": name, "suite": "user", "duration": 0.1,
         "outcome": "passed" if all(r["ok"] for r in parity) else "failed", "reason": None, "parity": parity,
         "info": {}}
        for name, parity in rows.items()
    ]  # fmt: skip
    path.write_text(json.dumps({"schema": "pytest-rocm/report/1", "label": label, "results": results}))
    return path


@pytest.fixture
def reports(tmp_path: Path) -> tuple[Path, Path]:
    base = report(tmp_path / "base.json", "base", {n: [record(True)] for n in ("test_mm", "test_lambda", "test_old")})
    candidate = report(
        tmp_path / "cand.json",
        "cand",
        {
            "test_mm": [record(True), record(False, SPEC)],
            "test_lambda": [record(False, UNNAMED)],
            "test_old": [record(False)],
        },
    )
    return base, candidate


def test_diff_lists_the_reproducer_command_under_each_reproducible_regression(
    reports: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    base, candidate = reports
    assert main(["diff", str(base), str(candidate)]) == 1
    out = capsys.readouterr().out
    assert (
        "reproducers (rocm-compat repro): 1\n  tests/test_a.py::test_mm\n"
        f"    rocm-compat repro {candidate} tests/test_a.py::test_mm -o repro/\n"
    ) in out  # not the lambda (no op) nor the record without a spec
    assert main(["diff", str(base), str(candidate), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["reproducible"] == ["tests/test_a.py::test_mm"]


def test_a_failed_html_cell_shows_the_command(reports: tuple[Path, Path], tmp_path: Path) -> None:
    base, candidate = reports
    page = tmp_path / "t.html"
    main(["table", str(base), str(candidate), "-o", str(page)])
    html = page.read_text()
    assert f"reproducer: <code>rocm-compat repro {candidate} tests/test_a.py::test_mm -o repro/</code>" in html
    # (the page may show a row twice: its section and the problems list) only test_mm's, never the others
    assert "test_lambda -o repro/" not in html and "test_old -o repro/" not in html
