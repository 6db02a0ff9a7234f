"""rocm-compat table holds every row at once, so the size of its input is bounded: a report larger
than ``--max-report-mb`` (default 64) is refused before it is read, and more rows than
``--max-rows`` (default 250,000, all reports together) before any table is built; each is one
line naming the limit and the flag that raises it, exit 2, never a MemoryError traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_rocm import cli
from pytest_rocm.report.records import assemble

MIB = 1024 * 1024


def _report(path: Path, label: str, rows: int, padding: int = 0) -> Path:
    records: list[Any] = [
        {"nodeid": f"suites/ops/test_x.py::test_a[{i}]", "feature": f"ops/a[{i}]", "suite": "ops", "outcome": "passed"}
        for i in range(rows)
    ]
    text = json.dumps(assemble(label, {}, records))
    path.write_text(text)
    with path.open("ab") as f:  # JSON may end in whitespace: a large file that is a small report
        left = padding - len(text)
        while left > 0:
            f.write(b" " * min(MIB, left))
            left -= MIB
    return path


def _table(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(["table", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_report_past_the_default_size_is_refused_before_it_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    big = _report(tmp_path / "big.json", "big", 2, padding=65 * MIB)
    code, out, err = _table(capsys, str(big))
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert (
        f"{big}: {65 * MIB} bytes, larger than a report this command reads (64 MiB: --max-report-mb N raises it)" in err
    )
    code, out, err = _table(capsys, str(big), "--max-report-mb", "66")
    assert code == 0 and "| ops/a[1] |" in out, err  # the flag raises it: the same report is tabled


def test_more_rows_than_the_limit_are_refused_before_a_table_is_built(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = [str(_report(tmp_path / f"{n}.json", n, 3)) for n in ("a", "b", "c")]
    code, out, err = _table(capsys, *paths, "--max-rows", "8")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert (
        f"{paths[2]}: 3 rows (9 with the reports before it), more than this command holds (8 rows: --max-rows N" in err
    )
    code, out, err = _table(capsys, *paths, "--max-rows", "9")
    assert code == 0 and out.count("| ops/a[") == 3, err


def test_the_default_row_limit_is_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the parser's default comes from TABLE_BOUNDS: a smaller one shows it is the one in force
    from pytest_rocm.report import load

    monkeypatch.setattr(load, "TABLE_BOUNDS", load.Bounds(max_bytes=64 * MIB, max_rows=2))
    monkeypatch.setattr("pytest_rocm.cli.table.TABLE_BOUNDS", load.TABLE_BOUNDS)
    code, _, err = _table(capsys, str(_report(tmp_path / "a.json", "a", 3)))
    assert code == 2 and "(2 rows: --max-rows N raises it)" in err


def test_diff_holds_two_reports_under_the_same_bounds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = _report(tmp_path / "base.json", "base", 2, padding=65 * MIB)
    candidate = _report(tmp_path / "candidate.json", "candidate", 2)
    code = cli.main(["diff", str(base), str(candidate)])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "(64 MiB: --max-report-mb N raises it)" in err, err
    assert cli.main(["diff", str(base), str(candidate), "--max-report-mb", "66"]) == 0
    capsys.readouterr()
    code = cli.main(["diff", str(candidate), str(candidate), "--max-rows", "3"])
    assert code == 2 and "(4 with the reports before it), more than this command holds (3 rows: --max-rows N" in (
        capsys.readouterr().err
    )


@pytest.mark.parametrize("args", [["--max-rows", "0"], ["--max-rows", "1e9"], ["--max-report-mb", "-1"]])
def test_a_bad_bound_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str]) -> None:
    code, out, err = _table(capsys, str(_report(tmp_path / "a.json", "a", 1)), *args)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and args[0] in err, err
