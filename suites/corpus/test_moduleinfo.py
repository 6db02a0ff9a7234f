"""Every module of PyTorch's ModuleInfo database (``module_db``) on the device against the float64
CPU reference, in train and eval mode: outputs, input and parameter gradients, and the state one
step leaves behind (running statistics of the norms, step counters; RNNs return their hidden
states as outputs)."""

from __future__ import annotations

import corpus_calls
import corpus_db
import corpus_limits
import pytest
import torch

from pytest_rocm import INFO_PROPERTY, DtypeUnsupported, ParityError


def test_moduleinfo(
    module_row: corpus_db.Row,
    corpus_where,
    parity,
    rocm_device: torch.device,
    record_property,
    request: pytest.FixtureRequest,
) -> None:
    record_property(INFO_PROPERTY, module_row.info())
    limit = (
        corpus_limits.cpu_limit(module_row.name, module_row.dtype, module_row.sample)
        if corpus_where[0] == "cpu"
        else None
    )
    if limit is not None:
        request.applymarker(pytest.mark.xfail(reason=f"known limit of the CPU backend: {limit}", strict=False))
    if module_row.problem is not None:
        pytest.skip(module_row.problem)
    try:
        call = corpus_calls.module_call(module_row, corpus_where[0])
    except corpus_calls.Skip as why:
        pytest.skip(str(why))
    if call.notes:
        record_property(INFO_PROPERTY, {**module_row.info(), **call.notes})
    try:
        with module_row.origin(call.passed):  # a failure's reproducer rebuilds the sample from module_db
            parity(
                call.fn,
                *call.args,
                dtypes=(module_row.dtype,),
                grad=call.grad,
                module=call.module,
                name=module_row.name,
                **corpus_calls.criterion_options(corpus_where[0]),
                allow_vacuous=True,
            )
    except DtypeUnsupported as exc:
        pytest.skip(f"{module_row.name} has no {module_row.dtype} kernel on {exc.backend}: {exc}")
    except ParityError as exc:
        if exc.kind != "nondeterministic":
            raise
        pytest.skip(f"{module_row.name} in {module_row.variant} mode is random (dropout): two float64 runs differ")
