"""Every sample of PyTorch's OpInfo database (``op_db``) on the device against the float64 CPU
reference, forward and (where the op has autograd) backward, in fp32/fp16/bf16."""

from __future__ import annotations

import corpus_calls
import corpus_db
import corpus_limits
import pytest
import torch

from pytest_rocm import INFO_PROPERTY, DtypeUnsupported


def test_opinfo(
    op_row: corpus_db.Row,
    corpus_where,
    parity,
    rocm_device: torch.device,
    record_property,
    request: pytest.FixtureRequest,
) -> None:
    record_property(INFO_PROPERTY, op_row.info())
    limit = corpus_limits.cpu_limit(op_row.name, op_row.dtype, op_row.sample) if corpus_where[0] == "cpu" else None
    if limit is not None:
        request.applymarker(pytest.mark.xfail(reason=f"known limit of the CPU backend: {limit}", strict=False))
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
        with op_row.origin(call.passed):  # a failure's reproducer rebuilds the sample from op_db
            parity(
                call.fn,
                *call.args,
                dtypes=(op_row.dtype,),
                grad=call.grad,
                name=op_row.name,
                tolerances=call.tolerances,
                **corpus_calls.criterion_options(device_type),  # one that can fail on the CPU baseline too
                allow_vacuous=True,  # a sample may be empty or have an all-zero gradient: still compared
            )
    except DtypeUnsupported as exc:
        pytest.skip(f"{op_row.name} has no {op_row.dtype} kernel on {exc.backend}: {exc}")
