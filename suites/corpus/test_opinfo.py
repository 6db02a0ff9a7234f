"""Every sample of PyTorch's OpInfo database (``op_db``) on the device against the float64 CPU
reference, forward and (where the op has autograd) backward, in fp32/fp16/bf16."""

from __future__ import annotations

import corpus_calls
import corpus_db
import pytest
import torch

from pytest_rocm import INFO_PROPERTY, DtypeUnsupported


def test_opinfo(op_row: corpus_db.Row, corpus_where, parity, rocm_device: torch.device, record_property) -> None:
    record_property(INFO_PROPERTY, op_row.info())
    if op_row.problem is not None:
        pytest.skip(op_row.problem)
    device_type, backend = corpus_where
    try:
        call = corpus_calls.op_call(op_row, device_type, backend)
    except corpus_calls.Skip as why:
        pytest.skip(str(why))
    if call.notes:
        record_property(INFO_PROPERTY, {**op_row.info(), **call.notes})
    try:
        parity(
            call.fn,
            *call.args,
            dtypes=(op_row.dtype,),
            grad=call.grad,
            name=op_row.name,
            tolerances=call.tolerances,
            mode="cpu-relative",  # as accurate as the CPU in the same dtype (PyTorch's test_compare_cpu)
            allow_vacuous=True,  # a sample may be empty or have an all-zero gradient: still compared
        )
    except DtypeUnsupported as exc:
        pytest.skip(f"{op_row.name} has no {op_row.dtype} kernel on {exc.backend}: {exc}")
