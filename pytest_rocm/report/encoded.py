"""A run's results as the plugin keeps them until the report is written: each record's JSON line.

Each finished test's record is encoded once (``files.encode_line``): that line goes to the sidecar
as the test ends, and the same line into the final report, whose text is exactly what encoding the
records there would give. Only the few facts the run's end reads are kept beside the lines: the
summary's counts, which tests have a result and how many tests the accelerator probe answered for.

Why not keep the records: a dict per test, kept to the end, is scanned by every garbage collection
of the run (a cost that grows with the suite), and encoding every record a second time at the end
was a tenth of what the report cost a trivial test (benchmarks/bench_report_instructions.py).
"""

from __future__ import annotations

from pytest_rocm.report.files import encode_line
from pytest_rocm.report.outcomes import OUTCOMES
from pytest_rocm.report.records import ResultRecord


class EncodedResults:
    """The results so far, in order, as JSON lines (:attr:`lines`), and what is known of them."""

    def __init__(self) -> None:
        #: each result's JSON line, in the order the results came
        self.lines: list[str] = []
        #: results per outcome, in the summary's order (``records.summarize``)
        self.outcomes: dict[str, int] = dict.fromkeys(OUTCOMES, 0)
        #: the node ids that have a result
        self.nodeids: set[str] = set()
        #: tests the accelerator probe answered for, and how many of them used the accelerator
        self.probed = 0
        self.used_accelerator = 0

    def add(self, record: ResultRecord) -> str:
        """Keep ``record`` as its line; returns the line (the sidecar's)."""
        line = encode_line(record)  # first: a record that cannot be encoded is not counted
        self.lines.append(line)
        outcome = record["outcome"]
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1
        self.nodeids.add(record["nodeid"])
        flag = record.get("accelerator")
        if flag is not None:
            self.probed += 1
            self.used_accelerator += bool(flag)
        return line

    def __len__(self) -> int:
        return len(self.lines)

    def summary(self) -> dict[str, int]:
        """The report's ``summary``: what ``records.summarize`` gives for the same records."""
        return {**self.outcomes, "total": len(self.lines)}
