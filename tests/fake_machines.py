"""Fakes for detection tests, built from the real samples in tests/data/sysfs and tests/data/detect.

- ``build_tree(root, machine)`` lays out a fake sysfs/dev/proc/opt tree (KFD nodes/N/properties,
  gpu_id, name, DRM renderD*/device/mem_info_vram_total, /dev/kfd, /sys/module/amdgpu[/version],
  /opt/rocm/.info/version, /proc/meminfo, /proc/version) under a temporary root.
- ``fake_torch(...)`` is an object shaped like the parts of torch detection reads.
- ``DeniedSeam`` turns chosen paths into EPERM (tests run as root, so chmod 000 cannot).
- ``MACHINES`` are the recorded environments in tests/data/envs, each made by running the real
  detection over a fake tree and a fake torch; test_detect_envs checks the files stay in sync.

Not a test module (no tests here); named test_detect_* so it belongs to the detect area.
"""

from __future__ import annotations

import errno
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from pytest_rocm.env.seam import Seam

DATA = Path(__file__).parent / "data"
SYSFS = DATA / "sysfs"
DETECT = DATA / "detect"
ENVS = DATA / "envs"
NODES = "sys/class/kfd/kfd/topology/nodes"


# -- samples -----------------------------------------------------------------------------------
def sample(name: str, folder: Path = SYSFS) -> str:
    """A sample file without its ``# SOURCE`` line."""
    lines = (folder / name).read_text(encoding="utf-8").splitlines(keepends=True)
    return "".join(line for line in lines if not line.startswith("# SOURCE"))


def sections(name: str) -> dict[str, str]:
    """A ``==> path <==`` concatenation -> {path: body}."""
    out: dict[str, str] = {}
    current = None
    for line in sample(name).splitlines(keepends=True):
        m = re.match(r"^==> (.*) <==$", line.strip())
        if m:
            current = m.group(1)
            out[current] = ""
        elif current is not None:
            out[current] += line
    return out


def properties(name: str, **changes: int) -> str:
    """A properties sample with some values replaced (keys keep their place)."""
    text = sample(name).replace("{drm_render_minor}", "128")
    for key, value in changes.items():
        text, n = re.subn(rf"(?m)^{key} .*$", f"{key} {value}", text)
        assert n == 1, f"{key} not in {name}"
    return text if text.endswith("\n") else text + "\n"


CPU_NODE = sections("mi308x_host_node0_node1_cpu_properties.txt")["topology/nodes/0/properties"]
MOCK_7900XTX = "tinygrad_MOCK_rx7900xtx_gfx1100_properties_template.txt"
MI210 = "mi210_node2_properties_gfx90a.txt"
MI308X = "mi308x_cpx_node9_properties_gfx942.txt"


def rocminfo_agents(name: str) -> list[dict[str, Any]]:
    """GPU agents of a rocminfo sample: name, marketing, compute units, VRAM bytes (first pool)."""
    agents: list[dict[str, Any]] = []
    for block in re.split(r"\*{7}\s*\nAgent \d+", sample(name, DETECT))[1:]:
        if not re.search(r"Device Type:\s+GPU", block):
            continue
        size = re.search(r"Segment:\s+GLOBAL; FLAGS: COARSE GRAINED\s*\n\s*Size:\s+(\d+)", block)
        agents.append(
            {
                "gfx": re.search(r"^\s+Name:\s+(gfx\w+)", block, re.M).group(1),
                "marketing": (re.search(r"Marketing Name:\s+(.*?)\s*$", block, re.M) or [None, None])[1],
                "cus": int(re.search(r"Compute Unit:\s+(\d+)", block).group(1)),
                "vram": int(size.group(1)) * 1024 if size else None,
                "isa": re.search(r"amdgcn-amd-amdhsa--(\S+)", block).group(1),
            }
        )
    return agents


def torch_strings() -> list[dict[str, Any]]:
    return json.loads((DETECT / "torch_strings.json").read_text())["entries"]


def arch_list_for(rocm: str) -> list[str]:
    """The real get_arch_list() of the official wheels for a ROCm index (uv's table)."""
    for entry in torch_strings():
        if "table" in entry:
            return list(entry["table"][rocm])
    raise KeyError(rocm)


# -- fake trees ----------------------------------------------------------------------------------
@dataclass
class Node:
    properties: str
    gpu_id: int = 0
    name: str = ""
    vram: int | None = None  # written to renderD<minor>/device/mem_info_vram_total when set


@dataclass
class Machine:
    nodes: list[Node] = field(default_factory=list)
    kfd: bool = True
    amdgpu_loaded: bool = True
    amdgpu_version: str | None = None
    rocm_version: str | None = None
    mem_total_kb: int = 65619552
    proc_version: str = "Linux version 6.5.0-26-generic (buildd@lcy02-amd64-051) #26~22.04.1-Ubuntu SMP"
    dxg: bool = False


def write(root: Path, path: str, text: str) -> None:
    target = root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


def build_tree(root: Path, machine: Machine) -> Path:
    for index, node in enumerate(machine.nodes):
        base = f"{NODES}/{index}"
        write(root, f"{base}/properties", node.properties)
        write(root, f"{base}/gpu_id", f"{node.gpu_id}\n")
        write(root, f"{base}/name", f"{node.name}\n")
        minor = re.search(r"(?m)^drm_render_minor (\d+)", node.properties)
        if node.vram is not None and minor:
            write(root, f"sys/class/drm/renderD{minor.group(1)}/device/mem_info_vram_total", f"{node.vram}\n")
    if machine.kfd:
        write(root, "dev/kfd", "")
    if machine.amdgpu_loaded:
        (root / "sys/module/amdgpu/parameters").mkdir(parents=True, exist_ok=True)
        if machine.amdgpu_version is not None:
            write(root, "sys/module/amdgpu/version", machine.amdgpu_version + "\n")
    if machine.rocm_version is not None:
        write(root, "opt/rocm/.info/version", machine.rocm_version + "\n")
    write(root, "proc/meminfo", f"MemTotal:       {machine.mem_total_kb} kB\nMemFree:         1000 kB\n")
    write(root, "proc/version", machine.proc_version + "\n")
    if machine.dxg:
        write(root, "dev/dxg", "")
    return root


class DeniedSeam(Seam):
    """A seam where reading some paths fails with EPERM (what a cgroup-hidden KFD node does)."""

    def __init__(self, *args: Any, denied: tuple[str, ...] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.denied = denied

    def read_text(self, path: str) -> str:
        if any(path.startswith(d) for d in self.denied):
            raise PermissionError(errno.EPERM, "Operation not permitted", path)
        return super().read_text(path)


# -- fake torch ----------------------------------------------------------------------------------
def fake_torch(
    version: str,
    hip: str | None = None,
    cuda: str | None = None,
    arch_list: list[str] | None = None,
    devices: list[dict[str, Any]] | None = None,
) -> SimpleNamespace:
    """Shaped like torch for what detection reads. devices: dicts of get_device_properties fields."""
    devices = devices or []
    props = [SimpleNamespace(**{"major": 0, "minor": 0, **d}) for d in devices]
    available = bool(devices)
    cuda_ns = SimpleNamespace(
        is_available=lambda: available,
        device_count=lambda: len(props),
        get_device_properties=lambda i: props[i],
        # like torch: an empty list when no device is usable
        get_arch_list=lambda: list(arch_list or []) if available else [],
    )
    return SimpleNamespace(__version__=version, version=SimpleNamespace(hip=hip, cuda=cuda), cuda=cuda_ns)


def seam_for(root: Path, torch: Any = None, environ: dict[str, str] | None = None, **kw: Any) -> Seam:
    """A seam over a fake tree with fixed process facts (so recorded files are reproducible)."""

    def loader() -> Any:
        if torch is None:
            raise ModuleNotFoundError("No module named 'torch'", name="torch")
        return torch

    kw.setdefault("groups", ["root", "video", "render"])
    kw.setdefault("distributions", {})
    kw.setdefault("python", "3.11.7")
    kw.setdefault("platform_name", "Linux-6.5.0-26-generic-x86_64-with-glibc2.35")
    return Seam(sysroot=root, environ=environ or {}, torch_loader=loader, **kw)


# -- the recorded environments (tests/data/envs/<name>.json) --------------------------------------
def _gpu_node(props: str, gpu_id: int, vram: int | None) -> Node:
    return Node(properties=props, gpu_id=gpu_id, vram=vram)


def _device(agent: dict[str, Any], name: str | None = None, isa: str | None = None) -> dict[str, Any]:
    """get_device_properties fields for a rocminfo agent (torch's name has the AMD prefix)."""
    marketing = name or agent["marketing"]
    if not marketing.startswith("AMD "):
        marketing = "AMD " + marketing
    return {
        "name": marketing,
        "gcnArchName": isa or agent["isa"],
        "total_memory": agent["vram"],
        "multi_processor_count": agent["cus"],
    }


def _torch_device(name: str, gcn_arch: str, memory: int, cus: int) -> dict[str, Any]:
    """get_device_properties fields given outright (a device no rocminfo sample shows)."""
    return {"name": name, "gcnArchName": gcn_arch, "total_memory": memory, "multi_processor_count": cus}


@dataclass
class Recorded:
    machine: Machine
    torch: Any
    environ: dict[str, str]
    source: str
    distributions: dict[str, str | None] = field(default_factory=dict)


def machines() -> dict[str, Recorded]:
    xtx = rocminfo_agents("gfx1100_rx7900xtx_rocm6.0.2.txt")[0]
    navi21, raphael = rocminfo_agents("gfx1030_rx6800xt_plus_gfx1036_igpu_rocm5.6.txt")
    mi210 = rocminfo_agents("gfx90a_mi210_4gpu_rocm6.2.4_EXCERPT.txt")[0]
    mi300x = rocminfo_agents("gfx942_mi300x_8gpu_rocm6.2.3_EXCERPT.txt")[0]
    hip_624 = "6.2.41134-65d174c3e"  # docs/design.md example (torch 2.6.0+rocm6.2.4)
    hip_62 = "6.2.41133-dd7f95766"  # ROCM-FACTS.md (torch.version.hip of the rocm6.2 wheels)
    out: dict[str, Recorded] = {}

    def rocm62_wheel(gpus: list[Node], devices: list[dict[str, Any]]) -> tuple[Machine, SimpleNamespace]:
        """A ROCm 6.2.0 host with these GPU nodes, and the official rocm6.2 wheel seeing ``devices``."""
        torch = fake_torch("2.5.1+rocm6.2", hip=hip_62, arch_list=arch_list_for("rocm6.2"), devices=devices)
        return Machine([Node(CPU_NODE), *gpus], rocm_version="6.2.0-66"), torch

    out["rx7900xtx_rocm6"] = Recorded(
        Machine([Node(CPU_NODE), _gpu_node(properties(MOCK_7900XTX), 45316, xtx["vram"])], rocm_version="6.2.4-116"),
        fake_torch("2.6.0+rocm6.2.4", hip=hip_624, arch_list=arch_list_for("rocm6.2.4"), devices=[_device(xtx)]),
        {},
        "KFD node: tinygrad mock of an RX 7900 XTX; VRAM, CUs, name: rocminfo ROCm/ROCm#2974; "
        "arch list: official rocm6.2.4 wheels (uv table in torch_strings.json)",
        {"pytorch-triton-rocm": "3.2.0"},
    )
    rdna2 = properties(MOCK_7900XTX, gfx_target_version=100300, simd_count=144, device_id=29631)
    igpu = properties(
        MOCK_7900XTX,
        gfx_target_version=100306,
        simd_count=4,
        device_id=5710,
        drm_render_minor=129,
        location_id=4352,
        unique_id=0,
    )
    out["rx6800xt_igpu"] = Recorded(
        *rocm62_wheel(
            [_gpu_node(rdna2, 52213, navi21["vram"]), _gpu_node(igpu, 6913, raphael["vram"])],
            [_device(navi21), _device(raphael)],
        ),
        {},
        "GPUs: rocminfo ROCm/ROCm#2330 (RX 6800 XT + Ryzen 7 7700X iGPU gfx1036); KFD properties: the "
        "7900 XTX template with gfx_target_version/simd_count/device_id of these GPUs; arch list: rocm6.2",
    )
    navi22 = properties(MOCK_7900XTX, gfx_target_version=100301, simd_count=80, device_id=29663)
    out["rx6700xt_override"] = Recorded(
        *rocm62_wheel(
            [_gpu_node(navi22, 17621, 12868124672)],
            [_torch_device("AMD Radeon RX 6700 XT", "gfx1030", 12868124672, 40)],
        ),
        {"HSA_OVERRIDE_GFX_VERSION": "10.3.0"},
        "RX 6700 XT (gfx1031, 40 CUs, 12 GiB) with HSA_OVERRIDE_GFX_VERSION=10.3.0 (ROCm/ROCm#2353): the "
        "runtime reports gfx1030, KFD keeps gfx1031; KFD properties from the 7900 XTX template",
    )
    mi300_nodes = [Node(CPU_NODE), Node(CPU_NODE)] + [
        _gpu_node(
            properties(
                MI308X,
                simd_count=1216,
                device_id=29857,
                drm_render_minor=128 + 8 * i,
                location_id=256 * (i + 1),
                unique_id=11803749423592941193 - i,
            ),
            3931 + i,
            mi300x["vram"],
        )
        for i in range(8)
    ]
    out["mi300x_8"] = Recorded(
        Machine(mi300_nodes, rocm_version="6.2.3-122", amdgpu_version="6.8.5", mem_total_kb=2113236380),
        fake_torch("2.6.0+rocm6.2.4", hip=hip_624, arch_list=arch_list_for("rocm6.2.4"), devices=[_device(mi300x)] * 8),
        {},
        "8x MI300X: rocminfo ROCm/ROCm#4021 (gfx942:sramecc+:xnack-, 304 CUs, VRAM), 2 CPU nodes and "
        "the GPU node layout from the MI308X capture (k8s-device-plugin testdata), torch 2.6 device "
        "properties ROCm/ROCm#4203",
        {"pytorch-triton-rocm": "3.2.0", "flash_attn": "2.7.3"},
    )
    out["mi210_4"] = Recorded(
        Machine(
            [Node(CPU_NODE)]
            + [_gpu_node(properties(MI210, drm_render_minor=128 + 8 * i), 1000 + i, mi210["vram"]) for i in range(4)],
            rocm_version="6.2.4-120",
            amdgpu_version="6.8.5",
            mem_total_kb=263382908,
        ),
        fake_torch("2.5.1+rocm6.2", hip=hip_62, arch_list=arch_list_for("rocm6.2"), devices=[_device(mi210)] * 4),
        {},
        "4x MI210: rocminfo ROCm/ROCm#4563; KFD node: ROCm/k8s-device-plugin topo-mi210 testdata",
    )
    out["nvidia_cuda"] = Recorded(
        Machine([], kfd=False, amdgpu_loaded=False, mem_total_kb=2113236380),
        fake_torch(
            "2.6.0+cu124",
            cuda="12.4",
            arch_list=["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"],
            devices=[
                {
                    "name": "NVIDIA H100 80GB HBM3",
                    "major": 9,
                    "minor": 0,
                    "total_memory": 85029158912,
                    "multi_processor_count": 132,
                }
            ],
        ),
        {"CUDA_VISIBLE_DEVICES": "0"},
        "illustrative NVIDIA H100 (sm_90, 132 SMs) with a cu124 wheel: not a capture",
    )
    out["cpu_only"] = Recorded(
        Machine([Node(CPU_NODE)], kfd=False, amdgpu_loaded=False, mem_total_kb=16245440),
        fake_torch("2.6.0+cpu"),
        {},
        "a laptop without GPU and a CPU wheel",
    )
    strix = properties(MOCK_7900XTX, gfx_target_version=110500, simd_count=32, device_id=5390, location_id=49664)
    out["cuda_wheel_on_amd"] = Recorded(
        Machine([Node(CPU_NODE), _gpu_node(strix, 33146, 536870912)], mem_total_kb=32011380),
        fake_torch("2.12.0+cu130", cuda="13.0"),
        {},
        "YanWenKun/ComfyUI-Docker#187: torch 2.12.0+cu130 (torch.version.hip None) on an AMD APU gfx1150; "
        "KFD properties from the 7900 XTX template",
    )
    navi32 = properties(MOCK_7900XTX, gfx_target_version=110001, simd_count=120, device_id=29822)
    out["no_binary"] = Recorded(
        *rocm62_wheel(
            [_gpu_node(navi32, 9001, 17163091968)],
            [_torch_device("AMD Radeon RX 7800 XT", "gfx1101", 17163091968, 60)],
        ),
        {},
        "RX 7800 XT (gfx1101) with the official rocm6.2 wheel, whose arch list lacks gfx1101 "
        "(uv table, torch_strings.json): hipErrorNoBinaryForGpu",
    )
    return out


def record(name: str, root: Path) -> dict[str, Any]:
    """Detect a recorded machine over a fake tree in ``root``; the dict written to envs/<name>.json."""
    from pytest_rocm.env.detect import detect_environment

    rec = machines()[name]
    build_tree(root, rec.machine)
    env = detect_environment(seam_for(root, rec.torch, rec.environ, distributions=rec.distributions))
    data = env.to_dict()
    data["_source"] = rec.source
    return data


def detect_in_a_fresh_process(env: dict[str, str] | None = None) -> dict[str, Any]:
    """This machine's environment as a fresh interpreter detects it. Not in the test process:
    what it detects depends on what ran in it before (a pytester test's sys.modules snapshot drops
    torch, and torch cannot be imported a second time in one process)."""
    import subprocess
    import sys

    code = "from pytest_rocm.env.detect import detect_environment; print(detect_environment().to_json(indent=None))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    found: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return found
