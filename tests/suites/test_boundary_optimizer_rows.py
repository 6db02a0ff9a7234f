"""The optimizer rows run the implementation a GPU takes: ``foreach=True`` rows call the
multi-tensor (``_foreach_*``) ops, ``fused=True`` rows a fused kernel (``_fused_*``), the float64
reference the single-tensor loop; every row steps more parameters than one multi-tensor launch
takes at any depth. Checked by recording the aten ops each row's call dispatches."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "suites" / "operators"))
import boundary_families  # noqa: E402

from pytest_rocm.coverage.catalogue import CATALOGUE  # noqa: E402
from pytest_rocm.coverage.catalogue_more import MULTI_TENSOR_MAX, OPTIMIZERS, PARAMS  # noqa: E402


class Ops(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        self.names.add(str(func.overloadpacket.__name__))
        return func(*args, **(kwargs or {}))


def ops_of(name: str, impl: str, dtype: torch.dtype) -> set[str]:
    space = CATALOGUE[f"optimizer/{name.lower()}"]
    row = next(r for r in space.array("ci").rows if r["impl"] == impl and r["dtype"] == "float32")
    case = boundary_families.optimizer(name)(row)
    args = [a.to(dtype) for a in case.args]
    with Ops() as seen:
        case.fn(*args)
    return seen.names


@pytest.mark.parametrize(("name", "impl"), [(n, i) for n, impls in OPTIMIZERS.items() for i in impls])
def test_the_forced_implementation_is_the_one_that_runs(name: str, impl: str) -> None:
    seen = ops_of(name, impl, torch.float32)
    foreach, fused = {n for n in seen if n.startswith("_foreach_")}, {n for n in seen if n.startswith("_fused_")}
    if impl == "foreach":
        assert foreach and not fused, (name, sorted(seen))
    else:
        assert fused, (name, sorted(seen))
    reference = ops_of(name, impl, torch.float64)  # the float64 step: the single-tensor loop
    assert not any(n.startswith(("_foreach_", "_fused_")) for n in reference), (name, sorted(reference))


def test_every_row_steps_more_tensors_than_one_launch_takes() -> None:
    assert max(MULTI_TENSOR_MAX) < PARAMS
    for key, space in CATALOGUE.items():
        if space.family in ("optimizer", "clipping"):
            for label in space.all_values()["params"]:
                assert len(boundary_families._sizes(label)) == PARAMS > max(MULTI_TENSOR_MAX), (key, label)
    assert max(boundary_families._sizes(f"p{PARAMS}_chunked")) > 65536  # more than one chunk
