"""Reports a fleet can merge: a non-personal machine id, the host only when named, the tool's
version, and a visible note where reports of different tool versions meet (table and diff)."""

from __future__ import annotations

import copy
import json
import socket
from pathlib import Path
from typing import Any

import pytest

import pytest_rocm
from pytest_rocm import cli
from pytest_rocm.report.diff import compare
from pytest_rocm.report.diff_text import render_text
from pytest_rocm.report.fleet import machine_basis, machine_id, machine_of, tool_version_note
from pytest_rocm.report.load import ReportError, load_report

DATA = Path(__file__).parents[1] / "data"
ENVS = DATA / "envs"


def _env(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((ENVS / f"{name}.json").read_text())
    return data


def test_machine_id_hashes_the_gpus_pci_ids_and_gfx_and_nothing_personal() -> None:
    mi300x = _env("mi300x_8")
    assert machine_basis(mi300x) == "8x pci 1002:74a1 gfx942"
    assert machine_basis(_env("rx6800xt_igpu")) == "pci 1002:164e gfx1036; pci 1002:73bf gfx1030"
    assert machine_basis(_env("cpu_only")) == "no GPU"
    assert machine_basis(_env("nvidia_cuda")) == "device NVIDIA H100 80GB HBM3 sm_90"  # no KFD: torch's devices
    ident = machine_id(mi300x)
    assert ident.startswith("m-") and len(ident) == 18
    # stable: the KFD node order, the run's variables, its platform and the board's unique id do not move it
    moved = copy.deepcopy(mi300x)
    moved["system"]["gpus"].reverse()
    moved["platform"] = "Linux-6.8.0-other-kernel"
    moved["variables"]["HIP_VISIBLE_DEVICES"] = "3"
    for gpu in moved["system"]["gpus"]:
        gpu["unique_id"] = 1234
    assert machine_id(moved) == ident
    # a different GPU is a different machine
    other = copy.deepcopy(mi300x)
    other["system"]["gpus"][0]["gfx"] = "gfx90a"
    assert machine_id(other) != ident
    # nothing of this host in it
    assert socket.gethostname() not in machine_basis(mi300x)


def _report(tmp: Path, label: str, version: str | None, results: list[dict[str, Any]] | None = None) -> Path:
    document: dict[str, Any] = {
        "schema": "pytest-rocm/report/1",
        "label": label,
        "created": "2026-11-30T10:00:00+00:00",
        "environment": _env("mi300x_8"),
        "results": results
        or [{"nodeid": "t.py::test_a", "feature": "operators/a", "suite": "operators", "outcome": "passed"}],
    }
    if version is not None:
        document["tool"] = {"name": "pytest-rocm", "version": version}
    path = tmp / f"{label}.json"
    path.write_text(json.dumps(document))
    return path


def test_older_reports_get_the_machine_id_from_their_environment(tmp_path: Path) -> None:
    old = load_report(_report(tmp_path, "old", None))
    assert "machine" not in old
    assert machine_of(old) == {"id": machine_id(_env("mi300x_8")), "basis": "8x pci 1002:74a1 gfx942", "host": None}


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("machine", {"id": "frontier-n0042"}, "machine.id"),
        ("machine", {"id": "m-0123456789abcdef", "host": ""}, "machine.host"),
        ("tool", {"version": 3}, "tool.version"),
    ],
)
def test_bad_envelope_fields_are_one_line_naming_the_field(
    tmp_path: Path, field: str, value: Any, expected: str
) -> None:
    path = _report(tmp_path, "r", "0.1.0")
    document = json.loads(path.read_text())
    document[field] = value
    path.write_text(json.dumps(document))
    with pytest.raises(ReportError, match=expected.replace(".", r"\.")):
        load_report(path)


def test_table_and_diff_say_when_tool_versions_differ(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one, two, old = _report(tmp_path, "a", "0.1.0"), _report(tmp_path, "b", "0.2.0"), _report(tmp_path, "c", None)
    assert cli.main(["table", str(one), str(two), str(old)]) == 0
    out = capsys.readouterr().out
    assert "> **Note**: reports written by different pytest-rocm versions (0.1.0: a; 0.2.0: b; not recorded: c)" in out
    html = tmp_path / "t.html"
    assert cli.main(["table", str(one), str(two), "-o", str(html)]) == 0
    assert "merge-note" in html.read_text() and "0.2.0: b" in html.read_text()
    assert cli.main(["diff", str(one), str(two)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("NOTE: reports written by different pytest-rocm versions (0.1.0: BASE; 0.2.0: CANDIDATE)")
    assert cli.main(["diff", str(one), str(two), "--json"]) == 0
    assert "0.2.0: CANDIDATE" in json.loads(capsys.readouterr().out)["notes"][0]


def test_a_report_that_recorded_no_version_is_not_called_a_different_version(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one, old = _report(tmp_path, "a", "0.1.0"), _report(tmp_path, "c", None)
    assert cli.main(["table", str(one), str(old)]) == 0
    out = capsys.readouterr().out
    assert "reports written by possibly different pytest-rocm versions (0.1.0: a; not recorded: c)" in out
    assert "by different pytest-rocm" not in out


def test_reports_of_one_tool_version_merge_without_a_note(tmp_path: Path) -> None:
    one, two = load_report(_report(tmp_path, "a", "0.1.0")), load_report(_report(tmp_path, "b", "0.1.0"))
    assert tool_version_note([one, two], ["a", "b"]) is None
    assert "NOTE" not in render_text(compare(one, two), "a", "b", 10.0)


def test_the_package_version_is_pyprojects() -> None:
    import tomllib

    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    assert pyproject["project"]["version"] == pytest_rocm.__version__


def _with_host(tmp: Path, name: str, label: str, host: str | None) -> Path:
    path = _report(tmp, name, "0.1.0")
    document = json.loads(path.read_text())
    document["label"] = label
    if host is not None:
        document["machine"] = {"id": machine_id(document["environment"]), "host": host}
    path.write_text(json.dumps(document))
    return path


def test_identical_nodes_share_a_label_and_their_hosts_make_the_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    label = "rocm torch2.6.0 rocm6.2.4 gfx942"
    one, two = _with_host(tmp_path, "n1", label, "node01"), _with_host(tmp_path, "n2", label, "node02")
    assert cli.main(["table", str(one), str(two)]) == 0
    out = capsys.readouterr().out
    assert f"**{label} on node01**" in out and f"**{label} on node02**" in out
    # without a host for each, the same label is still one line naming both files and the way out
    bare = _with_host(tmp_path, "n3", label, None)
    assert cli.main(["table", str(one), str(bare)]) == 2
    err = capsys.readouterr().err
    assert f"n3.json: label '{label}' is also the label of {one}" in err and "--rocm-host-label" in err
    same = _with_host(tmp_path, "n4", label, "node01")
    assert cli.main(["table", str(one), str(same)]) == 2
    assert "n4.json: label" in capsys.readouterr().err


def test_diff_says_when_the_two_reports_come_from_different_machines(tmp_path: Path) -> None:
    base = load_report(_report(tmp_path, "a", "0.1.0"))
    other = json.loads(_report(tmp_path, "b", "0.1.0").read_text())
    other["environment"] = _env("rx6800xt_igpu")
    (tmp_path / "b.json").write_text(json.dumps(other))
    text = render_text(compare(base, load_report(tmp_path / "b.json")), "a", "b", 10.0)
    first = text.splitlines()[0]
    assert first.startswith(
        f"NOTE: measured on different machines (BASE {machine_id(_env('mi300x_8'))} (8x pci 1002:74a1 gfx942);"
    )
    assert "CANDIDATE m-" in first and "pci 1002:164e gfx1036; pci 1002:73bf gfx1030" in first
    assert "NOTE" not in render_text(compare(base, base), "a", "a", 10.0)
