"""torch.distributed across processes: collectives, a DDP training step, peer copies between GPUs.

Rows ``distributed/<check>[<backend>]``. Every rank is its own process (``dist_launch.py``), started with
a hard timeout: ranks that hang are killed and the row ends as ``timeout``, never as a stuck run.
gloo runs on the CPU (so CI runs these rows); nccl (RCCL on ROCm) and peer copies need two GPUs and
skip, naming how many there are, otherwise. Each result is compared with a single-process reference
computed here from the same seeded inputs.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from pytest_rocm import INFO_PROPERTY, PARITY_PROPERTY, not_installed_reason

torch = pytest.importorskip("torch", reason=not_installed_reason("torch"))
if not torch.distributed.is_available():
    pytest.skip(f"torch {torch.__version__} is built without torch.distributed", allow_module_level=True)

import dist_launch as launch  # noqa: E402
import dist_worker  # noqa: E402  (this folder is on sys.path: the suite has no __init__.py)

#: each row's pytest-timeout limit; the watchdog kills the ranks earlier, so the row reports the hang
#: (PYTEST_ROCM_DIST_TIMEOUT sets both: gpu_run.sh's per-test limit, the plugin's own hang tests)
ROW_TIMEOUT_S = float(os.environ.get("PYTEST_ROCM_DIST_TIMEOUT", "180"))
WATCHDOG_S = max(1.0, ROW_TIMEOUT_S - max(3.0, 0.2 * ROW_TIMEOUT_S))
WORLD = 2
#: (ci, full) sizes: full crosses RCCL's large-message protocols (64 MiB per rank) and DDP's bucketing
NUMEL = {"ci": 4096, "full": 16 * 2**20}
DDP = {
    "ci": {"width": 16, "hidden": 32, "batch": 8, "steps": 3},
    "full": {"width": 1024, "hidden": 4096, "batch": 64, "steps": 3},
}
#: DDP parameters after 3 SGD steps against one process on the whole batch: the averaged gradient
#: equals the full-batch one up to float32 summation order (measured on the CPU: ~1e-8)
DDP_NORMWISE = 1e-5

COLLECTIVES = ("all_reduce", "all_gather", "broadcast")


def _row(check: str, backend: str) -> pytest.MarkDecorator:
    return pytest.mark.rocm_feature(f"distributed/{check}[{backend}]")


def _params(checks: tuple[str, ...]) -> list:
    return [
        pytest.param(
            check, backend, id=f"{check}-{backend}", marks=[_row(check, backend), pytest.mark.timeout(ROW_TIMEOUT_S)]
        )
        for check in checks
        for backend in ("gloo", "nccl")
    ]


def _gpu_count() -> int:
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def _skip_unless_runnable(backend: str, rocm_device: torch.device) -> None:
    if backend == "gloo":
        return
    if rocm_device.type != "cuda":
        pytest.skip(f"{backend} needs {WORLD} GPUs: the device under test is {rocm_device.type}")
    if _gpu_count() < WORLD:
        pytest.skip(f"{backend} (RCCL on ROCm) needs {WORLD} GPUs, {_gpu_count()} here")


_POOLS: dict[tuple[int, str], launch.Ranks] = {}


@pytest.fixture(scope="module", autouse=True)
def _close_pools():
    yield
    while _POOLS:
        _POOLS.popitem()[1].close()


def _run(request: pytest.FixtureRequest, tmp_path: Path, task: str, world: int, backend: str, **opts) -> list[dict]:
    """Run the task on the module's ranks (started on first use); their result dicts, or a failed or
    timeout row that says what each rank did."""
    started = time.monotonic()
    key = (world, backend)
    if key in _POOLS and not _POOLS[key].alive():
        _POOLS.pop(key).close(kill=True)
    if key not in _POOLS:
        _POOLS[key] = launch.Ranks(world, backend, pg_timeout=WATCHDOG_S + 60)
    ranks = _POOLS[key]
    result = ranks.run(task, tmp_path, started + WATCHDOG_S, WATCHDOG_S, **opts)
    request.node.user_properties.append(
        (INFO_PROPERTY, {"ranks": {"seconds": round(result.seconds, 2), "answers": result.describe()}})
    )
    if result.hung or result.died:
        _POOLS.pop(key, None)  # already killed: the next row starts a fresh group
    if result.hung:
        launch.fail_as_timeout(started, result.describe())
    if not result.ok():
        pytest.fail(f"{task} over {backend}: {result.describe()}", pytrace=False)
    return [torch.load(tmp_path / f"rank{r}.pt") for r in range(world)]


def _compare(name: str, got: torch.Tensor, expected: torch.Tensor, records: list, normwise: float = 0.0) -> str | None:
    err = float((got.double() - expected.double()).norm() / expected.double().norm().clamp_min(1e-300))
    max_abs = float((got.double() - expected.double()).abs().max())
    ok = err <= normwise if normwise else torch.equal(got, expected)
    records.append(
        {
            "dtype": "float32",
            "name": name,
            "normwise": err,
            "max_abs": max_abs,
            "ok": ok,
            "mode": "absolute",
            "normwise_bound": normwise,
        }
    )
    if ok:
        return None
    return f"{name}: normwise error {err:.3g} (max abs {max_abs:.3g}) against the single-process reference"


@pytest.mark.parametrize(("check", "backend"), _params(COLLECTIVES))
def test_collective(check: str, backend: str, rocm_device, rocm_scale: str, request, tmp_path, record_property) -> None:
    """all_reduce (sum), all_gather and broadcast from rank 0 of seeded per-rank tensors."""
    _skip_unless_runnable(backend, rocm_device)
    numel = NUMEL[rocm_scale]
    record_property(INFO_PROPERTY, {"world": WORLD, "numel": numel, "backend": backend})
    outputs = _run(request, tmp_path, check, WORLD, backend, numel=numel)
    inputs = [dist_worker.rank_input(r, numel) for r in range(WORLD)]
    expected = {
        # summed in float64 and rounded once: with two ranks float32's own sum is exactly this
        "all_reduce": torch.stack(inputs).double().sum(0).float(),
        "all_gather": torch.stack(inputs),
        "broadcast": inputs[0],
    }[check]
    records: list = []
    problems = [p for r, out in enumerate(outputs) if (p := _compare(f"rank{r}.out", out["out"], expected, records))]
    record_property(PARITY_PROPERTY, records)
    assert not problems, f"{check} over {backend}: " + "; ".join(problems)


def _ddp_reference(width: int, hidden: int, batch: int, steps: int) -> dict[str, torch.Tensor]:
    model = dist_worker.ddp_model(width, hidden)
    optimizer = torch.optim.SGD(model.parameters(), lr=dist_worker.DDP_LR)
    for x, y in dist_worker.ddp_batches(steps, batch, width):
        optimizer.zero_grad(set_to_none=True)
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
    return {name: p.detach() for name, p in model.named_parameters()}


@pytest.mark.parametrize(("check", "backend"), _params(("ddp-step",)))
def test_ddp_step(check: str, backend: str, rocm_device, rocm_scale: str, request, tmp_path, record_property) -> None:
    """Three SGD steps of a two-layer MLP under DistributedDataParallel, each rank on half the batch,
    end where one process on the whole batch ends; both ranks hold the same parameters."""
    _skip_unless_runnable(backend, rocm_device)
    sizes = DDP[rocm_scale]
    record_property(INFO_PROPERTY, {"world": WORLD, "backend": backend, **sizes})
    outputs = _run(request, tmp_path, "ddp-step", WORLD, backend, **sizes)
    reference = _ddp_reference(**sizes)
    records: list = []
    problems = []
    for rank, params in enumerate(outputs):
        for name, expected in reference.items():
            problem = _compare(f"rank{rank}.{name}", params[name], expected, records, DDP_NORMWISE)
            if problem:
                problems.append(problem)
    for name in reference:  # DDP keeps replicas identical: any difference is a broken all_reduce
        if not torch.equal(outputs[0][name], outputs[1][name]):
            problems.append(f"{name}: rank 0 and rank 1 differ after the step")
    record_property(PARITY_PROPERTY, records)
    assert not problems, f"DDP over {backend}: " + "; ".join(problems[:6])


@pytest.mark.rocm_feature("distributed/peer-copy[cuda]")
@pytest.mark.timeout(ROW_TIMEOUT_S)
def test_peer_copy(rocm_device, rocm_scale: str, request, tmp_path, record_property) -> None:
    """A tensor copied GPU 0 -> GPU 1 -> GPU 0 arrives unchanged (in a child process: a broken peer
    path, an IOMMU setting for example, hangs rather than fails)."""
    if rocm_device.type != "cuda" or _gpu_count() < 2:
        pytest.skip(f"peer copies need 2 GPUs, {_gpu_count() if rocm_device.type == 'cuda' else 0} under test here")
    numel = NUMEL[rocm_scale]
    record_property(INFO_PROPERTY, {"numel": numel, "can_access_peer": torch.cuda.can_device_access_peer(0, 1)})
    (out,) = _run(request, tmp_path, "peer-copy", 1, "none", numel=numel)
    expected = dist_worker.rank_input(0, numel)
    records: list = []
    problems = [p for name in ("there", "back") if (p := _compare(name, out[name], expected, records))]
    record_property(PARITY_PROPERTY, records)
    assert not problems, "peer copy: " + "; ".join(problems)
