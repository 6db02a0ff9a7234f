"""What a run selected, for its report's ``selection`` (``report.selection`` reads it): the paths
or node ids pytest was given, ``-k``, ``-m``, and how many collected tests were deselected.

The count comes from ``pytest_deselected``, which runs where the tests are collected: in this
process, or under pytest-xdist in each worker, which this controller never hears from; there the
count is ``None`` (unknown), and ``-k``/``-m`` still say the run was a subset.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

#: the name the report plugin registers its :class:`SelectionRecorder` under
SELECTION_PLUGIN = "rocm-report-selection"


class SelectionRecorder:
    """Counts the tests deselected in this process (``-k``, ``-m``, ``--deselect``, a plugin's own)."""

    def __init__(self) -> None:
        self.deselected = 0
        self.collected_here = False

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        self.deselected += len(items)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.collected_here = True


def _relative(arg: str, root: Path) -> str:
    """An argument as written against the rootdir (``tests/unit``), so two machines' runs compare."""
    path, sep, rest = arg.partition("::")
    try:
        rel = os.path.relpath(Path(path).resolve(), root)
    except ValueError:  # another drive
        return arg
    rel = rel.replace(os.sep, "/")
    return (arg if rel.startswith("..") else rel) + sep + rest


def selection_of(config: pytest.Config, recorder: SelectionRecorder | None) -> dict[str, Any]:
    """The report's ``selection`` field for this session."""
    root = Path(str(config.rootpath))
    counted = recorder is not None and recorder.collected_here and not under_xdist(config)
    return {
        "args": [_relative(str(a), root) for a in config.args],
        "keyword": config.getoption("keyword", "") or None,
        "markers": config.getoption("markexpr", "") or None,
        "deselected": recorder.deselected if counted and recorder is not None else None,
    }


def under_xdist(config: pytest.Config) -> bool:
    """Whether this controller hands collection to xdist workers (``-n 2``; ``-n 0`` is in-process)."""
    numprocesses = config.getoption("numprocesses", None)
    return bool(numprocesses) or bool(config.getoption("dist", "no") not in ("no", None))


def recorded_selection(config: pytest.Config) -> dict[str, Any]:
    """This session's selection, with the deselected count of its registered recorder."""
    recorder = config.pluginmanager.get_plugin(SELECTION_PLUGIN)
    return selection_of(config, recorder if isinstance(recorder, SelectionRecorder) else None)
