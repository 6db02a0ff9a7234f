"""triton (accelerated port: an AMD backend): kernels written here, judged against torch.

Each kernel runs through the ``parity`` fixture with a function that is torch's own operator for
the float64 reference and the triton kernel for every dtype under test, so the kernel is judged
against float64 torch with the project's per-dtype tolerances. The target that ran (hip/cuda,
arch, warp size, or the interpreter) goes into the report.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest
from _library_support import import_library, require_torch

from pytest_rocm import DEFAULT_DTYPES

torch = require_torch()

pytestmark = [pytest.mark.library("triton", "accelerated-port"), pytest.mark.timeout(300)]

DTYPES = DEFAULT_DTYPES


def triton_target(triton: ModuleType, interpreting: bool) -> dict[str, Any]:
    if interpreting:
        return {"backend": "interpreter", "target": "interpreter"}
    target = triton.runtime.driver.active.get_current_target()
    return {
        "backend": target.backend,
        "target": f"{target.backend}:{target.arch}",
        "arch": str(target.arch),
        "warp_size": target.warp_size,
    }


@pytest.fixture
def kernels(request: pytest.FixtureRequest, triton_interpreting: tuple[bool, str], library_info: dict) -> ModuleType:
    triton = import_library("triton", "triton")  # absent / broken triton decides the outcome first
    device = request.getfixturevalue("device")
    interpreting, why = triton_interpreting
    if interpreting and device.type != "cpu":
        pytest.skip(
            f"triton runs in its interpreter ({why}), which works on CPU tensors; device under test is {device}"
        )
    if not interpreting and device.type == "cpu":
        pytest.skip(f"triton compiles for GPUs; device under test is the CPU but TRITON_INTERPRET is off ({why})")
    mismatch = standard_library_mode_problem(interpreting, _standard_library_interpreted())
    if mismatch:
        pytest.fail(mismatch, pytrace=False)
    library_info.update(triton_target(triton, interpreting))
    import _triton_kernels

    return _triton_kernels


def standard_library_mode_problem(interpreting: bool, library_interpreted: bool) -> str | None:
    """Why the kernels cannot run as decided, when triton's own ``tl.max``/``tl.sum`` were
    decorated in the other mode (``library_interpreted``: triton was imported before
    TRITON_INTERPRET was settled): every kernel would then fail with "Cannot call @triton.jit'd
    outside of the scope of a kernel", which reads like a triton bug. None when the modes agree."""
    if library_interpreted == interpreting:
        return None
    mode = "interpreter" if interpreting else "compiler"
    other = "interpreter" if library_interpreted else "compiler"
    return (
        f"the kernels were to run in triton's {mode} but triton.language was imported earlier for the {other}"
        " (something imported triton before TRITON_INTERPRET was decided): set TRITON_INTERPRET=1 (or 0)"
        " in the environment before pytest starts"
    )


def _standard_library_interpreted() -> bool:
    from triton.language import standard
    from triton.runtime.interpreter import InterpretedFunction

    return isinstance(standard.max, InterpretedFunction)


def bf16_interpreter_problem(op: Callable[..., Any], exact_args: list[Any]) -> str | None:
    """The interpreter keeps bfloat16 as raw uint16 (numpy has no bfloat16): kernels that compute
    in bfloat16 (not after a cast to float32) give garbage there. Run the kernel on small integer
    inputs (exact in bfloat16) in bfloat16 and float32; a difference beyond bfloat16 rounding
    means the interpreter, not the kernel, cannot do it. None when it can."""
    got = op(*[a.to(torch.bfloat16) for a in exact_args]).double()
    want = op(*[a.to(torch.float32) for a in exact_args]).to(torch.bfloat16).double()
    err = (got - want).abs().max().item()
    if err == err and err <= 2.0**-7 * want.abs().max().item() * 2:
        return None
    return f"max error {err:.3g} on exact inputs"


def run_parity(
    parity: Any,
    name: str,
    dtype: str,
    kernel: Callable[..., Any],
    reference: Callable[..., Any],
    args: list[Any],
    interpreting: bool,
    **parity_options: Any,
) -> None:
    if dtype == "bfloat16" and interpreting:
        exact = [a.round().clamp(-4, 4) for a in args]
        problem = bf16_interpreter_problem(kernel, exact)
        if problem:
            pytest.skip(
                f"triton interpreter cannot run {name} in bfloat16 (numpy has no bfloat16: "
                f"values are kept as raw uint16 bits; {problem}): library triton, op {name}, "
                "dtype bfloat16, backend interpreter"
            )

    # the float64 reference pass runs torch's operator; every dtype under test runs the kernel
    parity(kernel, *args, dtypes=(dtype,), reference_fn=reference, name=f"triton {name}", **parity_options)


def _randn(*shape: int) -> Any:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(sum(shape)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_vector_add(kernels: ModuleType, parity: Any, dtype: str, triton_interpreting: tuple[bool, str]) -> None:
    run_parity(
        parity,
        "vector_add",
        dtype,
        kernels.vector_add,
        torch.add,
        [_randn(1000), _randn(1000) * 3],
        triton_interpreting[0],
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_fused_softmax(kernels: ModuleType, parity: Any, dtype: str, triton_interpreting: tuple[bool, str]) -> None:
    # 100 columns: not a power of two, so the masked tail of the row block is exercised.
    # Softmax turns the rounding of large logits to the dtype into relative output error
    # (|x| * eps), beyond the absolute table: judge it against torch's own softmax in the same
    # dtype on the CPU (at most 2x its error), as the operator suite does.
    def reference(x: Any) -> Any:
        return torch.softmax(x, dim=-1)

    run_parity(
        parity,
        "fused_softmax",
        dtype,
        kernels.softmax,
        reference,
        [_randn(17, 100) * 4],
        triton_interpreting[0],
        mode="cpu-relative",
        baseline=reference,
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_tiled_matmul(kernels: ModuleType, parity: Any, dtype: str, triton_interpreting: tuple[bool, str]) -> None:
    # 50x70 @ 70x40 with 32x32x32 tiles: ragged edges in every dimension, three K tiles
    run_parity(
        parity,
        "tiled_matmul",
        dtype,
        kernels.matmul,
        torch.matmul,
        [_randn(50, 70), _randn(70, 40)],
        triton_interpreting[0],
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_layer_norm_forward(
    kernels: ModuleType, parity: Any, dtype: str, triton_interpreting: tuple[bool, str]
) -> None:
    def reference(x: Any, w: Any, b: Any) -> Any:
        return torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, eps=1e-5)

    args = [_randn(9, 100) * 2 + 1, _randn(100), _randn(1, 100)[0]]
    run_parity(parity, "layer_norm_forward", dtype, kernels.layer_norm, reference, args, triton_interpreting[0])
