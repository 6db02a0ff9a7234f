"""rocm-compat doctor: each broken setup, built from the real samples, gets the right check and fix;
healthy RX 7900 XTX, MI300X and CPU-only setups get no false alarm.

Setups run through the real detection (fake sysfs trees + a fake torch via the seam, from
fake_machines), so a doctor check sees exactly what it would see on that machine.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from fake_machines import (
    CPU_NODE,
    MI308X,
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

from pytest_rocm import cli
from pytest_rocm.doctor import render as doctor
from pytest_rocm.doctor.checks import CHECKS, Check, Extras, diagnose, problems
from pytest_rocm.doctor.machine import check_igpu
from pytest_rocm.doctor.probe import probe_extras
from pytest_rocm.env.detect import detect_environment
from pytest_rocm.env.model import Device, Environment, SystemGpu

GIB = 1024**3
ROCM624 = "6.2.4"


def torch_device(name: str, gcn_arch: str, memory: int, cus: int) -> dict[str, Any]:
    """The get_device_properties fields of one device, as fake_torch takes them."""
    return {"name": name, "gcnArchName": gcn_arch, "total_memory": memory, "multi_processor_count": cus}


XTX = torch_device("AMD Radeon RX 7900 XTX", "gfx1100", 24 * GIB, 96)
MI300X = torch_device("AMD Instinct MI300X", "gfx942:sramecc+:xnack-", 192 * GIB, 304)
MI210 = torch_device("AMD Instinct MI210", "gfx90a:sramecc+:xnack-", 64 * GIB, 104)
RX6800XT = torch_device("AMD Radeon RX 6800 XT", "gfx1030", 16 * GIB, 72)


class NoAccessSeam:
    """Wraps a seam whose /dev/kfd exists but cannot be opened (root cannot fake that by chmod)."""

    def __init__(self, seam: Any) -> None:
        self._seam = seam

    def can_open_rw(self, path: str) -> bool:
        return False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._seam, name)


def gpu_node(props: str, vram: int | None = 24 * GIB, **changes: int) -> Node:
    return Node(properties(props, **changes), gpu_id=1234, name="gpu", vram=vram)


def machine(*nodes: Node, **kw: Any) -> Machine:
    return Machine(
        nodes=[Node(CPU_NODE), *nodes],
        amdgpu_version=kw.pop("amdgpu_version", "6.8.5"),
        rocm_version=kw.pop("rocm_version", ROCM624),
        **kw,
    )


def run_doctor(
    tmp_path: Path, m: Machine | None, torch: Any, environ: dict[str, str] | None = None, wrap: Any = None
) -> dict[str, Check]:
    root = build_tree(tmp_path / "root", m) if m else (tmp_path / "root")
    root.mkdir(exist_ok=True)
    (root / "home/user").mkdir(parents=True, exist_ok=True)
    env_vars = {"HOME": "/home/user", **(environ or {})}
    seam = seam_for(root, torch, environ=env_vars)
    if wrap:
        seam = wrap(seam)
    env = detect_environment(seam)
    checks = diagnose(env, probe_extras(seam, env))
    return {c.id: c for c in checks}


def rocm_torch(*devices: dict[str, Any], version: str = "2.6.0+rocm6.2.4", rocm: str = "rocm6.2.4") -> Any:
    return fake_torch(version, hip="6.2.41133-dd7f95766", arch_list=arch_list_for(rocm), devices=list(devices))


def only_problem(checks: dict[str, Check], check_id: str, status: str = "fail") -> Check:
    found = {c.id: c.status for c in checks.values() if c.status in ("warn", "fail")}
    assert found == {check_id: status}, found
    return checks[check_id]


# -- healthy setups: no false alarm ------------------------------------------------------------
def test_healthy_rx7900xtx(tmp_path: Path) -> None:
    checks = run_doctor(tmp_path, machine(gpu_node(MOCK_7900XTX)), rocm_torch(XTX))
    assert not problems(list(checks.values())), checks
    assert checks["gfx-in-build"].status == "ok" and checks["kfd-access"].status == "ok"


def test_healthy_mi300x(tmp_path: Path) -> None:
    nodes = [gpu_node(MI308X, vram=192 * GIB) for _ in range(2)]
    checks = run_doctor(tmp_path, machine(*nodes, mem_total_kb=2 * 1024**3), rocm_torch(MI300X, MI300X))
    assert not problems(list(checks.values())), checks


def test_cpu_only_machine_says_it_has_no_gpu(tmp_path: Path) -> None:
    """Issue 20: a CPU-only machine is healthy but has no GPU, and the doctor says so plainly
    (a lone "no problems found" hid why no test reached a GPU), with the CPU index to install from."""
    checks = run_doctor(tmp_path, None, fake_torch("2.13.0+cpu"))
    check = only_problem(checks, "accelerator", "warn")
    assert "no GPU on this machine" in check.evidence and "no /dev/kfd" in check.evidence
    assert "no NVIDIA device" in check.evidence and "reference baseline" in check.evidence
    assert "pip install torch --index-url https://download.pytorch.org/whl/cpu" in check.fix
    assert checks["driver"].status == "skipped"


def nvidia_gpu(root: Path) -> None:
    write(root, "sys/bus/pci/devices/0000:01:00.0/vendor", "0x10de\n")
    write(root, "sys/bus/pci/devices/0000:01:00.0/class", "0x030200\n")


@pytest.mark.parametrize(
    ("has_nvidia", "index"),
    [(False, "https://download.pytorch.org/whl/cpu"), (True, "https://download.pytorch.org/whl/cu")],
    ids=["cpu-machine", "nvidia-machine"],
)
def test_without_torch_the_install_line_fits_the_machine(tmp_path: Path, has_nvidia: bool, index: str) -> None:
    """Never a bare `pip install torch` (on Linux the CUDA build): the CPU index on a machine with
    no GPU, a CUDA index where an NVIDIA GPU is on the PCI bus."""
    root = tmp_path / "root"
    root.mkdir()
    if has_nvidia:
        nvidia_gpu(root)
    checks = run_doctor(tmp_path, None, None)
    assert checks["torch"].status == "warn" and "torch" in checks["torch"].evidence
    assert checks["torch"].fix.startswith(f"pip install torch --index-url {index}"), checks["torch"].fix
    accelerator = checks["accelerator"]
    if has_nvidia:
        assert accelerator.status == "ok" and "NVIDIA GPU (0000:01:00.0)" in accelerator.evidence
    else:
        assert accelerator.status == "warn" and "torch (not installed)" in accelerator.evidence


def test_without_torch_on_amd_the_install_line_is_the_rocm_index(tmp_path: Path) -> None:
    checks = run_doctor(tmp_path, machine(gpu_node(MOCK_7900XTX)), None)
    assert checks["accelerator"].status == "ok" and "gfx1100" in checks["accelerator"].evidence
    assert checks["torch"].status == "fail"
    assert checks["torch"].fix.startswith("pip install torch --index-url https://download.pytorch.org/whl/rocm")


# -- broken setups ------------------------------------------------------------------------------
def test_cuda_wheel_on_amd(tmp_path: Path) -> None:
    check = only_problem(
        run_doctor(tmp_path, machine(gpu_node(MOCK_7900XTX)), fake_torch("2.12.0+cu130", cuda="13.0")), "torch-build"
    )
    assert "2.12.0+cu130 is a CUDA build" in check.evidence and "gfx1100" in check.evidence
    assert check.fix.startswith("pip uninstall -y torch") and "whl/rocm6.2.4" in check.fix


def test_rocm_wheel_without_amd_gpu(tmp_path: Path) -> None:
    checks = run_doctor(tmp_path, None, rocm_torch())
    found = {c.id: c.status for c in checks.values() if c.status in ("warn", "fail")}
    assert found == {"torch-build": "fail", "accelerator": "warn"}, found
    assert "No HIP GPUs" in checks["torch-build"].evidence
    assert "whl/cpu" in checks["torch-build"].fix  # no GPU at all here: the CPU build fits it


def test_user_not_in_render_group(tmp_path: Path) -> None:
    checks = run_doctor(tmp_path, machine(gpu_node(MOCK_7900XTX)), rocm_torch(XTX), wrap=NoAccessSeam)
    check = only_problem(checks, "kfd-access")
    assert "cannot open it read-write" in check.evidence
    assert "usermod -a -G render,video" in check.fix


def test_driver_not_loaded(tmp_path: Path) -> None:
    m = Machine(nodes=[], kfd=False, amdgpu_loaded=False)
    root = build_tree(tmp_path / "root", m)
    write(root, "sys/bus/pci/devices/0000:03:00.0/vendor", "0x1002\n")
    write(root, "sys/bus/pci/devices/0000:03:00.0/class", "0x030000\n")
    write(root, "sys/bus/pci/devices/0000:00:02.0/vendor", "0x8086\n")  # another vendor's GPU
    write(root, "sys/bus/pci/devices/0000:00:02.0/class", "0x030000\n")
    checks = run_doctor(tmp_path, m, fake_torch("2.6.0+rocm6.2.4", hip="6.2.41133"))
    assert checks["driver"].status == "fail"
    assert "0000:03:00.0" in checks["driver"].evidence and "0000:00:02.0" not in checks["driver"].evidence
    assert "modprobe amdgpu" in checks["driver"].fix and "dkms" in checks["driver"].fix


def test_gfx_missing_from_build_suggests_override(tmp_path: Path) -> None:
    rx6700 = torch_device("AMD Radeon RX 6700 XT", "gfx1031", 12 * GIB, 40)
    checks = run_doctor(tmp_path, machine(gpu_node(MOCK_7900XTX, gfx_target_version=100301)), rocm_torch(rx6700))
    check = only_problem(checks, "gfx-in-build")
    assert "gfx1031 (rdna2)" in check.evidence and "hipErrorNoBinaryForGpu" in check.evidence
    assert check.fix.startswith("export HSA_OVERRIDE_GFX_VERSION=10.3.0")


def test_gfx_missing_without_override_says_build_from_source(tmp_path: Path) -> None:
    rx580 = torch_device("Radeon RX 580", "gfx803", 8 * GIB, 36)
    checks = run_doctor(tmp_path, machine(gpu_node(MOCK_7900XTX, gfx_target_version=80003)), rocm_torch(rx580))
    assert "PYTORCH_ROCM_ARCH=gfx803" in only_problem(checks, "gfx-in-build").fix


def test_an_arch_list_with_target_features_counts_by_gfx(tmp_path: Path) -> None:
    """A source build (PYTORCH_ROCM_ARCH="gfx90a:xnack-;gfx942") lists features: gfx90a is built."""
    torch = fake_torch(
        "2.6.0+rocm6.2.4", hip="6.2.41133-dd7f95766", arch_list=["gfx90a:xnack-", "gfx942"], devices=[MI210]
    )
    checks = run_doctor(tmp_path, machine(gpu_node(MOCK_7900XTX, gfx_target_version=90010)), torch)
    assert checks["gfx-in-build"].status == "ok", checks["gfx-in-build"]


def test_spoofed_gfx1031_runs_and_says_so(tmp_path: Path) -> None:
    """The override is right (hsa-override ok); that the card reports gfx1030 is a warning: errors
    and results name gfx1030, not the silicon (what the pytest header warned of before)."""
    spoofed = torch_device("AMD Radeon RX 6700 XT", "gfx1030", 12 * GIB, 40)
    checks = run_doctor(
        tmp_path,
        machine(gpu_node(MOCK_7900XTX, gfx_target_version=100301)),
        rocm_torch(spoofed),
        environ={"HSA_OVERRIDE_GFX_VERSION": "10.3.0"},
    )
    check = only_problem(checks, "reported-gfx", "warn")
    assert check.evidence.startswith("HSA_OVERRIDE_GFX_VERSION=10.3.0 makes gfx1031 report as gfx1030")
    assert checks["hsa-override"].status == "ok"
    assert "gfx1031 runs gfx1030 code" in checks["hsa-override"].evidence


def test_malformed_override_gets_the_decimal_form(tmp_path: Path) -> None:
    checks = run_doctor(
        tmp_path,
        machine(gpu_node(MOCK_7900XTX, gfx_target_version=90010)),
        rocm_torch(MI210),
        environ={"HSA_OVERRIDE_GFX_VERSION": "9.0.a"},
    )
    check = checks["hsa-override"]
    assert check.status == "fail" and "not major.minor.stepping" in check.evidence
    assert check.fix == "export HSA_OVERRIDE_GFX_VERSION=9.0.10"


def test_unneeded_override_is_a_warning(tmp_path: Path) -> None:
    checks = run_doctor(
        tmp_path, machine(gpu_node(MOCK_7900XTX)), rocm_torch(XTX), environ={"HSA_OVERRIDE_GFX_VERSION": "11.0.0"}
    )
    check = only_problem(checks, "hsa-override", "warn")
    assert "not needed" in check.evidence and check.fix == "unset HSA_OVERRIDE_GFX_VERSION"


def test_override_within_the_generic_target_is_not_a_failure(tmp_path: Path) -> None:
    """gfx1150 and gfx1100 are both gfx11-generic members (LLVM AMDGPUUsage): users run 11.0.0."""
    strix = torch_device("AMD Radeon 890M", "gfx1100", 2 * GIB, 16)
    checks = run_doctor(
        tmp_path,
        machine(gpu_node(MOCK_7900XTX, gfx_target_version=110500, vram=2 * GIB)),
        rocm_torch(strix, version="2.6.0+rocm6.2.4"),
        environ={"HSA_OVERRIDE_GFX_VERSION": "11.0.0"},
    )
    check = checks["hsa-override"]
    assert check.status == "ok", check
    assert "gfx1150 runs gfx1100 code (same generic target gfx11-generic)" in check.evidence


@pytest.mark.parametrize(
    ("version", "value", "real", "target"),
    [
        (120001, "10.3.0", "gfx1201 (rdna4)", "gfx1030 (rdna2)"),  # jamiepine/voicebox#469
        (110700, "11.0.0", "gfx1170 (gfx11.7)", "gfx1100 (rdna3)"),  # gfx11-7-generic, not gfx11-generic
        (100100, "10.3.0", "gfx1010 (rdna1)", "gfx1030 (rdna2)"),  # ROCm/ROCm#887
    ],
)
def test_override_across_instruction_sets_fails(
    tmp_path: Path, version: int, value: str, real: str, target: str
) -> None:
    checks = run_doctor(
        tmp_path,
        machine(gpu_node(MOCK_7900XTX, gfx_target_version=version)),
        rocm_torch(torch_device("AMD Radeon", target.split()[0], 16 * GIB, 32)),
        environ={"HSA_OVERRIDE_GFX_VERSION": value},
    )
    check = checks["hsa-override"]
    assert check.status == "fail" and f"makes {real} run {target} code" in check.evidence, check


def test_igpu_next_to_the_card(tmp_path: Path) -> None:
    igpu = torch_device("AMD Radeon Graphics", "gfx1036", 512 * 1024**2, 2)
    m = machine(
        gpu_node(MOCK_7900XTX, gfx_target_version=100300, vram=16 * GIB),
        gpu_node(MOCK_7900XTX, gfx_target_version=100306, vram=512 * 1024**2),
    )
    checks = run_doctor(
        tmp_path,
        m,
        rocm_torch(RX6800XT, igpu, version="2.6.0+rocm6.2.4"),
        environ={"HSA_OVERRIDE_GFX_VERSION": "10.3.0"},
    )
    check = checks["igpu"]
    assert check.status == "warn" and "1:gfx1036" in check.evidence
    assert check.fix == "export HIP_VISIBLE_DEVICES=0"


def test_unpublished_pair(tmp_path: Path) -> None:
    checks = run_doctor(tmp_path, machine(gpu_node(MOCK_7900XTX)), rocm_torch(XTX, version="2.6.0+rocm6.3"))
    check = only_problem(checks, "torch-rocm-pair", "warn")
    assert "torch 2.6 was never published for ROCm 6.3" in check.evidence and "whl/rocm6.2.4" in check.fix


def test_nightly_pair_is_not_judged(tmp_path: Path) -> None:
    checks = run_doctor(tmp_path, machine(gpu_node(MOCK_7900XTX)), rocm_torch(XTX, version="2.7.0.dev20250306+rocm6.3"))
    assert checks["torch-rocm-pair"].status == "ok"


def test_unwritable_miopen_cache(tmp_path: Path) -> None:
    m = machine(gpu_node(MOCK_7900XTX))
    build_tree(tmp_path / "root", m)
    write(tmp_path / "root", "opt/cache", "a file where the cache folder should be")
    checks = run_doctor(tmp_path, m, rocm_torch(XTX), environ={"MIOPEN_USER_DB_PATH": "/opt/cache/miopen"})
    check = only_problem(checks, "miopen-cache", "warn")
    assert "/opt/cache/miopen" in check.evidence and "MIOPEN_USER_DB_PATH" in check.fix


def test_too_little_ram_for_vram(tmp_path: Path) -> None:
    checks = run_doctor(tmp_path, machine(gpu_node(MOCK_7900XTX), mem_total_kb=16 * 1024**2), rocm_torch(XTX))
    assert "16.0 GiB RAM is less than" in only_problem(checks, "memory", "warn").evidence


def test_wsl(tmp_path: Path) -> None:
    m = Machine(
        nodes=[],
        kfd=False,
        amdgpu_loaded=False,
        dxg=True,
        proc_version="Linux version 5.15.167.4-microsoft-standard-WSL2",
    )
    checks = run_doctor(tmp_path, m, fake_torch("2.8.0+rocm6.4", hip="6.4.43482-0f2d60242"))
    assert checks["wsl"].status == "warn" and "WSL" in checks["wsl"].fix
    assert checks["driver"].status == "skipped"


# -- the command -----------------------------------------------------------------------------
def test_cli_json_and_exit_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    healthy = tmp_path / "cpu.json"
    healthy.write_text(Environment(backend="cpu", torch="2.13.0+cpu").to_json())
    monkeypatch.setenv("PYTEST_ROCM_SYSROOT", str(tmp_path))
    assert cli.main(["doctor", "--json", "--env", str(healthy)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {c["id"] for c in out["checks"]} == {fn(Environment(), Extras()).id for fn in CHECKS}
    assert all(set(c) == {"id", "status", "evidence", "fix"} for c in out["checks"])

    broken = tmp_path / "cuda-on-amd.json"
    env = Environment(backend="cpu", torch="2.12.0+cu130", cuda="13.0")
    env.system.gpus = [SystemGpu(node=1, gfx="gfx1150")]
    broken.write_text(env.to_json())
    assert cli.main(["doctor", "--env", str(broken)]) == 1
    text = capsys.readouterr().out
    assert "[FAIL] torch-build" in text and "fix: pip uninstall" in text
    # the last line is the verdict and the first fix, never "run rocm-compat doctor" (this machine's)
    last = text.strip().splitlines()[-1]
    assert last.startswith(f"rocm doctor (the recorded environment {broken}): not ready (failing: ")
    assert "torch-build" in last and "; first fix (" in last and "run `rocm-compat doctor`" not in text

    assert cli.main(["doctor", "--env", str(tmp_path / "missing.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rocm-compat doctor: ") and "no such file" in err and err.count("\n") == 1
    monkeypatch.setenv("PYTEST_ROCM_SYSROOT", str(tmp_path / "nope"))
    assert cli.main(["doctor"]) == 2
    assert "PYTEST_ROCM_SYSROOT" in capsys.readouterr().err


def test_errors_table_covers_every_known_error(capsys: pytest.CaptureFixture[str]) -> None:
    source = json.loads((Path(__file__).parents[1] / "data" / "doctor" / "errors.json").read_text())
    with_fix = {e["id"] for e in source["errors"] if e.get("fix")}
    known = {e["id"]: e for e in doctor.known_errors()}
    assert with_fix <= set(known)  # every recorded error with a fix; the data grows beyond it
    ids = {fn(Environment(), Extras()).id for fn in CHECKS}
    for entry in known.values():
        assert entry["check"] in ids or entry.get("why_unmapped"), entry["id"]
    assert cli.main(["doctor", "--errors-table"]) == 0
    table = capsys.readouterr().out
    assert table.count("\n| `") == len({e["message"] for e in known.values()})  # one row per error text
    for entry in known.values():  # every check that catches a cause of a text is in its row
        row = next(line for line in table.splitlines() if entry["message"].replace("|", "\\|") in line)
        assert (f"`{entry['check']}`" if entry["check"] else "(library suites)") in row, entry["id"]


#: lines a tool prints before (or around) the error, and prompts: not what a user greps a log for
NOT_ERROR_TEXT = re.compile(
    r"^(?:[#$>] |ROCk module is loaded$|WSL environment detected\.$|\w+ is member of \w+ group$)|^[\"“”'].*[\"“”']"
)
#: what an error line says (the table's texts are errors, not banners)
ERROR_WORDS = re.compile(
    r"(?i)error|unable|failed|not supported|only supports|no \w+ (?:gpus|driver)|insufficient|cannot|missing|no suitable"
)


def test_each_common_error_is_a_line_a_user_can_grep_a_log_for() -> None:
    """The table's text is part of one line of the real error as recorded (so ``grep -F`` finds
    it in a log), an error line (not rocminfo's banner, a shell prompt or an issue's title); the
    recorded lines of the errors that came from errors.json are its verbatim lines."""
    source = {
        e["id"]: e
        for e in json.loads((Path(__file__).parents[1] / "data" / "doctor" / "errors.json").read_text())["errors"]
    }
    for entry in doctor.known_errors():
        message = entry["message"]
        recorded = [s["line"] for s in entry["samples"]]
        assert any(message in line for line in recorded), (entry["id"], message)
        if entry["id"] in source:
            assert recorded[0] in source[entry["id"]]["error_verbatim"], entry["id"]
        assert not NOT_ERROR_TEXT.search(message), (entry["id"], message)
        assert ERROR_WORDS.search(message), (entry["id"], message)
        assert "`" not in message or f"`` {message} ``" in doctor.errors_table(), entry["id"]  # shown exactly


def test_every_mapped_check_has_a_scenario() -> None:
    """Each check a known error maps to is driven to warn/fail by a setup in these files."""
    from test_doctor_knowledge import test_multi_gpu_hosts_need_iommu_pt_or_no_p2p
    from test_ollama import test_doctor_finds_an_unsupported_gfx_and_the_override_for_it

    scenarios = {
        "miopen-cache": test_unwritable_miopen_cache,
        "memory": test_too_little_ram_for_vram,
        "multi-gpu": test_multi_gpu_hosts_need_iommu_pt_or_no_p2p,
        "ollama-gfx": test_doctor_finds_an_unsupported_gfx_and_the_override_for_it,
        "gfx-in-build": test_gfx_missing_from_build_suggests_override,
        "hsa-override": test_override_across_instruction_sets_fails,
        "wsl": test_wsl,
        "torch-build": test_cuda_wheel_on_amd,
        "kfd-access": test_user_not_in_render_group,
        "driver": test_driver_not_loaded,
        "torch-rocm-pair": test_unpublished_pair,
    }
    mapped = {e["check"] for e in doctor.known_errors() if e["check"]}
    assert mapped <= set(scenarios), mapped - set(scenarios)


def test_summary_line_tells_failing_checks_from_warnings() -> None:
    checks = [
        Check("gfx-in-build", "fail", "e"),
        Check("igpu", "warn", "e"),
        Check("wsl", "ok", "e"),
        Check("memory", "skipped", "e"),
        Check("driver", "fail", "e"),
    ]
    assert doctor.summary_line(checks) == (
        "rocm doctor: 3 problems (failing: gfx-in-build, driver; warnings: igpu), run `rocm-compat doctor`"
    )
    assert doctor.summary_line([Check("igpu", "warn", "e")]) == (
        "rocm doctor: 1 problem (warnings: igpu), run `rocm-compat doctor`"
    )
    assert doctor.summary_line(checks[2:4]) is None
    assert doctor.summary_line([Check("igpu", "warn", "e")], "ci mi210.json") == (
        "rocm doctor: 1 problem (warnings: igpu), run `rocm-compat doctor --env 'ci mi210.json'`"
    )


def test_the_doctors_last_line_is_the_verdict_and_the_first_fix() -> None:
    checks = [
        Check("igpu", "warn", "e", fix="HIP_VISIBLE_DEVICES=0"),
        Check("gfx-in-build", "fail", "e"),  # no fix known: the next failing one with a fix is first
        Check("driver", "fail", "e", fix="sudo modprobe amdgpu"),
        Check("wsl", "ok", "e"),
    ]
    assert doctor.verdict_line(checks) == (
        "rocm doctor: not ready (failing: gfx-in-build, driver; warnings: igpu); first fix (driver): sudo modprobe amdgpu"
    )
    assert doctor.verdict_line(checks[:1], "r.json") == (
        "rocm doctor (the recorded environment r.json): usable, with warnings (warnings: igpu); "
        "first fix (igpu): HIP_VISIBLE_DEVICES=0"
    )
    assert doctor.verdict_line(checks[1:2]).endswith("; no fix is known: see the evidence above")
    assert doctor.verdict_line(checks[3:]) == "rocm doctor: ready, no problems found"
    assert doctor.render_text(checks).splitlines()[-1] == doctor.verdict_line(checks)


def test_pytest_header_names_the_problem(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A broken setup is its failing check's line and one line pointing at the doctor; a healthy
    one adds nothing."""
    pytester.makepyfile("def test_ok():\n    pass\n")
    broken = tmp_path / "broken"
    write(broken, "sys/bus/pci/devices/0000:03:00.0/vendor", "0x1002\n")
    write(broken, "sys/bus/pci/devices/0000:03:00.0/class", "0x030000\n")
    monkeypatch.setenv("PYTEST_ROCM_SYSROOT", str(broken))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(
        [
            "rocm: [[]FAIL] driver: AMD GPU at 0000:03:00.0 but no KFD topology or /dev/kfd: *",
            "rocm doctor: 1 problem (failing: driver), run `rocm-compat doctor`",
        ]
    )
    assert result.ret == 0
    monkeypatch.setenv("PYTEST_ROCM_SYSROOT", str(tmp_path / "empty"))
    (tmp_path / "empty").mkdir()
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    # the header before any test asked for torch runs the system checks only: no accelerator line
    # on a machine without a GPU (it would end every pytest run of every project there)
    assert "rocm doctor" not in result.stdout.str()


def test_docs_errors_table_is_generated_from_the_data() -> None:
    """docs/doctor.md's table is `rocm-compat doctor --errors-table`; regenerate it when the data changes."""
    readme = (Path(__file__).resolve().parents[2] / "docs" / "doctor.md").read_text(encoding="utf-8")
    start, end = "<!-- errors-table:start -->\n", "\n<!-- errors-table:end -->"
    table = readme[readme.index(start) + len(start) : readme.index(end)]
    assert table == doctor.errors_table()


def test_override_judged_on_every_gpu(tmp_path: Path) -> None:
    """gfx1030 card + gfx1036 iGPU: the override is what lets the iGPU run, so it is not flagged as
    unneeded because device 0 happens to be the supported card."""
    m = machine(
        gpu_node(MOCK_7900XTX, gfx_target_version=100300, vram=16 * GIB),
        gpu_node(MOCK_7900XTX, gfx_target_version=100306, vram=512 * 1024**2),
    )
    checks = run_doctor(
        tmp_path,
        m,
        rocm_torch(RX6800XT, dict(RX6800XT, name="AMD Radeon Graphics")),
        environ={"HSA_OVERRIDE_GFX_VERSION": "10.3.0"},
    )
    assert checks["hsa-override"].status == "ok", checks["hsa-override"]
    assert "gfx1036 runs gfx1030 code" in checks["hsa-override"].evidence


def test_igpu_hidden_by_an_override_is_found_by_the_kernel(tmp_path: Path) -> None:
    """HSA_OVERRIDE_GFX_VERSION=11.0.0 makes torch report a Raphael iGPU (gfx1036) as gfx1100:
    the kernel's gfx still says what it is."""
    igpu_as_gfx1100 = torch_device("AMD Radeon Graphics", "gfx1100", 512 * 1024**2, 2)
    m = machine(gpu_node(MOCK_7900XTX), gpu_node(MOCK_7900XTX, gfx_target_version=100306, vram=512 * 1024**2))
    checks = run_doctor(tmp_path, m, rocm_torch(XTX, igpu_as_gfx1100), environ={"HSA_OVERRIDE_GFX_VERSION": "11.0.0"})
    check = checks["igpu"]
    assert check.status == "warn" and "1:gfx1036" in check.evidence, check
    assert check.fix == "export HIP_VISIBLE_DEVICES=0"


def test_igpu_of_a_recorded_environment_untied_to_its_nodes() -> None:
    """A recorded environment whose devices were not tied to KFD nodes (hardware_gfx unknown under
    an override): the kernel's GPU list, HIP's order, decides."""
    env = Environment(variables={"HSA_OVERRIDE_GFX_VERSION": "11.0.0"})
    env.system.gpus = [SystemGpu(node=1, gfx="gfx1100"), SystemGpu(node=2, gfx="gfx1036")]
    env.devices = [Device(index=i, name="AMD Radeon", arch="gfx1100", gfx="gfx1100") for i in range(2)]
    check = check_igpu(env, Extras())
    assert check.status == "warn" and "1:gfx1036" in check.evidence, check
