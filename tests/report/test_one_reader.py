"""One reader for one parity record (issue 51.2) and cells that say what failed (issue 56.4).

Every view of a record (the table's cell and its figures, the one-line cell, the growth rule the
gate applies, the HTML chart) asks ``parity.reading``; a property test holds each of them to it
on records of any shape. A failed cell names the criterion that failed with that criterion's own
figure and bound, and never writes ``a > b`` where a is not larger than b.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_rocm.parity.reading import breaches, error_of, figure, read_parity, shown_tolerance
from pytest_rocm.report.growth import parity_errors, parity_figures
from pytest_rocm.report.load import load_reports, metric
from pytest_rocm.table.html import render_html
from pytest_rocm.table.markdown import render_markdown
from pytest_rocm.table.model import Cell, _merge, build_table
from pytest_rocm.table.oneline import one_line, parity_line, worst_failing

#: what a file's figure may be: numbers of every kind, the three words, and what is not a figure
VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5000),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["inf", "-inf", "nan", "1e-3", "abc", "", "Infinity"]),
    st.lists(st.integers(), max_size=2),
)
RECORDS = st.fixed_dictionaries(
    {"dtype": st.sampled_from(["float16", "bfloat16", "float32", "int8"])},
    optional={
        "max_abs": VALUES,
        "max_rel": VALUES,
        "normwise": VALUES,
        "rtol": VALUES,
        "atol": VALUES,
        "normwise_tol": VALUES,
        "max_abs_bound": VALUES,
        "worst_bound": VALUES,
        "worst_got": VALUES,
        "worst_expected": VALUES,
        "cpu_max_abs": VALUES,
        "n_bad": st.one_of(st.integers(-1, 3000), st.booleans(), st.none()),
        "numel": st.one_of(st.integers(0, 4096), st.none()),
        "ok": st.one_of(st.booleans(), st.none()),
        "kind": st.sampled_from([None, "mismatch", "non-finite", "structure", "dtype", "nondeterministic", "vacuous"]),
        "mode": st.sampled_from(["absolute", "cpu-relative", "model", None]),
        "name": st.one_of(st.none(), st.sampled_from(["gelu", "gelu.grad[0]"])),
        "detail": st.sampled_from(
            ["", "used float32 parameters", "2 elements where reference and output disagree on inf/nan"]
        ),
    },
)


def same(a: Any, b: Any) -> bool:
    return repr(a) == repr(b)  # NaN is not equal to itself; its repr is


@settings(max_examples=400, deadline=None)
@given(RECORDS)
def test_every_reader_reads_a_record_as_the_one_reader_does(record: dict[str, Any]) -> None:
    reading = read_parity(record)
    assert same(metric(record), reading.error) and same(error_of(record), reading.error)
    assert same(shown_tolerance(record), reading.tolerance)
    errors, tolerances, named = parity_figures([record])  # type: ignore[list-item]
    dtype = record["dtype"]
    if reading.error is None:
        assert errors == {} and tolerances == {} and named == {}
    else:
        assert same(errors, {dtype: reading.error})
        assert same(named, {(dtype, record.get("name")): reading.error})
        assert same(tolerances, {dtype: reading.tolerance} if reading.tolerance else {})
    assert same(parity_errors([record]), named)  # the gate's growth reads what the table reads
    cell = _merge(None, {"nodeid": "t", "feature": "f", "outcome": "failed", "reason": "x", "parity": [record]})
    assert same(cell.errors, errors) and same(cell.tolerances, tolerances)
    assert (cell.failing is record) == (record.get("ok") is False)  # any failed record, figures or not
    if cell.failing is not None:
        line = one_line(cell)
        assert line.startswith("failed: ") and "\n" not in line and len(line) <= 90
        assert reading.failed and parity_line(record).split(" ", 1)[0] in line


@settings(max_examples=400, deadline=None)
@given(RECORDS)
def test_a_failed_line_never_says_a_figure_exceeds_a_bound_it_does_not(record: dict[str, Any]) -> None:
    line = parity_line(record)
    for value, bound in re.findall(r"(\S+) > (\S+?)(?:,|;|$)", line):
        assert float(value.rstrip(",")) >= float(bound), line  # rounded to 2 digits: >= in print
    shown = [(b.value, b.bound) for b in breaches(record) if b.value is not None and b.bound is not None]
    assert line.count(" > ") <= sum(1 for value, bound in shown if value > bound)


def test_the_number_rule() -> None:
    assert figure(2) == 2.0 and figure(0.5) == 0.5 and math.isinf(figure("inf") or 0) and figure("-inf") == -math.inf
    assert math.isnan(figure("nan") or 0)
    for not_a_figure in (True, False, "1e-3", "abc", None, [1], "Infinity"):
        assert figure(not_a_figure) is None


# -- a cell that says what failed ------------------------------------------------------------------
#: the issue's cell: the elementwise criterion failed (one element of 2048) while the normwise
#: figure sat below the normwise term: ``fp16 5.4e-04 > tol 3.9e-03`` was a false sentence
ELEMENTWISE = {
    "dtype": "float16",
    "max_abs": 0.0625,
    "max_rel": 0.031,
    "normwise": 5.4e-4,
    "rtol": 9.765625e-4,
    "atol": 1e-5,
    "ok": False,
    "name": "layer",
    "kind": "mismatch",
    "n_bad": 1,
    "mode": "absolute",
    "normwise_tol": 3.9e-3,
    "numel": 2048,
    "worst_index": [3, 7],
    "worst_got": 2.0625,
    "worst_expected": 2.0,
    "worst_bound": 0.0121,
}
MODEL_NORMWISE = {
    **ELEMENTWISE,
    "mode": "model",
    "normwise": 5.2e-3,
    "normwise_tol": 1.92e-3,
    "n_bad": 0,
    "max_abs_bound": 0.0124,
    "max_abs": 0.011,
}


@pytest.mark.parametrize(
    ("record", "line"),
    [
        (ELEMENTWISE, "failed: fp16 elementwise |err| 6.2e-02 > 1.2e-02, 1/2048 off"),
        (MODEL_NORMWISE, "failed: fp16 normwise error 5.2e-03 > 1.9e-03"),
        (
            {**MODEL_NORMWISE, "n_bad": 4, "max_abs": 0.02},
            "failed: fp16 normwise error 5.2e-03 > 1.9e-03; elementwise |err| 2.0e-02 > 1.2e-02",
        ),
        (
            {
                **ELEMENTWISE,
                "rtol": 0.0,
                "atol": 0.0,
                "normwise_tol": 0.0,
                "n_bad": 3,
                "worst_got": 7,
                "worst_expected": 5,
            },
            "failed: fp16 exact: 3/2048 differ (worst |err| 2.0e+00)",
        ),
        (
            {**ELEMENTWISE, "worst_bound": None},
            "failed: fp16 elementwise |err| 6.2e-02 (bound not recorded), 1/2048 off",
        ),
        (
            {
                "dtype": "bfloat16",
                "ok": False,
                "kind": "dtype",
                "detail": "the float32 run used 28 parameters in float32",
            },
            "failed: bf16 dtype: the float32 run used 28 parameters in float32",
        ),
        (
            {"dtype": "float16", "normwise": 0.4, "rtol": 0.016, "ok": False},
            "failed: fp16 4.0e-01 (rtol 1.6e-02), criterion",
        ),
        (
            {
                "dtype": "float16",
                "ok": False,
                "kind": "vacuous",
                "detail": "vacuous: max |reference| = 0 <= atol = 1e-05",
            },
            "failed: fp16 vacuous: max |reference| = 0 <= atol = 1e-05",
        ),
    ],
    ids=["elementwise", "model-normwise", "model-both", "exact", "old-record", "dtype-kind", "own-record", "vacuous"],
)
def test_a_failed_cell_names_the_criterion_with_its_own_figure_and_bound(record: dict[str, Any], line: str) -> None:
    cell = _merge(None, {"nodeid": "t", "feature": "f", "outcome": "failed", "reason": "x", "parity": [record]})
    assert one_line(cell).startswith(line), one_line(cell)


def test_the_worst_failing_record_ranks_a_run_that_proved_nothing_above_a_figure() -> None:
    dtype_failure = {"dtype": "float32", "ok": False, "kind": "dtype", "detail": "ran in float64"}
    assert worst_failing([ELEMENTWISE, dtype_failure]) is dtype_failure
    bigger = {**ELEMENTWISE, "worst_got": 3.0}  # 1.0 past a bound of 0.0121: worse than 0.0625
    assert worst_failing([ELEMENTWISE, bigger]) is bigger


def _report(tmp_path: Path, results: list[dict[str, Any]], label: str = "cpu torch2.13.0") -> Path:
    for r in results:
        r.setdefault("suite", "user")
        r.setdefault("parity", [])
    path = tmp_path / f"{label.replace(' ', '-')}.json"
    path.write_text(json.dumps({"schema": "pytest-rocm/report/1", "label": label, "results": results}))
    return path


#: a user's failing assert_parity as pytest recorded it: the message's rows, cut at 400 characters
#: inside the float32 row by a report of before (the failing bfloat16 row never reached the file)
CUT_REASON = (
    "pytest_rocm.parity.result.ParityError: parity mismatch: a_long_named_user_block on cuda:0 (mode absolute, "
    "reference float64 on cpu)\ndtype     output                   status    max_abs  max_rel  normwise  n_bad   "
    "worst [index] got vs expected  tolerance rtol/atol/normwise\nfloat32   a_long_named_user_block  ok        "
    "3.1e-07  2.2e-07  1.1e-07   0/2048  [0,0] -0.46 vs -0.46           1.3e-06/1e-05/…"
)


def test_a_users_failing_assert_parity_is_one_line_and_its_note_names_the_failed_dtype(tmp_path: Path) -> None:
    parity = [
        {**ELEMENTWISE, "dtype": "float32", "ok": True, "kind": None, "n_bad": 0, "name": "a_long_named_user_block"},
        {**ELEMENTWISE, "dtype": "bfloat16", "name": "a_long_named_user_block"},
    ]
    path = _report(
        tmp_path,
        [
            {
                "nodeid": "t.py::test_block",
                "feature": "user/block",
                "outcome": "failed",
                "reason": CUT_REASON,
                "parity": parity,
            }
        ],
    )
    table = build_table(load_reports([path]), [path.name])
    md, html = render_markdown(table), render_html(table)
    row = next(line for line in md.splitlines() if line.startswith("| user/block |"))
    assert "ParityError" not in row and "failed: bf16 elementwise \\|err\\| 6.2e-02 > 1.2e-02, 1/2048 off" in row
    summary = re.search(r"<summary class=line>([^<]*)</summary>", html)
    assert summary is not None and summary.group(1) == "failed: bf16 elementwise |err| 6.2e-02 &gt; 1.2e-02, 1/2048 off"
    # the reason never held bfloat16; the note and the details read it from the records
    assert "bfloat16" not in CUT_REASON
    note = md[md.index('<a id="note-1"></a>') :]
    assert "<pre>bf16 a_long_named_user_block: elementwise |err| 6.2e-02 &gt; 1.2e-02, 1/2048 off" in note
    details = html[html.index("<pre class=full>") :]
    assert details.startswith("<pre class=full>bf16 a_long_named_user_block: elementwise |err| 6.2e-02 &gt; 1.2e-02")


@pytest.mark.parametrize(
    "reason",
    [
        "pytest_rocm.parity.result.ParityError: parity mismatch: f on cpu (mode absolute, reference float64 on cpu)\n"
        "dtype  output  status\nfloat16  f  mismatch",
        "\n\nmy_project.checks.NumbersDiffer: off\nby a lot",
        "AssertionError: " + "x " * 300,
    ],
)
def test_a_failed_cell_without_records_is_one_line_whatever_wrote_the_failure(reason: str) -> None:
    line = one_line(Cell("failed", reason))
    assert "\n" not in line and len(line) <= 90 and not re.match(r"failed: (\w+\.)+\w+:", line)
    assert "dtype  output" not in line  # never the flattened table


def test_a_cells_note_keeps_every_failed_record_of_the_rows_tests() -> None:
    a = _merge(None, {"nodeid": "a", "feature": "f", "outcome": "failed", "reason": "x", "parity": [ELEMENTWISE]})
    b = _merge(a, {"nodeid": "b", "feature": "f", "outcome": "failed", "reason": "y", "parity": [MODEL_NORMWISE]})
    assert b.failed == [ELEMENTWISE, MODEL_NORMWISE] and b.failing is ELEMENTWISE


# -- a speed figure that measured the machine's load (issue 56.5) -----------------------------------
def _gemm(label: str, throughput: float, share: float | None) -> dict[str, Any]:
    perf: dict[str, Any] = {"median_s": 4.194304e-3 / throughput, "spread": 0.05, "reps": 9, "throughput": throughput}
    perf.update(unit="GFLOP/s", work={"flops": 4194304.0}, dtype="float32", device="cpu")
    if share is not None:
        perf["run_queue_share"] = share
    feature = "operators/perf_gemm[mm-float32]"
    return {
        "nodeid": "operators/test_perf.py::test_perf_gemm[mm-float32]",
        "feature": feature,
        "suite": "operators",
        "outcome": "passed",
        "reason": None,
        "parity": [],
        "perf": perf,
    }


@pytest.mark.parametrize("labels", [("loaded",), ("quiet", "loaded")])
def test_a_speed_figure_timed_on_a_busy_machine_is_marked_as_the_gate_judges_it(
    tmp_path: Path, labels: tuple[str, ...]
) -> None:
    from pytest_rocm.report.perf import slowdown_of
    from pytest_rocm.table.speed import speed_block

    figures = {"quiet": (21.0, 0.02), "loaded": (0.456, 1.3)}  # the GEMM: 46x off, waited 130 %
    paths = [_report(tmp_path, [_gemm(label, *figures[label])], label) for label in labels]
    table = build_table(load_reports(paths), [p.name for p in paths])
    block = speed_block(table)
    assert block is not None
    (entry,) = block.entries
    loaded = entry.figures["loaded"]
    assert loaded is not None
    mark = "timed on a busy machine (waited for a core 130% of the time): cannot judge"
    assert mark in loaded.text()
    md = render_markdown(table)
    assert "| GEMM fp32 |" in md and mark in md.split("## Speed", 1)[1].split("\n\n", 3)[2]
    html = render_html(table)
    assert re.search(r'<td class="speed-cell noisy" data-label="loaded"[^>]*>.*?cannot judge', html)
    if "quiet" in labels:  # the gate calls it noisy, not a slowdown: so does the block
        slow = slowdown_of("f", _gemm("q", 21.0, 0.02)["perf"], _gemm("l", 0.456, 1.3)["perf"], 1.25)
        assert slow is not None and slow.noisy and slow.busy == 1.3
        assert "slower" not in loaded.text()
        quiet = entry.figures["quiet"]
        assert quiet is not None and "busy" not in quiet.text()


# -- one place for every user_properties key, one rule for "the dtype has no kernel" ----------------
def test_every_user_properties_key_is_named_in_one_place() -> None:
    import ast

    from pytest_rocm.report import properties

    package = Path(properties.__file__).parents[1]
    keys = set(properties.PROPERTIES)
    found = []
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and node.value.value in keys:
                found.append(f"{path.relative_to(package)}:{node.lineno}")
    assert found == [f"report/properties.py:{n}" for n in sorted(int(f.split(":")[1]) for f in found)]
    assert len(found) == len(keys) == 6


@pytest.mark.parametrize(
    ("text", "no_kernel"),
    [
        ("\"addmm_impl_cpu_\" not implemented for 'Half'", True),
        ("\"bessel_j0\" not implemented for 'ComplexHalf'", True),
        ("Unsupported dtype BFloat16", True),
        ("Low precision dtypes not supported", True),  # docs/parity.md named it; the rule missed it
        ("mat1 and mat2 must have the same dtype", False),
        ("expected scalar type Float but found Half", False),  # mixed dtypes: often the caller's
        ("CUDA error: an illegal memory access was encountered", False),
    ],
)
def test_one_rule_says_the_dtype_has_no_kernel(text: str, no_kernel: bool) -> None:
    from pytest_rocm.parity.result import no_kernel_for_dtype

    assert no_kernel_for_dtype(text) is no_kernel


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["failed", "error", "xfailed", "skipped", "crashed", "timeout", "not-installed"]),
    st.text(st.characters(codec="utf-8"), max_size=600),
    st.sampled_from(["", "pytest_rocm.parity.result.ParityError: ", "a.b.C: ", "Skipped: ", "\n\n"]),
)
def test_any_cell_that_did_not_pass_is_one_line_whatever_its_reason(outcome: str, text: str, prefix: str) -> None:
    line = one_line(Cell(outcome, prefix + text))  # type: ignore[arg-type]
    assert "\n" not in line and "\r" not in line and len(line) <= 90
    assert line.startswith(outcome) and not re.match(rf"{outcome}: [A-Za-z_]\w*\.[A-Za-z_][\w.]*: ", line)
