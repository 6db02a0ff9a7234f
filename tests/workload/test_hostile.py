"""A capture is a file from someone else: a hostile one replays nothing but pure computation, and
never makes a row allocate more than the stated limit (issue 54, point 3; issue 48, point 4).

Each capture here claims ``not_replayable: null`` (a writer can claim anything): the replay asks the
op's schema in this torch and the metadata, never the claim.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from pytest_rocm.workload.replay import NotReplayable, replay  # noqa: E402
from pytest_rocm.workload.schema import SCHEMA, WorkloadError, validate  # noqa: E402
from pytest_rocm.workload.signature import row_name, signature_id  # noqa: E402

CPU = torch.device("cpu")


def tensor(shape: list[int], stride: list[int] | None = None, offset: int = 0, dtype: str = "float32") -> dict:
    from pytest_rocm.workload.signature import contiguous_strides

    meta = {"shape": shape, "stride": stride or contiguous_strides(shape), "offset": offset, "dtype": dtype}
    return {"tensor": meta | {"device": "cpu", "requires_grad": False}}


def sig(op: str, *args: dict[str, Any], **kwargs: dict[str, Any]) -> dict[str, Any]:
    signature = {
        "op": op,
        "phase": "forward",
        "grad": False,
        "inplace": False,
        "autocast": None,
        "args": list(args),
        "kwargs": kwargs,
    }
    return signature | {"id": signature_id(signature), "calls": 1, "not_replayable": None}


def document(*signatures: dict[str, Any]) -> dict[str, Any]:
    return {"schema": SCHEMA, "captured_on": {"torch": "2.13.0", "backend": "cpu"}, "signatures": list(signatures)}


def from_file(path: Path) -> dict[str, Any]:
    return sig(
        "aten.from_file.default",
        {"value": str(path)},
        {"value": True},
        {"value": 16384},
        dtype={"dtype": "uint8"},
    )


# -- only pure computation runs ---------------------------------------------------------------


def test_from_file_is_not_replayed_and_touches_no_file(tmp_path: Path) -> None:
    existing = tmp_path / "precious.bin"
    existing.write_bytes(b"\x7fdata")
    before = existing.stat()
    for target in (existing, tmp_path / "created.bin"):
        with pytest.raises(NotReplayable, match="argument filename is a string that is not a mode"):
            replay(from_file(target), CPU)
    assert existing.read_bytes() == b"\x7fdata" and existing.stat().st_mtime_ns == before.st_mtime_ns
    assert not (tmp_path / "created.bin").exists()


@pytest.mark.parametrize(
    ("signature", "reason"),
    [
        (sig("aten.set_.source_Storage", tensor([4]), {"opaque": "UntypedStorage"}), "is a Storage: storage I/O"),
        (sig("aten._print.default", {"value": "hello"}), "argument s is a string that is not a mode"),
        (sig("aten._assert_async.default", tensor([])), "returns nothing and writes no tensor"),
        (sig("aten._cufft_set_plan_cache_max_size.default", {"value": 0}, {"value": 1}), "returns nothing"),
        (sig("aten.sym_constrain_range.default", {"value": 1}), "returns nothing"),
        (sig("aten.bernoulli.default", tensor([4]), {"opaque": "Generator"}), "Generator"),
        (sig("aten.record_stream.default", tensor([4]), {"opaque": "Stream"}), "Stream"),
        (sig("aten.sym_size.int", tensor([4]), {"value": 0}), "its result is not a tensor"),
        (sig("aten.scatter.reduce", tensor([4]), {"value": 0}, tensor([4], dtype="int64"), tensor([4]),
             reduce={"value": "/etc/passwd"}), "argument reduce is '/etc/passwd', not a mode word"),
        (sig("aten.add.Tensor", tensor([4]), {"opaque": "object"}), r"args\[1\] is a object the capture could not"),
        (sig("aten.add.Tensor", tensor([4], dtype="qint8"), tensor([4])), "no values of that dtype"),
        (sig("mylib.evil.default", tensor([4])), "not an op of PyTorch's own"),
        (sig("aten.__class__.__init__", tensor([4])), r"has no op aten\.__class__\.__init__"),
    ],
)  # fmt: skip
def test_an_op_that_is_not_pure_computation_is_not_replayed(signature: dict[str, Any], reason: str) -> None:
    with pytest.raises(NotReplayable, match=reason):
        replay(signature, CPU)


def test_a_capture_lists_what_is_not_pure_computation_as_not_replayable(tmp_path: Path) -> None:
    import pytest_rocm

    (tmp_path / "data.bin").write_bytes(b"1234")
    with pytest_rocm.capture() as cap:
        torch.from_file(str(tmp_path / "data.bin"), shared=False, size=4, dtype=torch.uint8)
        torch.ones(3).exp()
    reasons = {s["op"]: s["not_replayable"] for s in cap.signatures}
    assert reasons["aten.from_file.default"].startswith("not pure computation: argument filename")
    assert reasons["aten.exp.default"] is None


# -- shapes, strides, offsets and dtypes at load; memory before allocation ---------------------


@pytest.mark.parametrize(
    ("arg", "message"),
    [
        (tensor([4], dtype="float99"), "args[0].tensor: dtype is 'float99', not a torch dtype"),
        (tensor([4, 4], stride=[4, -1]), "args[0].tensor: stride[1] is -1: torch has no negative strides"),
        (tensor([2**63]), "args[0].tensor: shape[0] is 9223372036854775808, more than a 64-bit index"),
        (tensor([4], offset=2**63), "args[0].tensor: addresses element 9223372036854775811, more than"),
        ({"layout": "save"}, "args[0].layout is 'save', not a torch layout"),
        ({"memory_format": "__class__"}, "args[0].memory_format is '__class__', not a torch memory format"),
        ({"dtype": "finfo"}, "args[0].dtype is 'finfo', not a torch dtype"),
    ],
)
def test_metadata_torch_cannot_make_is_one_line_at_load(arg: dict[str, Any], message: str) -> None:
    with pytest.raises(WorkloadError) as info:
        validate(document(sig("aten.exp.default", arg)), "ops.json")
    assert str(info.value) == f"ops.json: signatures[0].{message}" or str(info.value).startswith(
        f"ops.json: signatures[0].{message}"
    )
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("signature", "needs"),
    [
        (sig("aten.exp.default", tensor([2**40])), "its inputs need 12.0 TiB"),  # 4 TiB of float32, and float64
        (sig("aten.exp.default", tensor([4], offset=2**60)), "its inputs need"),
        (sig("aten.zeros.default", {"value": [2**40]}), "its inputs and outputs need 20.0 TiB"),
        (sig("aten.expand.default", tensor([1]), {"value": [2**20, 2**20]}), "its inputs and outputs need"),
    ],
)
def test_a_row_bigger_than_the_limit_is_refused_before_it_allocates(signature: dict[str, Any], needs: str) -> None:
    with pytest.raises(NotReplayable) as info:
        replay(signature, CPU)
    assert str(info.value).startswith(needs)
    assert str(info.value).endswith(
        "more than the 8.0 GiB a row may allocate (--rocm-workload-max-memory=SIZE raises it)"
    )


def _rows(pytester: pytest.Pytester, doc: dict[str, Any], *args: str) -> tuple[Any, dict[str, dict[str, Any]]]:
    path = pytester.path / "hostile.json"
    path.write_text(json.dumps(doc))
    report = pytester.path / "report.json"
    result = pytester.runpytest_subprocess(
        f"--rocm-workload={path}", "--rocm-device=cpu", "-p", "no:randomly", f"--rocm-report={report}", *args
    )
    rows = {r["feature"]: r for r in json.loads(report.read_text())["results"]} if report.exists() else {}
    return result, rows


def test_the_plugin_skips_hostile_rows_naming_why_and_the_limit_flag_raises_it(pytester: pytest.Pytester) -> None:
    target = pytester.path / "precious.bin"
    target.write_bytes(b"\x7f")
    big = sig("aten.exp.default", tensor([512, 1024]))  # 2 MiB of float32 and 4 MiB in float64
    good = sig("aten.exp.default", tensor([8]))
    doc = document(from_file(target), from_file(pytester.path / "new.bin"), big, good)
    result, rows = _rows(pytester, doc, "--rocm-workload-max-memory=1MiB")
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert target.read_bytes() == b"\x7f" and not (pytester.path / "new.bin").exists()
    for hostile in doc["signatures"][:2]:
        row = rows[row_name(hostile)]
        assert row["outcome"] == "skipped" and "argument filename is a string that is not a mode" in row["reason"]
    assert rows[row_name(big)]["outcome"] == "skipped"
    assert rows[row_name(big)]["reason"] == (
        "not replayable: its inputs need 6.0 MiB, more than the 1.0 MiB a row may allocate "
        "(--rocm-workload-max-memory=SIZE raises it)"
    )
    assert rows[row_name(good)]["outcome"] == "passed"
    _, rows = _rows(pytester, doc, "--rocm-workload-max-memory=64MiB")
    assert rows[row_name(big)]["outcome"] == "passed"
    result, _ = _rows(pytester, doc, "--rocm-workload-max-memory=lots")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --rocm-workload-max-memory='lots': bad size 'lots'*"])


def test_a_hostile_capture_through_the_cli_is_one_line(pytester: pytest.Pytester) -> None:
    doc = copy.deepcopy(document(sig("aten.exp.default", tensor([4], stride=[-1]))))
    path = pytester.path / "hostile.json"
    path.write_text(json.dumps(doc))
    result = pytester.runpytest_subprocess(f"--rocm-workload={path}", "--rocm-device=cpu")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"ERROR: --rocm-workload: {path}: signatures[0].args[0].tensor: stride[0] is -1: torch has no negative strides"
        ]
    )
    assert "Traceback" not in result.stderr.str() and os.path.exists(path)
