"""A verdict resting on a partial read says so. When a size bound stops the scan (a member padded
past the size limit, an archive past its total or member limit), the files not read could hold
what decides: the class is "at least", the confidence low, and a stack counts the row as not
fully vetted (exit 3, not 0)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fake_packages import make_sdist, make_wheel, wheel_metadata

from pytest_rocm.cli.vet import EXIT_INCOMPLETE, EXIT_OK, _stack_status
from pytest_rocm.vet import Limits, vet
from pytest_rocm.vet.render import document, stack_table, text
from pytest_rocm.vet.stack import Pin, vet_stack, wheel_index

CUDA_IMPORT = "import pycuda.autoinit\nfrom pycuda import driver\n"


def _padded_wheel(folder: Path, padding: int) -> Path:
    """The unread file (padded past the limit) is the one that imports a CUDA-only library."""
    files: dict[str, str | bytes] = dict(wheel_metadata("padded", "1.0", []))
    files["padded/__init__.py"] = "import torch\nfrom . import core\n"
    files["padded/core.py"] = CUDA_IMPORT + "#" * padding + "\n"
    return make_wheel(folder / "padded-1.0-py3-none-any.whl", files)


def _many_members_sdist(folder: Path) -> Path:
    files: dict[str, str | bytes] = {"PKG-INFO": "Metadata-Version: 2.1\nName: many\nVersion: 1.0\n"}
    files.update({f"many/m{i}.py": "import torch\n" for i in range(8)})
    files["many/zz_cuda.py"] = CUDA_IMPORT  # after the member limit
    files["many/__init__.py"] = "from . import zz_cuda\n"
    return make_sdist(folder / "many-1.0.tar.gz", files, "many-1.0")


@pytest.mark.parametrize(
    ("make", "limits", "rule"),
    [
        (lambda d: _padded_wheel(d, 4000), Limits(member_bytes=1000), "oversized-member"),
        (_many_members_sdist, Limits(members=6), "too-many-members"),
        (lambda d: _padded_wheel(d, 4000), Limits(total_bytes=2000), "archive-too-large"),
    ],
    ids=["member-padded-past-the-limit", "past-the-member-limit", "past-the-total-size"],
)
def test_a_partial_read_is_at_least_its_class(tmp_path: Path, make: Any, limits: Limits, rule: str) -> None:
    target, result, verdict = vet(str(make(tmp_path)), limits)
    assert verdict.klass == 1  # what the files read establish
    assert verdict.at_least and rule in verdict.at_least
    assert "pure Python" not in verdict.title.split(";")[0] or "in the files read" in verdict.title
    assert verdict.reason.startswith("in the files read:") and verdict.confidence == "low"
    doc = document(target, result, verdict, None)
    assert doc["at_least"] == verdict.at_least
    assert any(line.startswith("at least class 1: pure PyTorch") for line in text(doc).splitlines())


def test_a_full_read_is_no_floor(tmp_path: Path) -> None:
    target, result, verdict = vet(str(_padded_wheel(tmp_path, 10)))
    assert verdict.klass == 4 and not verdict.at_least  # read in full, the CUDA import decides
    assert document(target, result, verdict, None)["at_least"] is None


def test_a_partial_row_makes_the_stack_incomplete(tmp_path: Path) -> None:
    _padded_wheel(tmp_path, 4000)

    def vet_small(spec: str) -> dict[str, Any]:
        return document(*vet(spec, Limits(member_bytes=1000)), None)

    doc = vet_stack([Pin("padded", "1.0", "requirements.txt:1")], wheel_index(tmp_path), vet_small, [])
    (row,) = doc["packages"]
    assert row["class"] == 1 and row["at_least"] and doc["partial"] == ["padded"]
    assert row["reason"].startswith("in the files read: ")
    table = stack_table(doc)
    assert "1 not fully vetted (partial read): padded" in table.splitlines()[0]
    assert table.splitlines()[3].split()[:3] == ["padded", "1.0", ">=1"]
    assert _stack_status(doc, allow_unvetted=False) == EXIT_INCOMPLETE
    assert _stack_status(doc, allow_unvetted=True) == EXIT_OK


def test_an_unread_member_in_tests_is_no_floor(tmp_path: Path) -> None:
    """What is not read in its tests would not count if read: no floor for that."""
    files: dict[str, str | bytes] = dict(wheel_metadata("tested", "1.0", []))
    files["tested/__init__.py"] = "import torch\n"
    files["tested/tests/test_big.py"] = "#" * 4000 + "\n"
    _, _, verdict = vet(str(make_wheel(tmp_path / "tested-1.0-py3-none-any.whl", files)), Limits(member_bytes=1000))
    assert verdict.klass == 1 and not verdict.at_least
