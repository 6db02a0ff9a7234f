"""Detection over fake sysfs trees built from the real samples, and the torch layer via fakes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from fake_machines import (
    CPU_NODE,
    MI210,
    MI308X,
    MOCK_7900XTX,
    DeniedSeam,
    Machine,
    Node,
    build_tree,
    fake_torch,
    properties,
    sample,
    seam_for,
    sections,
    write,
)

from pytest_rocm.doctor.checks import diagnose, problem_lines
from pytest_rocm.env import system
from pytest_rocm.env.detect import detect_environment, in_build, rocm_from_torch
from pytest_rocm.env.seam import Seam, SysrootError, check_sysroot
from pytest_rocm.env.system import detect_system, parse_properties

NODES = "sys/class/kfd/kfd/topology/nodes"


def system_of(tmp_path: Path, machine: Machine, **kw: Any):
    build_tree(tmp_path, machine)
    return detect_system(seam_for(tmp_path, **kw))


# -- properties -----------------------------------------------------------------------------------
def test_parse_properties_is_a_map_not_positions() -> None:
    old = parse_properties(sample("vega10_0x6860_node1_properties_OLDKERNEL_no_gfx_target_version.txt"))
    new = parse_properties(sample(MI210))
    assert "gfx_target_version" not in old and new["gfx_target_version"] == 90010
    # the same key sits at different line numbers in the two kernels' files
    assert old["drm_render_minor"] == new["drm_render_minor"] == 128
    assert old["vendor_id"] == new["vendor_id"] == 4098
    assert new["hive_id"] == 12609507387757274807  # unsigned 64-bit stays exact


def test_parse_properties_reads_name_value_lines() -> None:
    assert parse_properties("simd_count 4\n\nvendor_id 4098\n") == {"simd_count": 4, "vendor_id": 4098}


@pytest.mark.parametrize(
    "text",
    [
        "simd_count 4\ngarbage\n",
        "name x\n",
        "vendor_id 4098 extra\n",
        "gfx_target_version -1\n",
        "gfx_target_version abc\n",
        "gfx_target_version 1e5\n",
        "gfx_target_version 0x1100\n",
        "gfx_target_version \u0661\u0661\u0660\u0660\u0660\u0660\n",  # Arabic-Indic digits: int() takes them
        "simd_count 4\x00\x01\n",
        "simd_count \ufffd\n",  # what invalid UTF-8 decodes to
    ],
)
def test_parse_properties_rejects_what_the_kernel_never_writes(text: str) -> None:
    with pytest.raises(ValueError, match=r"binary data|is not 'name <unsigned decimal>'") as info:
        parse_properties(text)
    assert "\n" not in str(info.value)


# -- KFD topology ---------------------------------------------------------------------------------
def test_mi210_node_with_cpu_node(tmp_path: Path) -> None:
    info = system_of(tmp_path, Machine([Node(CPU_NODE), Node(properties(MI210), 59753, vram=68702699520)]))
    (gpu,) = info.gpus
    assert (gpu.node, gpu.gfx, gpu.gfx_target_version) == (1, "gfx90a", 90010)
    assert (gpu.simd_count, gpu.vendor_id, gpu.device_id, gpu.render_minor) == (416, 4098, 29711, 128)
    assert gpu.vram == 68702699520
    assert info.errors == []


def test_mi308x_partition_node_after_two_cpu_nodes(tmp_path: Path) -> None:
    aux = sections("mi308x_capture_aux_files_gpu_id_name_mem_banks.txt")
    cpu = sections("mi308x_host_node0_node1_cpu_properties.txt")
    nodes = [Node(cpu["topology/nodes/0/properties"]), Node(cpu["topology/nodes/1/properties"])]
    nodes += [Node(properties(MI308X), int(aux["topology/nodes/9/gpu_id"]), aux["topology/nodes/9/name"].strip())]
    info = system_of(tmp_path, Machine(nodes))
    (gpu,) = info.gpus
    assert (gpu.node, gpu.gfx, gpu.render_minor) == (2, "gfx942", 139)
    assert gpu.unique_id == 11803749423592941193
    assert gpu.name is None  # "ip discovery" is the kernel's placeholder, not a name
    assert gpu.vram is None  # no DRM file for it: unknown, not 0


def test_vega10_old_kernel_without_gfx_target_version(tmp_path: Path) -> None:
    nodes = [
        Node(sample("vega10_host_node0_cpu_properties_OLDKERNEL.txt")),
        Node(sample("vega10_0x6860_node1_properties_OLDKERNEL_no_gfx_target_version.txt"), 13261),
    ]
    info = system_of(tmp_path, Machine(nodes))
    (gpu,) = info.gpus
    assert (gpu.gfx, gpu.gfx_target_version, gpu.device_id) == (None, None, 26720)
    # local_mem_size (17163091968 here) is not a VRAM source
    assert gpu.vram is None
    assert info.errors == []


def test_7900xtx_vram_joined_by_render_minor_not_card_index(tmp_path: Path) -> None:
    machine = Machine([Node(CPU_NODE), Node(properties(MOCK_7900XTX, drm_render_minor=129), 1, vram=25753026560)])
    build_tree(tmp_path, machine)
    # another vendor's card0 and a connector folder must not be mistaken for it
    write(tmp_path, "sys/class/drm/card0/device/mem_info_vram_total", "4294967296\n")
    write(tmp_path, "sys/class/drm/card0-DP-1/status", "connected\n")
    (gpu,) = detect_system(seam_for(tmp_path)).gpus
    assert (gpu.gfx, gpu.render_minor, gpu.vram) == ("gfx1100", 129, 25753026560)


def test_rx570_vram_sample_parses(tmp_path: Path) -> None:
    text = sample("mem_info_vram_total_rx570_4GiB_gpu-utils-118.txt")
    vram = re.search(r"mem_info_vram_total\n(\d+)", text).group(1)
    props = properties(MOCK_7900XTX, gfx_target_version=80003, simd_count=128)
    (gpu,) = system_of(tmp_path, Machine([Node(props, 1, vram=int(vram))])).gpus
    assert (gpu.gfx, gpu.vram) == ("gfx803", 4294967296)


def test_nodes_sort_numerically(tmp_path: Path) -> None:
    # 12 GPU nodes: text order would put 10 and 11 before 2
    nodes = [Node(CPU_NODE)] + [Node(properties(MI210, drm_render_minor=128 + i), 100 + i) for i in range(11)]
    info = system_of(tmp_path, Machine(nodes))
    assert [g.node for g in info.gpus] == list(range(1, 12))
    assert [g.render_minor for g in info.gpus] == list(range(128, 139))


def test_gpu_told_by_gpu_id_when_simd_count_missing(tmp_path: Path) -> None:
    props = "gfx_target_version 110000\nvendor_id 4098\n"
    nodes = [Node("cpu_cores_count 8\n", 0), Node(props, 1234)]
    assert [g.node for g in system_of(tmp_path, Machine(nodes)).gpus] == [1]


def test_node_with_zero_gfx_target_version_is_unknown(tmp_path: Path) -> None:
    (gpu,) = system_of(tmp_path, Machine([Node(properties(MI210, gfx_target_version=0), 1)])).gpus
    assert gpu.gfx is None and gpu.gfx_target_version is None


def test_eperm_node_is_recorded_not_fatal(tmp_path: Path) -> None:
    nodes = [Node(CPU_NODE), Node(properties(MI210), 1), Node(properties(MI210, drm_render_minor=136), 2)]
    build_tree(tmp_path, Machine(nodes))
    seam = DeniedSeam(sysroot=tmp_path, environ={}, groups=[], distributions={}, denied=(f"/{NODES}/1/",))
    info = detect_system(seam)
    assert [g.node for g in info.gpus] == [2]
    assert info.errors == [f"/{NODES}/1/properties: operation not permitted; node 1 dropped"]


def test_unreadable_vram_is_recorded(tmp_path: Path) -> None:
    build_tree(tmp_path, Machine([Node(properties(MI210), 1, vram=1)]))
    seam = DeniedSeam(sysroot=tmp_path, environ={}, groups=[], distributions={}, denied=("/sys/class/drm/",))
    (gpu,) = (info := detect_system(seam)).gpus
    assert gpu.vram is None
    assert info.errors == [
        "/sys/class/drm/renderD128/device/mem_info_vram_total: operation not permitted",
        "/sys/class/drm/renderD128/device/mem_info_gtt_total: operation not permitted",
    ]


def test_no_kfd_at_all(tmp_path: Path) -> None:
    info = system_of(tmp_path, Machine([], kfd=False, amdgpu_loaded=False))
    assert (info.kfd, info.kfd_access, info.gpus, info.amdgpu_loaded) == (False, None, [], False)
    assert info.errors == []


# -- the rest of the system layer -------------------------------------------------------------------
def test_kfd_access(tmp_path: Path) -> None:
    build_tree(tmp_path, Machine([]))

    class Denied(Seam):
        def can_open_rw(self, path: str) -> bool:
            return False

    assert detect_system(seam_for(tmp_path)).kfd_access is True
    denied = Denied(sysroot=tmp_path, environ={}, groups=["users"], distributions={})
    info = detect_system(denied)
    assert (info.kfd, info.kfd_access, info.groups) == (True, False, ["users"])


def test_amdgpu_version_missing_with_inbox_driver(tmp_path: Path) -> None:
    # ollama#10691: /sys/module/amdgpu exists, no version file: loaded, version unknown, no error
    assert "version" not in sample("amdgpu_module_version_MISSING_inbox_kernel_ollama-10691.txt").split("ls -1F")[1]
    info = system_of(tmp_path, Machine([], amdgpu_version=None))
    assert (info.amdgpu_loaded, info.amdgpu_version, info.errors) == (True, None, [])


def test_amdgpu_version_present(tmp_path: Path) -> None:
    version = re.search(r"ROCk module version (\S+)", sample("amdgpu_module_version_via_rocminfo_6.3.6_sd-rocm-1.txt"))
    info = system_of(tmp_path, Machine([], amdgpu_version=version.group(1)))
    assert info.amdgpu_version == "6.3.6"


def test_rocm_version_memory_and_wsl(tmp_path: Path) -> None:
    info = system_of(tmp_path, Machine([], rocm_version="6.2.4-120", mem_total_kb=1000))
    assert (info.rocm_version, info.memory_total, info.wsl) == ("6.2.4-120", 1024000, False)


def test_corrupt_version_files_are_errors_not_versions(tmp_path: Path) -> None:
    build_tree(tmp_path, Machine([], rocm_version="\x00\x9f\x01garbage", amdgpu_version="<html>"))
    info = detect_system(seam_for(tmp_path))
    assert (info.rocm_version, info.amdgpu_version) == (None, None)
    assert any(e.startswith("rocm version: ValueError: not a version") for e in info.errors), info.errors
    assert any(e.startswith("/sys/module/amdgpu/version: ValueError: not a version") for e in info.errors)


def test_rocm_path_variable_wins(tmp_path: Path) -> None:
    build_tree(tmp_path, Machine([], rocm_version="6.2.4"))
    write(tmp_path, "opt/rocm-6.3.1/.info/version", "6.3.1-48\n")
    info = detect_system(seam_for(tmp_path, environ={"ROCM_PATH": "/opt/rocm-6.3.1"}))
    assert info.rocm_version == "6.3.1-48"


@pytest.mark.parametrize(
    ("proc_version", "dxg", "wsl"),
    [
        ("Linux version 6.6.87.1-microsoft-standard-WSL2 (root@af282157c79e)", False, True),
        ("Linux version 5.15.0", True, True),
        ("Linux version 6.5.0-26-generic", False, False),
    ],
)
def test_wsl(tmp_path: Path, proc_version: str, dxg: bool, wsl: bool) -> None:
    assert system_of(tmp_path, Machine([], proc_version=proc_version, dxg=dxg)).wsl is wsl


# -- torch layer ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("version", "hip", "rocm"),
    [
        ("2.6.0+rocm6.2.4", "6.2.41134-65d174c3e", "6.2.4"),
        ("2.7.0.dev20250306+rocm6.3", "6.3.42131-fa1d09cbd", "6.3"),
        ("2.6.0+rocm6.4.1.git1ded221d", "6.4.43482-0f2d60242", "6.4.1"),
        ("2.4.0+rocm6.3.4.git7cecbf6d", None, "6.3.4"),
        ("2.10.0a0+rocm7.10.0a20251120", "7.10.0", "7.10.0"),
        ("2.9.0+rocmsdk20251116", "7.1.52802-561cc400e1", "7.1"),  # no version in the local part
        ("2.8.0", "6.4.43482-0f2d60242", "6.4"),
        ("2.6.0+cu124", None, None),
    ],
)
def test_rocm_from_torch(version: str, hip: str | None, rocm: str | None) -> None:
    assert rocm_from_torch(version, hip) == rocm


@pytest.mark.parametrize(
    ("arch", "arch_list", "expected"),
    [
        ("gfx1100", ["gfx90a", "gfx1100"], True),
        ("gfx90a:sramecc+:xnack-", ["gfx90a", "gfx1100"], True),
        ("gfx1031", ["gfx1030", "gfx1100"], False),
        ("gfx1100", [], None),
        ("unknown", ["gfx1100"], None),
        ("sm_90", ["sm_80", "sm_90"], True),
        ("sm_89", ["sm_80", "sm_86"], True),  # same major, older minor: the cubin runs
        ("sm_90", ["sm_80", "sm_86"], False),
        ("sm_90", ["sm_80", "compute_80"], True),  # PTX is compiled at load time
        ("sm_75", ["sm_80", "sm_90"], False),
    ],
)
def test_in_build(arch: str, arch_list: list[str], expected: bool | None) -> None:
    assert in_build(arch, arch_list) is expected


def _rocm_torch(*gcn: str, arch_list: list[str] | None = None) -> Any:
    devices = [
        {"name": f"GPU {i}", "gcnArchName": g, "total_memory": 1 << 34, "multi_processor_count": 60}
        for i, g in enumerate(gcn)
    ]
    return fake_torch(
        "2.5.1+rocm6.2", hip="6.2.41133-dd7f95766", arch_list=arch_list or ["gfx1030", "gfx1100"], devices=devices
    )


def _two_gpu_tree(tmp_path: Path) -> Path:
    dgpu = properties(MOCK_7900XTX, gfx_target_version=100300)
    igpu = properties(MOCK_7900XTX, gfx_target_version=100306, drm_render_minor=129)
    return build_tree(tmp_path, Machine([Node(CPU_NODE), Node(dgpu, 1), Node(igpu, 2)]))


def test_torch_missing(tmp_path: Path) -> None:
    env = detect_environment(seam_for(build_tree(tmp_path, Machine([Node(properties(MI210), 1)]))))
    assert (env.backend, env.torch, env.torch_error) == ("cpu", None, "torch is not installed")
    assert [g.gfx for g in env.system.gpus] == ["gfx90a"]
    assert problem_lines(diagnose(env))[0] == (
        "[FAIL] torch: torch is not installed, but the kernel reports 1 AMD GPU (gfx90a)"
    )


def test_torch_import_error_keeps_the_message(tmp_path: Path) -> None:
    def broken() -> Any:
        raise ImportError("libamdhip64.so: cannot open shared object file: No such file or directory")

    env = detect_environment(Seam(sysroot=tmp_path, environ={}, torch_loader=broken, groups=[], distributions={}))
    assert env.backend == "cpu"
    assert env.torch_error == (
        "torch failed to import: ImportError: libamdhip64.so: cannot open shared object file: No such file or directory"
    )


def test_visible_devices_tie_torch_devices_to_kfd_nodes(tmp_path: Path) -> None:
    _two_gpu_tree(tmp_path)
    env = detect_environment(seam_for(tmp_path, _rocm_torch("gfx1036"), {"HIP_VISIBLE_DEVICES": "1"}))
    (device,) = env.devices
    assert (device.gfx, device.hardware_gfx, device.in_build) == ("gfx1036", "gfx1036", False)
    env = detect_environment(
        seam_for(tmp_path, _rocm_torch("gfx1030"), {"HIP_VISIBLE_DEVICES": "1", "HSA_OVERRIDE_GFX_VERSION": "10.3.0"})
    )
    assert env.devices[0].hardware_gfx == "gfx1036"  # the iGPU, spoofed
    assert any(
        "reported-gfx: HSA_OVERRIDE_GFX_VERSION=10.3.0 makes gfx1036 report as gfx1030" in w
        for w in problem_lines(diagnose(env))
    )


def test_rocr_then_hip_visible_devices(tmp_path: Path) -> None:
    _two_gpu_tree(tmp_path)
    env = detect_environment(
        seam_for(tmp_path, _rocm_torch("gfx1030"), {"ROCR_VISIBLE_DEVICES": "1,0", "HIP_VISIBLE_DEVICES": "1"})
    )
    assert env.devices[0].hardware_gfx == "gfx1030"  # ROCR reorders to [igpu, dgpu], HIP picks index 1


def test_untied_devices_fall_back(tmp_path: Path) -> None:
    _two_gpu_tree(tmp_path)
    uuid = {"ROCR_VISIBLE_DEVICES": "GPU-e0ce170bfa1769dd"}
    env = detect_environment(seam_for(tmp_path, _rocm_torch("gfx1030"), uuid))
    assert env.devices[0].hardware_gfx == "gfx1030"  # no override: the runtime reports the silicon
    env = detect_environment(seam_for(tmp_path, _rocm_torch("gfx1030"), {**uuid, "HSA_OVERRIDE_GFX_VERSION": "10.3.0"}))
    assert env.devices[0].hardware_gfx is None  # overridden and untied: unknown


def test_rocm_build_without_device_is_cpu_backend(tmp_path: Path) -> None:
    build_tree(tmp_path, Machine([Node(properties(MI210), 1)]))

    class NoAccess(Seam):
        def can_open_rw(self, path: str) -> bool:
            return False

    torch = fake_torch("2.5.1+rocm6.2", hip="6.2.41133-dd7f95766")
    env = detect_environment(
        NoAccess(sysroot=tmp_path, environ={}, torch_loader=lambda: torch, groups=[], distributions={})
    )
    assert (env.backend, env.rocm, env.devices, env.arch_list) == ("cpu", "6.2", [], [])
    assert any(
        w.startswith("[FAIL] kfd-access: /dev/kfd exists but this user cannot open it read-write")
        for w in problem_lines(diagnose(env))
    )


def test_device_properties_failure_is_recorded(tmp_path: Path) -> None:
    torch = _rocm_torch("gfx1100")

    def boom(i: int) -> Any:
        raise RuntimeError("HIP error: invalid device ordinal")

    torch.cuda.get_device_properties = boom
    env = detect_environment(seam_for(tmp_path, torch))
    assert env.devices == [] and env.backend == "cpu"
    assert env.system.errors == ["torch devices: RuntimeError: HIP error: invalid device ordinal"]


def test_variables_and_library_aliases(tmp_path: Path) -> None:
    seam = seam_for(
        tmp_path,
        environ={"HIP_FORCE_DEV_KERNARG": "1", "UNRELATED": "x"},
        distributions={"pytorch-triton-rocm": "3.1.0", "bitsandbytes": "0.45.0"},
    )
    env = detect_environment(seam)
    assert env.variables["HIP_FORCE_DEV_KERNARG"] == "1" and "UNRELATED" not in env.variables
    assert env.variables["HSA_OVERRIDE_GFX_VERSION"] is None
    assert env.libraries["triton"] == "3.1.0" and env.libraries["bitsandbytes"] == "0.45.0"
    assert env.libraries["xformers"] is None


def test_invalid_override_is_flagged(tmp_path: Path) -> None:
    env = detect_environment(seam_for(tmp_path, _rocm_torch("gfx1030"), {"HSA_OVERRIDE_GFX_VERSION": "10.3"}))
    assert any(
        w.startswith("[FAIL] hsa-override: HSA_OVERRIDE_GFX_VERSION='10.3' is not major.minor.stepping")
        for w in problem_lines(diagnose(env))
    )


# -- never raises; sysroot --------------------------------------------------------------------------
class Hostile(Seam):
    """Every read fails: detection must still return an Environment."""

    def read_text(self, path: str) -> str:
        raise OSError(5, "Input/output error")

    def listdir(self, path: str) -> list[str]:
        raise OSError(5, "Input/output error")

    def exists(self, path: str) -> bool:
        raise OSError(5, "Input/output error")

    def groups(self) -> list[str]:
        raise RuntimeError("no groups")

    def distribution_version(self, name: str) -> str | None:
        raise RuntimeError("bad metadata")


def test_detection_never_raises(tmp_path: Path) -> None:
    env = detect_environment(Hostile(sysroot=tmp_path, environ={}, torch_loader=lambda: 1 / 0))
    assert env.backend == "cpu"
    assert env.torch_error == "torch failed to import: ZeroDivisionError: division by zero"
    assert f"{system.KFD_NODES}: input/output error" in env.system.errors
    assert "groups: RuntimeError: no groups" in env.system.errors
    assert "triton: RuntimeError: bad metadata" in env.system.errors


def test_check_sysroot(tmp_path: Path) -> None:
    assert check_sysroot(None) == Path("/") and check_sysroot("") == Path("/")
    assert check_sysroot(str(tmp_path)) == tmp_path
    with pytest.raises(SysrootError, match=r"^PYTEST_ROCM_SYSROOT=/nonexistent/x: no such directory$"):
        check_sysroot("/nonexistent/x")
    (tmp_path / "file").write_text("")
    with pytest.raises(SysrootError, match="not a directory"):
        check_sysroot(str(tmp_path / "file"))
    assert issubclass(SysrootError, ValueError)


def test_bad_sysroot_in_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_ROCM_SYSROOT", "/nonexistent/x")
    with pytest.raises(SysrootError):
        Seam()
    env = detect_environment()  # still no exception: the fault is recorded
    assert env.system.errors == ["PYTEST_ROCM_SYSROOT=/nonexistent/x: no such directory"]


def test_sysroot_variable_roots_every_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    build_tree(tmp_path, Machine([Node(CPU_NODE), Node(properties(MI210), 1, vram=7)], rocm_version="6.1.2"))
    monkeypatch.setenv("PYTEST_ROCM_SYSROOT", str(tmp_path))
    info = detect_system(Seam())
    assert [(g.gfx, g.vram) for g in info.gpus] == [("gfx90a", 7)]
    assert info.rocm_version == "6.1.2" and info.kfd is True


def test_real_machine_detection_does_not_raise() -> None:
    env = detect_environment(Seam(sysroot="/"))
    assert env.python and env.backend in ("rocm", "cuda", "cpu")
