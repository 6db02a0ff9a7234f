"""The coverage map: which dimension values rows exercised, which none did, and which ops no row reached."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pytest_rocm.cli import main
from pytest_rocm.coverage.catalogue import CATALOGUE
from pytest_rocm.table.boundary_map import coverage_map, markdown_section, op_key


def record(feature: str, outcome: str, info: dict[str, Any]) -> dict[str, Any]:
    return {"nodeid": feature, "feature": feature, "suite": "operators", "outcome": outcome, "info": info}


def report(*records: dict[str, Any], label: str = "cpu") -> dict[str, Any]:
    return {
        "schema": "pytest-rocm/report/1",
        "label": label,
        "environment": {"backend": "cpu"},
        "summary": {},
        "results": list(records),
    }


MM = {"op": "mm", "family": "matmul"}


def test_values_no_row_tried_are_listed_as_not_checked() -> None:
    dims = {"m": "m1", "k": "k17", "values": "nan", "dtype": "bfloat16"}
    cov = coverage_map([report(record("boundary/matmul/mm[a]", "passed", {**MM, "dims": dims}))])
    assert cov is not None
    (mm,) = cov.ops
    assert mm.key == "matmul/mm" and mm.rows_ran == 1
    assert mm.checked["m"] == {"m1"}
    assert mm.not_checked("m") == ["m7", "m64", "m65", "m4096", "m65536"]  # the catalogue's full values
    assert mm.not_checked("layout_a") == list(CATALOGUE["matmul/mm"].all_values()["layout_a"])  # never recorded
    assert "matmul/mm" not in cov.unreached and "conv/conv2d" in cov.unreached


def test_a_skipped_row_exercised_nothing() -> None:
    dims = {"m": "m7", "dtype": "float16"}
    cov = coverage_map(
        [
            report(
                record("boundary/matmul/mm[a]", "skipped", {**MM, "dims": dims}),
                record("boundary/matmul/mm[b]", "failed", {**MM, "dims": {"m": "m1", "dtype": "float32"}}),
            )
        ]
    )
    assert cov is not None
    (mm,) = cov.ops
    assert mm.rows_ran == 1 and mm.rows_skipped == 1
    assert "m7" in mm.not_checked("m") and mm.skipped["m"] == {"m7"}
    assert "| matmul/mm | 1 | m | m1 | m7 (skipped), m64" in "\n".join(markdown_section(cov))


def test_an_op_reached_only_by_skips_is_not_reached() -> None:
    cov = coverage_map([report(record("boundary/matmul/mm[a]", "skipped", {**MM, "dims": {"m": "m1"}}))])
    assert cov is not None and "matmul/mm" in cov.unreached


def test_corpus_rows_count_under_their_prefix_and_list_only_seen_values() -> None:
    rows = [
        record("opinfo/add[default-float16-0]", "passed", {"op": "add", "dims": {"dtype": "float16", "sample": "0"}}),
        record(
            "opinfo/add[default-bfloat16-1]", "skipped", {"op": "add", "dims": {"dtype": "bfloat16", "sample": "1"}}
        ),
    ]
    cov = coverage_map([report(*rows)])
    assert cov is not None
    (add,) = cov.ops
    assert add.key == "opinfo/add"
    assert add.not_checked("dtype") == ["bfloat16"]  # seen only in a skipped row


def test_a_corpus_row_named_by_a_marker_counts_under_its_corpus() -> None:
    info = {"op": "nn.LSTM", "dims": {"mode": "train"}, "corpus": "moduleinfo"}
    assert op_key({"feature": "corpus/x", "info": info}) == "moduleinfo/nn.LSTM"


def test_union_over_columns() -> None:
    a = report(record("boundary/matmul/mm[a]", "passed", {**MM, "dims": {"m": "m1"}}), label="a")
    b = report(record("boundary/matmul/mm[b]", "passed", {**MM, "dims": {"m": "m7"}}), label="b")
    cov = coverage_map([a, b])
    assert cov is not None and cov.ops[0].checked["m"] == {"m1", "m7"}


def test_reports_without_dimensions_have_no_map() -> None:
    assert coverage_map([report(record("operators/matmul[mm-float16]", "passed", {"scale": "ci"}))]) is None
    assert op_key({"feature": "x", "info": {"op": ""}}) is None


def test_the_table_has_the_coverage_section_in_markdown_and_html(tmp_path: Path, capsys) -> None:
    path = tmp_path / "r.json"
    dims = {"m": "m1", "values": "nan"}
    path.write_text(json.dumps(report(record("boundary/matmul/mm[a]", "passed", {**MM, "dims": dims}))))
    assert main(["table", str(path)]) == 0
    md = capsys.readouterr().out
    assert "## Coverage" in md and "**Not reached by any row**" in md and "conv/conv2d" in md
    assert "| matmul/mm | 1 | m | m1 | m7, m64" in md
    assert main(["table", str(path), "--format", "html"]) == 0
    page = capsys.readouterr().out
    assert "<section id=coverage>" in page and page.index("id=coverage") < page.rindex("<script>")
    assert "<td>m7, m64, m65, m4096, m65536</td>" in page


def test_html_escapes_labels(tmp_path: Path, capsys) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(report(record("x", "passed", {"op": "<b>", "dims": {"<i>": "<u>"}}))))
    assert main(["table", str(path), "--format", "html"]) == 0
    page = capsys.readouterr().out
    assert "<td>&lt;b&gt;</td>" in page and "<u>" not in page


def test_no_section_without_dimensions(tmp_path: Path, capsys) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(report(record("operators/x", "passed", {}))))
    assert main(["table", str(path)]) == 0
    assert "## Coverage" not in capsys.readouterr().out


def test_device_profile_rows_are_listed_with_their_cost_beside_boundary_rows() -> None:
    from pytest_rocm.coverage.catalogue_device import DEVICE_ROWS

    boundary = record("boundary/matmul/mm[x]", "passed", {**MM, "dims": {"m": "m1"}})
    cov = coverage_map([report(boundary)])
    assert cov is not None and len(cov.device_only) == len(DEVICE_ROWS)
    first = DEVICE_ROWS[0]
    assert (first.feature, first.cost().text()) in cov.device_only
    text = "\n".join(markdown_section(cov))
    assert "Device profile only" in text and f"- {first.feature}: {first.cost().text()}" in text
    assert f"{len(DEVICE_ROWS)} device-profile rows not run" in text
    # a device row that ran (on a GPU) is not listed; a skipped one still is
    ran = record(first.feature, "passed", {"op": first.op, "family": first.family, "dims": first.dims})
    skipped = record(DEVICE_ROWS[1].feature, "skipped", {"op": "add", "family": "elementwise", "dims": {}})
    cov = coverage_map([report(boundary, ran, skipped)])
    assert cov is not None and first.feature not in dict(cov.device_only)
    assert DEVICE_ROWS[1].feature in dict(cov.device_only)
    # a device row's sizes are not counted as values of the catalogue op's dimensions
    assert [e.key for e in cov.ops] == ["matmul/mm"]  # no elementwise/add entry with numel n2147483649
    # a report of device rows alone still lists the rest of them
    cov = coverage_map([report(ran)])
    assert cov is not None and len(cov.device_only) == len(DEVICE_ROWS) - 1
    # no boundary row: no device listing (a corpus or sweep table is not about the generator)
    sweep = record("operators/x", "passed", {"op": "mysweep", "dims": {"n": "n1"}})
    cov = coverage_map([report(sweep)])
    assert cov is not None and cov.device_only == []
