"""A bad KFD node is dropped with an error naming its file; the other nodes stay (issue 19).

The valid node is the tinygrad mock of an RX 7900 XTX properties file (tests/data/sysfs); the bad
values are what a corrupt or hostile sysfs tree could hold. Before, ``gfx_target_version -1``
raised out of the node loop and emptied the whole system layer, so `/dev/kfd` and the real GPU
vanished and the doctor said "no problems found".
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fake_machines import CPU_NODE, MOCK_7900XTX, Machine, Node, build_tree, properties, seam_for, write

from pytest_rocm.doctor.checks import diagnose
from pytest_rocm.env.detect import detect_environment
from pytest_rocm.env.system import detect_system
from pytest_rocm.matrix import amd_gpu_present

NODES = "sys/class/kfd/kfd/topology/nodes"


def _machine(bad: str) -> Machine:
    """node 0 CPU, node 1 a valid gfx1100, node 2 the bad one."""
    return Machine([Node(CPU_NODE), Node(properties(MOCK_7900XTX), 1), Node(bad, 2)])


BAD_VERSIONS = {
    "minus one": "-1",
    "letters": "abc",
    "float": "1e5",
    "hex": "0x1100",
    "too large": "999999999",
    "arabic-indic digits": "\u0661\u0661\u0660\u0660\u0660\u0660",
}


@pytest.mark.parametrize("value", list(BAD_VERSIONS.values()), ids=list(BAD_VERSIONS))
def test_a_bad_gfx_target_version_drops_that_node_only(tmp_path: Path, value: str) -> None:
    bad = properties(MOCK_7900XTX, drm_render_minor=129).replace(
        "gfx_target_version 110000", f"gfx_target_version {value}"
    )
    assert f"gfx_target_version {value}" in bad
    build_tree(tmp_path, _machine(bad))
    info = detect_system(seam_for(tmp_path))
    assert [(g.node, g.gfx) for g in info.gpus] == [(1, "gfx1100")]
    assert info.kfd is True
    (error,) = info.errors
    assert error.startswith(f"/{NODES}/2/properties: ") and error.endswith("; node 2 dropped"), error
    assert "gfx999" not in error


def test_the_doctor_sees_the_real_gpu_and_the_bad_file(tmp_path: Path) -> None:
    bad = properties(MOCK_7900XTX).replace("gfx_target_version 110000", "gfx_target_version -1")
    build_tree(tmp_path, _machine(bad))
    env = detect_environment(seam_for(tmp_path))
    checks = {c.id: c for c in diagnose(env)}
    assert checks["driver"].status == "ok" and "1 GPU node(s)" in checks["driver"].evidence
    assert checks["probes"].status == "warn"
    assert f"/{NODES}/2/properties" in checks["probes"].evidence


def test_a_value_that_decodes_to_no_gfx_is_an_error_not_a_name(tmp_path: Path) -> None:
    """999999999 is an unsigned decimal but no gfx: it must not become gfx999996363."""
    bad = properties(MOCK_7900XTX).replace("gfx_target_version 110000", "gfx_target_version 999999999")
    build_tree(tmp_path, _machine(bad))
    info = detect_system(seam_for(tmp_path))
    assert all(g.gfx == "gfx1100" for g in info.gpus)
    assert "gfx_target_version 999999999 is no gfx" in info.errors[0]


def test_a_binary_properties_file_is_an_error(tmp_path: Path) -> None:
    build_tree(tmp_path, _machine("placeholder\n"))
    (tmp_path / NODES / "2" / "properties").write_bytes(b"\x7fELF\x02\x01\x01\x00\xff\xfe simd_count 4\n")
    info = detect_system(seam_for(tmp_path))
    assert [g.node for g in info.gpus] == [1]
    assert info.errors == [f"/{NODES}/2/properties: ValueError: binary data, not a properties file; node 2 dropped"]


@pytest.mark.timeout(20)
def test_a_fifo_where_sysfs_has_a_file_does_not_hang(tmp_path: Path) -> None:
    """Opening a FIFO for reading blocks until a writer comes: detection must check first."""
    build_tree(tmp_path, _machine(properties(MOCK_7900XTX)))
    fifo = tmp_path / NODES / "2" / "properties"
    fifo.unlink()
    os.mkfifo(fifo)
    vram = tmp_path / "sys/class/drm/renderD128/device/mem_info_vram_total"
    vram.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(vram)
    info = detect_system(seam_for(tmp_path))
    assert [g.node for g in info.gpus] == [1]
    assert f"/{NODES}/2/properties: not a regular file (a fifo (named pipe)); node 2 dropped" in info.errors
    assert (
        "/sys/class/drm/renderD128/device/mem_info_vram_total: not a regular file (a fifo (named pipe))" in info.errors
    )
    # the matrix's own quick look at the topology skips it too
    assert amd_gpu_present(tmp_path) is True


@pytest.mark.timeout(20)
def test_fifos_for_version_and_meminfo_files_do_not_hang(tmp_path: Path) -> None:
    build_tree(tmp_path, Machine([Node(CPU_NODE), Node(properties(MOCK_7900XTX), 1)]))
    for path in ("proc/meminfo", "proc/version"):
        (tmp_path / path).unlink()
        os.mkfifo(tmp_path / path)
    (tmp_path / "opt/rocm/.info").mkdir(parents=True)
    os.mkfifo(tmp_path / "opt/rocm/.info/version")
    info = detect_system(seam_for(tmp_path))
    assert [g.gfx for g in info.gpus] == ["gfx1100"]
    assert any(e.startswith("/proc/meminfo: not a regular file") for e in info.errors), info.errors


@pytest.mark.parametrize(("value", "kept"), [("25753026560\n", 25753026560), ("-5\n", None), ("1e9\n", None)])
def test_vram_must_be_an_unsigned_decimal(tmp_path: Path, value: str, kept: int | None) -> None:
    build_tree(tmp_path, Machine([Node(properties(MOCK_7900XTX), 1)]))
    write(tmp_path, "sys/class/drm/renderD128/device/mem_info_vram_total", value)
    info = detect_system(seam_for(tmp_path))
    assert info.gpus[0].vram == kept
    assert bool(info.errors) is (kept is None)


def test_gtt_is_read_next_to_vram(tmp_path: Path) -> None:
    """Strix Halo with a 96 GiB carve-out (antirez/ds4#475): GTT is recorded beside VRAM."""
    build_tree(tmp_path, Machine([Node(properties(MOCK_7900XTX, gfx_target_version=110501), 1)]))
    write(tmp_path, "sys/class/drm/renderD128/device/mem_info_vram_total", f"{96 * 1024**3}\n")
    write(tmp_path, "sys/class/drm/renderD128/device/mem_info_gtt_total", f"{16 * 1024**3}\n")
    (gpu,) = detect_system(seam_for(tmp_path)).gpus
    assert (gpu.gfx, gpu.vram, gpu.gtt) == ("gfx1151", 96 * 1024**3, 16 * 1024**3)
