"""The doctor's advice from current knowledge (issue 17): per-node overrides, values the runtime
rejects, reinstall advice that names an index carrying the GPU's gfx, AMD's own wheels, variables
that do nothing, a PyPI triton beside ROCm's, APU memory, multi-GPU hosts, TheRock's libraries.

Setups run through the real detection over fake sysfs trees (fake_machines), so a check sees what
it would see on that machine.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fake_machines import (
    CPU_NODE,
    MOCK_7900XTX,
    Machine,
    Node,
    arch_list_for,
    build_tree,
    fake_torch,
    properties,
    seam_for,
    write,
)

from pytest_rocm.doctor import render as doctor
from pytest_rocm.doctor.checks import Check, diagnose
from pytest_rocm.doctor.facts import reinstall_command, sdpa_not_offered_hint, wheel_advice
from pytest_rocm.env.detect import detect_environment
from pytest_rocm.env.model import Environment, SystemGpu

GIB = 1024**3


def device(name: str, gcn_arch: str, memory: int = 16 * GIB, cus: int = 32) -> dict[str, Any]:
    return {"name": name, "gcnArchName": gcn_arch, "total_memory": memory, "multi_processor_count": cus}


def node(version: int, minor: int = 128, vram: int | None = 16 * GIB) -> Node:
    return Node(properties(MOCK_7900XTX, gfx_target_version=version, drm_render_minor=minor), 1234, "gpu", vram)


def run(
    tmp_path: Path,
    nodes: list[Node],
    torch: Any,
    environ: dict[str, str] | None = None,
    distributions: dict[str, str | None] | None = None,
    cmdline: str | None = None,
    **machine: Any,
) -> dict[str, Check]:
    root = build_tree(
        tmp_path / "root", Machine([Node(CPU_NODE), *nodes], rocm_version=machine.pop("rocm", "6.2.4"), **machine)
    )
    (root / "home/user").mkdir(parents=True, exist_ok=True)
    if cmdline is not None:
        write(root, "proc/cmdline", cmdline + "\n")
    seam = seam_for(
        root,
        torch,
        environ={"HOME": "/home/user", **(environ or {})},
        distributions=distributions or {},
    )
    env = detect_environment(seam)
    return {c.id: c for c in diagnose(env, doctor.probe_extras(seam, env))}


def rocm_torch(*devices: dict[str, Any], version: str = "2.6.0+rocm6.2.4", index: str = "rocm6.2.4") -> Any:
    return fake_torch(version, hip="6.2.41133-dd7f95766", arch_list=arch_list_for(index), devices=list(devices))


def problems(checks: dict[str, Check]) -> dict[str, str]:
    return {c.id: c.status for c in checks.values() if c.status in ("warn", "fail")}


# -- HSA_OVERRIDE_GFX_VERSION as the runtime reads it ---------------------------------------------
@pytest.mark.parametrize("value", ["10.3.0\r", "10.3.0\n", "10.3.0 "])
def test_override_with_a_trailing_character_fails_as_the_runtime_rejects_it(tmp_path: Path, value: str) -> None:
    """A CRLF .env file leaves '10.3.0\\r': libhsakmt's sscanf('%u.%u.%u%c') reads 4 fields."""
    checks = run(
        tmp_path,
        [node(100301)],
        rocm_torch(device("AMD Radeon RX 6700 XT", "gfx1030")),
        {"HSA_OVERRIDE_GFX_VERSION": value},
    )
    check = checks["hsa-override"]
    assert check.status == "fail" and "after the stepping" in check.evidence and "runtime rejects it" in check.evidence
    assert check.fix == "export HSA_OVERRIDE_GFX_VERSION=10.3.0"
    assert "\n" not in check.line and "\r" not in check.line.replace("\\r", "")


def test_an_empty_override_is_set_and_invalid(tmp_path: Path) -> None:
    """getenv() returns "" (not NULL), sscanf fails: the runtime rejects it."""
    checks = run(
        tmp_path,
        [node(110000)],
        rocm_torch(device("AMD Radeon RX 7900 XTX", "gfx1100")),
        {"HSA_OVERRIDE_GFX_VERSION": ""},
    )
    assert checks["hsa-override"].status == "fail" and checks["hsa-override"].fix == "unset HSA_OVERRIDE_GFX_VERSION"


def test_per_node_override_on_an_igpu_plus_dgpu_box(tmp_path: Path) -> None:
    """RX 7900 XTX (node 1) + a gfx1036 iGPU (node 2) spoofed as gfx1030 by HSA_OVERRIDE_GFX_VERSION_2:
    the per-node variable is recorded, judged for node 2 only, and the spoof is reported."""
    torch = rocm_torch(device("AMD Radeon RX 7900 XTX", "gfx1100"), device("AMD Radeon Graphics", "gfx1030", GIB, 2))
    checks = run(
        tmp_path, [node(110000), node(100306, minor=129, vram=GIB)], torch, {"HSA_OVERRIDE_GFX_VERSION_2": "10.3.0"}
    )
    assert checks["hsa-override"].status == "ok"
    assert (
        "HSA_OVERRIDE_GFX_VERSION_2=10.3.0: gfx1036 runs gfx1030 code (same family rdna2)"
        in checks["hsa-override"].evidence
    )
    reported = checks["reported-gfx"]
    assert reported.status == "warn" and "HSA_OVERRIDE_GFX_VERSION_2=10.3.0" in reported.evidence
    assert "reports gfx1030 but the kernel says it is gfx1036" in reported.evidence


def test_per_node_override_is_recorded_and_wins(tmp_path: Path) -> None:
    root = build_tree(tmp_path, Machine([Node(CPU_NODE), node(110000), node(100306, minor=129)]))
    environ = {
        "HSA_OVERRIDE_GFX_VERSION": "11.0.0",
        "HSA_OVERRIDE_GFX_VERSION_2": "10.3.0",
        "HSA_OVERRIDE_GFX_VERSION_7": "9.0.0",
    }
    env = detect_environment(
        seam_for(root, rocm_torch(device("a", "gfx1100"), device("b", "gfx1030")), environ=environ)
    )
    assert env.variables["HSA_OVERRIDE_GFX_VERSION_2"] == "10.3.0"
    # only GPU nodes are read: the runtime never looks at node 7
    assert "HSA_OVERRIDE_GFX_VERSION_7" not in env.variables
    assert [d.hardware_gfx for d in env.devices] == ["gfx1100", "gfx1036"]


def test_per_node_override_naming_a_cpu_node_is_ignored_by_the_runtime(tmp_path: Path) -> None:
    env = Environment(variables={"HSA_OVERRIDE_GFX_VERSION_0": "10.3.0"})
    env.system.gpus = [SystemGpu(node=1, gfx="gfx1031")]
    (check,) = [c for c in diagnose(env) if c.id == "hsa-override"]
    assert check.status == "warn" and "names no KFD GPU node (GPU nodes: 1" in check.evidence


def test_a_bad_per_node_value_fails_naming_its_variable(tmp_path: Path) -> None:
    env = Environment(variables={"HSA_OVERRIDE_GFX_VERSION_1": "9.0.a"})
    env.system.gpus = [SystemGpu(node=1, gfx="gfx90a")]
    (check,) = [c for c in diagnose(env) if c.id == "hsa-override"]
    assert check.status == "fail" and check.evidence.startswith("HSA_OVERRIDE_GFX_VERSION_1='9.0.a'")
    assert check.fix == "export HSA_OVERRIDE_GFX_VERSION_1=9.0.10"


def test_11_0_0_on_strix_halo_is_not_a_failure(tmp_path: Path) -> None:
    checks = run(
        tmp_path,
        [node(110501)],
        rocm_torch(device("AMD Radeon 8060S", "gfx1100")),
        {"HSA_OVERRIDE_GFX_VERSION": "11.0.0"},
    )
    assert checks["hsa-override"].status == "ok"
    assert "gfx1151 runs gfx1100 code (same generic target gfx11-generic)" in checks["hsa-override"].evidence


# -- reinstall advice names an index whose wheels carry the gfx -----------------------------------
def _env(gfx: str, rocm: str | None) -> Environment:
    env = Environment()
    env.system.gpus = [SystemGpu(node=1, gfx=gfx)]
    env.system.rocm_version = rocm
    return env


def test_a_gfx1151_box_on_rocm_6_4_is_not_sent_to_the_rocm6_4_index() -> None:
    index, note, carried = wheel_advice(_env("gfx1151", "6.4.1-61"))
    assert index == "https://download.pytorch.org/whl/rocm7.2"
    assert note and "ROCm 6.4 wheels (torch 2.9) lack gfx1151" in note
    assert carried


@pytest.mark.parametrize(
    ("gfx", "rocm", "index"),
    [
        ("gfx1100", "6.4.1", "rocm6.4"),
        ("gfx942", "6.2.4-120", "rocm6.2.4"),
        ("gfx1103", "7.1.0", "rocm7.1"),
        ("gfx1031", "6.4.0", "rocm6.4"),
    ],
)
def test_the_installed_rocm_index_when_it_carries_the_gfx(gfx: str, rocm: str, index: str) -> None:
    assert wheel_advice(_env(gfx, rocm)) == (f"https://download.pytorch.org/whl/{index}", None, True)


def test_a_gfx_no_pytorch_wheel_carries_names_amds_index() -> None:
    command = reinstall_command(_env("gfx1152", "7.2.0"))
    assert "no PyTorch ROCm wheel carries gfx1152" in command and "repo.amd.com/rocm/whl-multi-arch" in command


def test_gfx_missing_that_no_pytorch_wheel_carries_says_so_and_names_a_source_build(tmp_path: Path) -> None:
    """gfx1152 on a ROCm torch without it: no override, no PyTorch index to send it to (the advice
    is decided by wheel_advice's ``carried``, not by the wording of its note)."""
    assert wheel_advice(_env("gfx1152", "7.2.0")).carried is False
    checks = run(tmp_path, [node(110502)], rocm_torch(device("AMD Radeon 820M", "gfx1152")))
    fix = checks["gfx-in-build"].fix or ""
    assert checks["gfx-in-build"].status == "fail"
    assert "no PyTorch ROCm wheel carries gfx1152" in fix and "PYTORCH_ROCM_ARCH=gfx1152" in fix
    assert "pip install torch --index-url" not in fix


def test_cuda_wheel_on_a_strix_halo_gets_an_index_with_gfx1151(tmp_path: Path) -> None:
    torch = fake_torch("2.12.0+cu130", cuda="13.0")
    checks = run(tmp_path, [node(110501)], torch, rocm="6.4.1-61")
    check = checks["torch-build"]
    assert check.status == "fail" and "--index-url https://download.pytorch.org/whl/rocm7.2" in (check.fix or "")


def test_gfx_missing_without_override_names_an_index_that_has_it(tmp_path: Path) -> None:
    """gfx1151 on a 6.2.4 wheel: no override is usual for it, but torch 2.14 on rocm7.2 carries it."""
    checks = run(tmp_path, [node(110501)], rocm_torch(device("AMD Radeon 8060S", "gfx1151")))
    fix = checks["gfx-in-build"].fix or ""
    assert checks["gfx-in-build"].status == "fail" and "--index-url https://download.pytorch.org/whl/rocm7.2" in fix


# -- published pairs and AMD's own builds ---------------------------------------------------------
@pytest.mark.parametrize(
    "version",
    [
        "2.14.0+rocm7.2",
        "2.14.0+rocm7.14",
        "2.12.0+rocm7.1",
        "2.13.0+rocm7.2",
        "2.12.0+rocm7.14.0",
        "2.14.0+rocm7.15.0a20260718",
        "2.13.0+rocm7.13.0",
        "2.9.0+rocmsdk20251116",
        "2.13.0+rocm10.0.0",  # AMD's stable whl-next index (ROCm 10)
        "2.9.1+rocm7.2.1",  # repo.radeon.com/rocm/manylinux/rocm-rel-7.2.1
        "2.8.0+rocm7.1.0.lw.git4f3e6c21",  # a legacy ROCm build
        "2.3.1+rocm5.7",  # on PyTorch's rocm5.7 index
        "2.5.1+rocm6.2.custom",  # a source or distribution build
    ],
)
def test_no_false_never_published_warning(tmp_path: Path, version: str) -> None:
    checks = run(tmp_path, [node(110000)], rocm_torch(device("AMD Radeon RX 7900 XTX", "gfx1100"), version=version))
    assert checks["torch-rocm-pair"].status in ("ok", "skipped"), checks["torch-rocm-pair"]


@pytest.mark.parametrize(("version", "published"), [("2.1.2+rocm5.5", "5.6"), ("2.14.0+rocm6.4", "7.2, 7.14")])
def test_pairs_without_evidence_warn(tmp_path: Path, version: str, published: str) -> None:
    checks = run(tmp_path, [node(110000)], rocm_torch(device("AMD Radeon RX 7900 XTX", "gfx1100"), version=version))
    check = checks["torch-rocm-pair"]
    assert check.status == "warn" and f"(published: {published}; the bundled snapshot of " in check.evidence


# -- variables, libraries, memory, multi-GPU ------------------------------------------------------
def test_pytorch_tunable_backend_does_nothing(tmp_path: Path) -> None:
    checks = run(
        tmp_path,
        [node(110000)],
        rocm_torch(device("AMD Radeon RX 7900 XTX", "gfx1100")),
        {"PYTORCH_TUNABLE_BACKEND": "1"},
    )
    check = checks["variables"]
    assert check.status == "warn" and "PYTORCH_TUNABLE_BACKEND=1 is set but does nothing" in check.evidence
    assert check.fix == "unset PYTORCH_TUNABLE_BACKEND; export PYTORCH_TUNABLEOP_ENABLED=1"
    assert problems(checks) == {"variables": "warn"}


def test_the_new_variables_are_recorded(tmp_path: Path) -> None:
    root = build_tree(tmp_path, Machine([Node(CPU_NODE), node(110000)]))
    names = [
        "TORCH_ROCM_AOTRITON_ENABLE_EXPERIMENTAL",
        "TORCH_BLAS_PREFER_HIPBLASLT",
        "PYTORCH_TUNABLEOP_ROTATING_BUFFER_SIZE",
        "HSA_ENABLE_DXG_DETECTION",
        "NCCL_P2P_DISABLE",
        "HSA_FORCE_FINE_GRAIN_PCIE",
        "PYTORCH_HIP_ALLOC_CONF",
        "PYTORCH_CUDA_ALLOC_CONF",
    ]
    env = detect_environment(seam_for(root, environ={n: f"v{i}" for i, n in enumerate(names)}))
    assert [env.variables[n] for n in names] == [f"v{i}" for i in range(len(names))]


@pytest.mark.parametrize(
    ("dists", "status"),
    [
        ({"triton": "3.4.0", "pytorch-triton-rocm": "3.2.0"}, "warn"),
        ({"triton": "3.4.0"}, "warn"),
        ({"pytorch-triton-rocm": "3.2.0"}, "ok"),
    ],
)
def test_pypi_triton_next_to_a_rocm_torch_is_a_visible_conflict(
    tmp_path: Path, dists: dict[str, str | None], status: str
) -> None:
    checks = run(tmp_path, [node(110000)], rocm_torch(device("AMD Radeon RX 7900 XTX", "gfx1100")), distributions=dists)
    assert checks["triton"].status == status
    if status == "warn":
        assert "PyPI triton 3.4.0" in checks["triton"].evidence and checks["triton"].fix.startswith(
            "pip uninstall -y triton"
        )


def test_strix_halo_with_a_96_gib_carve_out_gets_no_memory_warning(tmp_path: Path) -> None:
    """128 GB Strix Halo with 96 GiB for the GPU (antirez/ds4#475): MemTotal shows the rest."""
    root = build_tree(
        tmp_path / "root", Machine([Node(CPU_NODE), node(110501, vram=96 * GIB)], mem_total_kb=31 * 1024**2)
    )
    write(root, "sys/class/drm/renderD128/device/mem_info_gtt_total", f"{15 * GIB}\n")
    env = detect_environment(seam_for(root, rocm_torch(device("AMD Radeon 8060S", "gfx1151", 96 * GIB, 40))))
    (check,) = [c for c in diagnose(env) if c.id == "memory"]
    assert check.status == "ok" and "gfx1151: 96.0 GiB carve-out + 15.0 GiB GTT" in check.evidence


def test_a_discrete_card_with_less_ram_still_warns(tmp_path: Path) -> None:
    root = build_tree(
        tmp_path / "root", Machine([Node(CPU_NODE), node(110000, vram=24 * GIB)], mem_total_kb=16 * 1024**2)
    )
    env = detect_environment(seam_for(root, rocm_torch(device("AMD Radeon RX 7900 XTX", "gfx1100", 24 * GIB))))
    (check,) = [c for c in diagnose(env) if c.id == "memory"]
    assert check.status == "warn"


@pytest.mark.parametrize(
    ("cmdline", "environ", "status"),
    [
        ("BOOT_IMAGE=/vmlinuz-5.15.0-101-generic root=/dev/mapper/ubuntu--vg-ubuntu--lv ro", {}, "warn"),
        (
            "BOOT_IMAGE=/vmlinuz-5.15.0-101-generic root=/dev/mapper/ubuntu--vg-ubuntu--lv ro iommu=pt",
            {},
            "ok",
        ),  # ROCm/rccl#1129
        ("BOOT_IMAGE=/vmlinuz ro", {"NCCL_P2P_DISABLE": "1"}, "ok"),
        (None, {}, "skipped"),
    ],
)
def test_multi_gpu_hosts_need_iommu_pt_or_no_p2p(
    tmp_path: Path, cmdline: str | None, environ: dict[str, str], status: str
) -> None:
    torch = rocm_torch(device("AMD Radeon RX 7900 XTX", "gfx1100"), device("AMD Radeon RX 7900 XTX", "gfx1100"))
    checks = run(tmp_path, [node(110000), node(110000, minor=129)], torch, environ, cmdline=cmdline)
    assert checks["multi-gpu"].status == status, checks["multi-gpu"]
    if status == "warn":
        assert "iommu=pt" in checks["multi-gpu"].fix and "NCCL_P2P_DISABLE=1" in checks["multi-gpu"].fix


def test_one_gpu_is_not_a_multi_gpu_host(tmp_path: Path) -> None:
    checks = run(tmp_path, [node(110000)], rocm_torch(device("AMD Radeon RX 7900 XTX", "gfx1100")), cmdline="ro")
    assert checks["multi-gpu"].status == "skipped"


def test_therock_build_on_gfx1103_explains_missing_libraries(tmp_path: Path) -> None:
    torch = rocm_torch(device("AMD Radeon 780M", "gfx1103"), version="2.10.0a0+rocm7.10.0a20251120")
    checks = run(tmp_path, [node(110003)], torch)
    check = checks["rocm-libraries"]
    assert check.status == "ok" and "gfx1103: no hipSPARSELt, composable_kernel, hipTensor, rccl" in check.evidence


def test_therock_build_without_rccl_on_two_gpus_warns(tmp_path: Path) -> None:
    torch = rocm_torch(device("a", "gfx1150"), device("b", "gfx1150"), version="2.12.0+rocm7.14.0")
    checks = run(tmp_path, [node(110500), node(110500, minor=129)], torch)
    assert checks["rocm-libraries"].status == "warn" and "no RCCL for gfx1150" in checks["rocm-libraries"].evidence


def test_a_pytorch_wheel_gets_no_therock_library_claims(tmp_path: Path) -> None:
    checks = run(tmp_path, [node(110003)], rocm_torch(device("AMD Radeon 780M", "gfx1103"), version="2.13.0+rocm7.2"))
    assert checks["rocm-libraries"].status == "skipped"


@pytest.mark.parametrize(
    ("arch_name", "variables", "named"),
    [
        ("gfx1100", {}, True),
        ("gfx1151", {"TORCH_ROCM_AOTRITON_ENABLE_EXPERIMENTAL": "0"}, True),
        ("gfx1201", {}, True),
        ("gfx1100", {"TORCH_ROCM_AOTRITON_ENABLE_EXPERIMENTAL": "1"}, False),
        ("gfx942:sramecc+:xnack-", {}, False),  # CDNA: AOTriton's kernels are not experimental there
        ("", {}, False),  # the CPU
    ],
)
def test_sdpa_not_offered_names_the_experimental_variable(
    arch_name: str, variables: dict[str, str], named: bool
) -> None:
    hint = sdpa_not_offered_hint(arch_name, variables)
    assert (hint is not None and "export TORCH_ROCM_AOTRITON_ENABLE_EXPERIMENTAL=1" in hint) is named


def test_per_node_override_next_to_a_global_one(tmp_path: Path) -> None:
    """HSA_OVERRIDE_GFX_VERSION_0=10.3.0 / _1=11.0.0 is how Ollama's docs pair two GPUs; here the
    global 11.0.0 is for the card (node 1) and HSA_OVERRIDE_GFX_VERSION_2 for the iGPU (node 2):
    node 2 must be judged by its own variable, or gfx1036 would 'run gfx1100 code'."""
    torch = rocm_torch(device("AMD Radeon RX 7900 XTX", "gfx1100"), device("AMD Radeon Graphics", "gfx1030", GIB, 2))
    environ = {"HSA_OVERRIDE_GFX_VERSION": "11.0.0", "HSA_OVERRIDE_GFX_VERSION_2": "10.3.0"}
    checks = run(tmp_path, [node(110000), node(100306, minor=129, vram=GIB)], torch, environ)
    check = checks["hsa-override"]
    assert check.status == "ok", check
    assert check.evidence == "HSA_OVERRIDE_GFX_VERSION_2=10.3.0: gfx1036 runs gfx1030 code (same family rdna2)"


def test_ollamas_per_node_example_on_a_box_whose_node_0_is_the_cpu(tmp_path: Path) -> None:
    """Ollama's docs pair GPUs with HSA_OVERRIDE_GFX_VERSION_0/_1 (tests/data/doctor/
    per_node_override_ollama_EXCERPT.txt); libhsakmt numbers KFD nodes with the CPU first, so on
    an RX 7700 XT (gfx1101, node 1) + RX 6600 (gfx1032, node 2) box _0 names the CPU and is ignored,
    and _1=11.0.0 applies to the 7700 XT: the blog's "1-based in my testing"."""
    import re

    from fake_machines import DATA

    text = (DATA / "doctor" / "per_node_override_ollama_EXCERPT.txt").read_text()
    docs = dict(re.findall(r"`(HSA_OVERRIDE_GFX_VERSION_\d)=([\d.]+)`", text.split("---")[0]))
    assert docs == {"HSA_OVERRIDE_GFX_VERSION_0": "10.3.0", "HSA_OVERRIDE_GFX_VERSION_1": "11.0.0"}
    env = Environment(variables=docs)
    env.system.gpus = [SystemGpu(node=1, gfx="gfx1101"), SystemGpu(node=2, gfx="gfx1032")]
    (check,) = [c for c in diagnose(env) if c.id == "hsa-override"]
    assert check.status == "warn"
    assert "HSA_OVERRIDE_GFX_VERSION_0 names no KFD GPU node (GPU nodes: 1, 2; CPU nodes count too)" in check.evidence
    assert check.fix == "use HSA_OVERRIDE_GFX_VERSION_<node> with a GPU node: 1, 2"


def test_a_bad_value_on_a_node_the_runtime_never_reads_is_not_a_failure() -> None:
    env = Environment(variables={"HSA_OVERRIDE_GFX_VERSION_0": "junk"})
    env.system.gpus = [SystemGpu(node=1, gfx="gfx1100")]
    (check,) = [c for c in diagnose(env) if c.id == "hsa-override"]
    assert check.status == "warn" and "HSA_OVERRIDE_GFX_VERSION_0 names no KFD GPU node" in check.evidence


def test_the_headers_early_checks_see_per_node_overrides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before torch is imported the pytest header runs the system checks on the live machine:
    they must read HSA_OVERRIDE_GFX_VERSION_<node> too (a gfx1201 given gfx1030 code crashes)."""
    from pytest_rocm.plugin.header import system_diagnosis

    build_tree(tmp_path, Machine([Node(CPU_NODE), node(120001)]))
    monkeypatch.setenv("PYTEST_ROCM_SYSROOT", str(tmp_path))
    monkeypatch.setenv("HSA_OVERRIDE_GFX_VERSION_1", "10.3.0")
    monkeypatch.delenv("HSA_OVERRIDE_GFX_VERSION", raising=False)
    checks = {c.id: c for c in system_diagnosis() or []}
    assert checks["hsa-override"].status == "fail"
    assert (
        "HSA_OVERRIDE_GFX_VERSION_1=10.3.0 makes gfx1201 (rdna4) run gfx1030 (rdna2) code"
        in checks["hsa-override"].evidence
    )
