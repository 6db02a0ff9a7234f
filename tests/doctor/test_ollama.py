"""The Ollama checks on real Ollama server logs (tests/data/ollama, each with its source) and on
fake installs: the log parser across Ollama versions' formats, ``rocm-compat doctor
--ollama-log FILE``, the bundled ROCm next to the binary, and the journal read through the seam."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_rocm import cli
from pytest_rocm.doctor.checks import Extras
from pytest_rocm.doctor.ollama import JOURNAL_COMMAND, find_install, rocm_version_of
from pytest_rocm.doctor.ollama_checks import check_ollama_gfx, check_ollama_gpu, check_ollama_runtime
from pytest_rocm.doctor.ollama_log import parse
from pytest_rocm.doctor.probe import diagnose_machine, probe_ollama
from pytest_rocm.env.model import Environment
from pytest_rocm.env.seam import Seam

DATA = Path(__file__).parent.parent / "data"
LOGS = DATA / "ollama"
ENVS = DATA / "envs"


def log_text(name: str) -> str:
    text = (LOGS / f"{name}.log").read_text()
    assert text.startswith("# SOURCE: https://github.com/"), f"{name}.log names no source"
    return text


def doctor_json(capsys: pytest.CaptureFixture[str], env: str, log: str) -> dict[str, dict[str, Any]]:
    """``rocm-compat doctor --json --env ENV --ollama-log LOG``'s checks by id; exit 1 exactly when one fails."""
    code = cli.main(["doctor", "--json", "--env", str(ENVS / f"{env}.json"), "--ollama-log", str(LOGS / f"{log}.log")])
    checks = {c["id"]: c for c in json.loads(capsys.readouterr().out)["checks"]}
    assert code == (1 if any(c["status"] == "fail" for c in checks.values()) else 0)
    return checks


# -- the parser, on each Ollama version's format ------------------------------------------------
def test_rocm_gpu_found_0_5_4_journal() -> None:
    log = parse(log_text("gfx1100_rocm_0.5.4_journal"))
    assert log.version == "0.5.4" and log.supported == ["gfx1100"]
    (compute,) = log.rocm_computes
    assert (compute.compute, compute.name, compute.total) == ("gfx1100", "1002:744c", "20.0 GiB")
    assert not log.no_gpu and not log.unsupported


@pytest.mark.parametrize(
    ("name", "version", "gfx", "supported"),
    [
        ("gfx1103_unsupported_0.1.32", "0.1.32", "gfx1103", 11),  # "amdgpu [0] gfx1103 is not supported by ..."
        ("gfx1031_unsupported_0.3.4_windows", "0.3.4-0-g26bd110", "gfx1031", 1),  # supported_types=[gfx1103]
        ("gfx1031_unsupported_0.5.12", None, "gfx1031", 12),  # "... (supported types:[gfx1010 ...])"
        ("override_cpu_fallback_0.9.4_windows", "0.9.4", "gfx1100", 0),  # "(supported types:[])"
    ],
)
def test_unsupported_gpu_in_each_format(name: str, version: str | None, gfx: str, supported: int) -> None:
    log = parse(log_text(name))
    assert log.version == version
    (bad,) = log.unsupported
    assert bad.gfx == gfx and len(bad.supported) == supported
    assert not log.rocm_computes


def test_cpu_fallback_lines() -> None:
    log = parse(log_text("gfx1031_unsupported_0.5.12"))
    assert log.no_amd_gpu and log.no_gpu and log.computes == []
    windows = parse(log_text("gfx1031_unsupported_0.3.4_windows"))
    assert windows.no_gpu and [c.library for c in windows.computes] == ["cpu"] and windows.gpu_computes == []


def test_override_as_the_server_printed_it() -> None:
    assert parse(log_text("override_cpu_fallback_0.9.4_windows")).override == "11.0.0"
    assert parse(log_text("override_quoted_0.1.x")).override == '"11.0.3"'  # the quotes are in the value


def test_only_the_last_server_start_counts() -> None:
    """A journal holds every start: an old 0.1.32 start that rejected the GPU, then a 0.5.4 one on it."""
    old, new = log_text("gfx1103_unsupported_0.1.32"), log_text("gfx1100_rocm_0.5.4_journal")
    log = parse(old + new)
    assert log.version == "0.5.4" and log.unsupported == [] and log.rocm_computes
    assert parse(new + old).unsupported and parse(new + old).version == "0.1.32"


def test_text_that_is_not_an_ollama_log() -> None:
    log = parse("Hello\nsome other program's output\n")
    assert log.lines == 0
    extras = Extras(ollama_log=log, ollama_log_from="x.log")
    assert check_ollama_gpu(Environment(), extras).status == "skipped"


# -- rocm-compat doctor --ollama-log FILE ---------------------------------------------------------
def test_doctor_reads_a_working_rocm_server(capsys: pytest.CaptureFixture[str]) -> None:
    checks = doctor_json(capsys, "rx7900xtx_rocm6", "gfx1100_rocm_0.5.4_journal")
    gpu = checks["ollama-gpu"]
    assert gpu["status"] == "ok" and "Ollama 0.5.4 runs on the GPU: ROCm, gfx1100" in gpu["evidence"]
    assert checks["ollama-gfx"]["status"] == "ok" and "amdgpu is supported" in checks["ollama-gfx"]["evidence"]


def test_doctor_finds_an_unsupported_gfx_and_the_override_for_it(capsys: pytest.CaptureFixture[str]) -> None:
    checks = doctor_json(capsys, "rx6700xt_override", "gfx1031_unsupported_0.5.12")
    gpu, gfx = checks["ollama-gpu"], checks["ollama-gfx"]
    assert gpu["status"] == "fail" and "runs models on the CPU" in gpu["evidence"]
    assert 'msg="no compatible GPUs were discovered"' in gpu["evidence"] and "gfx1031" in gpu["evidence"]
    # gfx1031 runs gfx1030 kernels, which the server's own list has
    assert 'Environment="HSA_OVERRIDE_GFX_VERSION=10.3.0"' in gpu["fix"] and "systemctl edit ollama" in gpu["fix"]
    assert gfx["status"] == "warn" and gfx["fix"] == gpu["fix"]


def test_no_override_when_the_list_lacks_its_target(capsys: pytest.CaptureFixture[str]) -> None:
    """ollama-for-amd 0.3.4 on Windows covered gfx1103 only: 10.3.0 (gfx1030) would not help gfx1031."""
    checks = doctor_json(capsys, "rx6700xt_override", "gfx1031_unsupported_0.3.4_windows")
    assert "HSA_OVERRIDE_GFX_VERSION=10.3.0" not in checks["ollama-gpu"]["fix"]
    assert "no override is known" in checks["ollama-gpu"]["fix"] and "gfx1103" in checks["ollama-gpu"]["fix"]


def test_old_format_unsupported_gfx1103(capsys: pytest.CaptureFixture[str]) -> None:
    checks = doctor_json(capsys, "cpu_only", "gfx1103_unsupported_0.1.32")
    gpu = checks["ollama-gpu"]
    assert gpu["status"] == "fail" and "Ollama 0.1.32" in gpu["evidence"] and "gfx1103" in gpu["evidence"]
    assert "HSA_OVERRIDE_GFX_VERSION=11.0.0" in gpu["fix"]  # gfx1103 -> 11.0.0 (data/gfx.json)


def test_an_override_the_bundle_has_no_kernels_for(capsys: pytest.CaptureFixture[str]) -> None:
    """0.9.4 on Windows: the override reached the server, but its ROCm library listed no gfx at all."""
    checks = doctor_json(capsys, "rx7900xtx_rocm6", "override_cpu_fallback_0.9.4_windows")
    gfx, gpu = checks["ollama-gfx"], checks["ollama-gpu"]
    assert gfx["status"] == "warn" and "HSA_OVERRIDE_GFX_VERSION=11.0.0" in gfx["evidence"]
    assert "covers no gfx at all" in gfx["evidence"] and "ROCm libraries" in gfx["fix"]
    assert gpu["status"] == "fail" and "supported types:[]" in gpu["evidence"]


def test_an_override_with_quotes_in_its_value(capsys: pytest.CaptureFixture[str]) -> None:
    checks = doctor_json(capsys, "cpu_only", "override_quoted_0.1.x")
    gfx = checks["ollama-gfx"]
    assert gfx["status"] == "fail" and "quotes inside its value" in gfx["evidence"]
    assert 'Environment="HSA_OVERRIDE_GFX_VERSION=11.0.3"' in gfx["fix"]


def test_text_output_names_the_log(capsys: pytest.CaptureFixture[str]) -> None:
    log = LOGS / "gfx1031_unsupported_0.5.12.log"
    assert cli.main(["doctor", "--env", str(ENVS / "rx6700xt_override.json"), "--ollama-log", str(log)]) == 1
    out = capsys.readouterr().out
    assert "[FAIL] ollama-gpu: Ollama runs models on the CPU" in out and str(log) in out


@pytest.mark.parametrize(
    ("kind", "said"),
    [
        ("missing", "no such file"),
        ("folder", "is a directory, not a server log"),
        ("binary", "not a text file (a NUL byte at offset 4)"),
        ("latin-1", "not UTF-8 text (byte 0xe9 at offset 5)"),
    ],
)
def test_bad_log_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, said: str
) -> None:
    path = tmp_path / "server.log"
    if kind == "folder":
        path.mkdir()
    elif kind == "binary":
        path.write_bytes(b"\x7fELF\x00\x00\x01")
    elif kind == "latin-1":
        path.write_bytes(b"caf\xc3\xa9\xe9")
    code = cli.main(["doctor", "--env", str(ENVS / "cpu_only.json"), "--ollama-log", str(path)])
    err = capsys.readouterr().err
    assert code == 2 and err == f"rocm-compat doctor: --ollama-log {path}: {said}\n"


# -- the install next to the binary, and the journal -----------------------------------------------
class OllamaSeam(Seam):
    """A sysroot with an Ollama install; ``ollama --version`` and journalctl answer as given."""

    def __init__(self, root: Path, version_output: str, journal: tuple[int, str] | None) -> None:
        super().__init__(root, environ={"PATH": "/usr/local/bin:/usr/bin"})
        self.version_output, self.journal, self.ran = version_output, journal, []

    def capture(self, argv: Sequence[str]) -> tuple[int, str]:
        self.ran.append(list(argv))
        if list(argv) == list(JOURNAL_COMMAND):
            if self.journal is None:
                raise OSError(2, "No such file or directory", "journalctl")
            return self.journal
        return 0, self.version_output


def install(root: Path, files: Sequence[str], folder: str = "usr/local/lib/ollama/rocm") -> None:
    (root / "usr/local/bin").mkdir(parents=True)
    (root / "usr/local/bin/ollama").write_text("")
    for name in files:
        path = root / folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")


#: a 0.5-era Linux ROCm bundle's names (libhsa-runtime64.so.1.14.60303: ollama/ollama#8473)
BUNDLE = [
    "libamdhip64.so.6",
    "libamdhip64.so.6.3.60303",
    "libhsa-runtime64.so.1.14.60303",
    "libhipblas.so.2",
    "librocblas.so.4",
    "rocblas/library/TensileLibrary_lazy_gfx1030.dat",
    "rocblas/library/TensileLibrary_lazy_gfx1100.dat",
    "rocblas/library/Kernels.so-000-gfx1100.hsaco",
]


def test_rocm_release_from_library_names() -> None:
    assert rocm_version_of(["libamdhip64.so.6", "libhsa-runtime64.so.1.14.60303"]) == "6.3.3"
    assert rocm_version_of(["libamdhip64.so.7.1.70100"]) == "7.1.0"
    assert rocm_version_of(["librocblas.so.4"]) is None


def test_install_and_its_bundled_rocm(tmp_path: Path) -> None:
    install(tmp_path, BUNDLE)
    seam = OllamaSeam(tmp_path, "ollama version is 0.5.4\n", None)
    found = find_install(seam)
    assert found is not None and found.binary == "/usr/local/bin/ollama" and found.version == "0.5.4"
    assert found.rocm_dir == "/usr/local/lib/ollama/rocm" and found.rocm_version == "6.3.3"
    assert found.rocblas_gfx == ["gfx1030", "gfx1100"]
    env = Environment.load(ENVS / "rx7900xtx_rocm6.json")
    runtime = check_ollama_runtime(env, Extras(ollama=found))
    assert runtime.status == "ok" and "loads its own ROCm 6.3.3 from /usr/local/lib/ollama/rocm" in runtime.evidence
    assert f"the system's ROCm {env.system.rocm_version}" in runtime.evidence
    assert check_ollama_gfx(env, Extras(ollama=found)).status == "ok"


def test_bundled_rocblas_without_the_gpus_gfx(tmp_path: Path) -> None:
    install(tmp_path, [n for n in BUNDLE if "gfx1030" not in n])
    found = find_install(OllamaSeam(tmp_path, "ollama version is 0.5.4", None))
    gfx = check_ollama_gfx(Environment.load(ENVS / "rx6700xt_override.json"), Extras(ollama=found))
    assert gfx.status == "warn" and "gfx1031" in gfx.evidence and "covers gfx1100" in gfx.evidence
    assert gfx.fix is not None and "no override is known" in gfx.fix  # 10.3.0 needs gfx1030 kernels
    silent = find_install(OllamaSeam(tmp_path, "", None))
    assert silent is not None and silent.version is None  # --version said nothing readable


def test_older_layout_libraries_directly_in_lib_ollama(tmp_path: Path) -> None:
    install(tmp_path, BUNDLE, folder="usr/local/lib/ollama")
    found = find_install(OllamaSeam(tmp_path, "Warning: client version is 0.5.12", None))
    assert found is not None and found.rocm_dir == "/usr/local/lib/ollama" and found.version == "0.5.12"


def test_no_rocm_bundle_next_to_the_binary(tmp_path: Path) -> None:
    install(tmp_path, ["libggml-base.so"], folder="usr/local/lib/ollama")
    found = find_install(OllamaSeam(tmp_path, "ollama version is 0.5.4", None))
    runtime = check_ollama_runtime(Environment.load(ENVS / "rx7900xtx_rocm6.json"), Extras(ollama=found))
    assert runtime.status == "warn" and "no ROCm libraries beside it" in runtime.evidence
    assert check_ollama_runtime(Environment.load(ENVS / "cpu_only.json"), Extras(ollama=found)).status == "ok"
    assert check_ollama_runtime(Environment(), Extras()).status == "skipped"


def test_the_journal_is_read_where_readable(tmp_path: Path) -> None:
    install(tmp_path, BUNDLE)
    readable = OllamaSeam(tmp_path, "ollama version is 0.5.4", (0, log_text("gfx1100_rocm_0.5.4_journal")))
    extras = probe_ollama(readable, Extras(), None)
    assert extras.ollama_log_from == "journalctl -u ollama --no-pager -b"
    assert check_ollama_gpu(Environment(), extras).status == "ok"
    for journal in ((1, ""), None):  # not allowed to read it, or no journalctl at all: not required
        extras = probe_ollama(OllamaSeam(tmp_path, "ollama version is 0.5.4", journal), Extras(), None)
        assert extras.ollama is not None and extras.ollama_log is None
        assert check_ollama_gpu(Environment(), extras).status == "skipped"


def test_a_given_log_wins_over_the_journal_and_no_install_means_no_journal(tmp_path: Path) -> None:
    install(tmp_path, BUNDLE)
    seam = OllamaSeam(tmp_path, "ollama version is 0.5.4", (0, log_text("gfx1100_rocm_0.5.4_journal")))
    extras = probe_ollama(seam, Extras(), (log_text("gfx1031_unsupported_0.5.12"), "server.log"))
    assert extras.ollama_log_from == "server.log" and list(JOURNAL_COMMAND) not in seam.ran
    bare = OllamaSeam(tmp_path / "empty", "", (0, log_text("gfx1100_rocm_0.5.4_journal")))
    assert probe_ollama(bare, Extras(), None).ollama_log is None and bare.ran == []


def test_only_the_doctor_looks_for_ollama(tmp_path: Path) -> None:
    install(tmp_path, BUNDLE)
    seam = OllamaSeam(tmp_path, "ollama version is 0.5.4", (0, ""))
    assert diagnose_machine(seam=seam, system_only=True).extras.ollama is None  # type: ignore[union-attr]
    assert seam.ran == []
    assert diagnose_machine(seam=seam, ollama=True).extras.ollama is not None  # type: ignore[union-attr]


def test_a_versioned_rocm_folder_is_found(tmp_path: Path) -> None:
    """Newer bundles keep one folder per ROCm (``rocm_v7_1``, next to ``vulkan``): the newest holds the libraries."""
    install(
        tmp_path,
        ["libamdhip64.so.7.1.70100", "rocblas/library/TensileLibrary_lazy_gfx1201.dat"],
        folder="usr/local/lib/ollama/rocm_v7_1",
    )
    (tmp_path / "usr/local/lib/ollama/vulkan").mkdir()
    found = find_install(OllamaSeam(tmp_path, "ollama version is 0.13.0", None))
    assert found is not None and found.rocm_dir == "/usr/local/lib/ollama/rocm_v7_1"
    assert found.rocm_version == "7.1.0" and found.rocblas_gfx == ["gfx1201"]


def test_vulkan_on_the_amd_gpu_is_the_gpu() -> None:
    """Current Ollama runs GPUs its ROCm lacks through Vulkan (ollama/ollama#12071): that is no CPU fallback."""
    from pytest_rocm.doctor.ollama_log import InferenceCompute, OllamaLog

    log = OllamaLog(
        lines=1, computes=[InferenceCompute("0", "Vulkan", "", "Vulkan0", "16.2 GiB", "AMD Radeon(TM) Graphics")]
    )
    env = Environment.load(ENVS / "rx7900xtx_rocm6.json")
    gpu = check_ollama_gpu(env, Extras(ollama_log=log))
    assert gpu.status == "ok" and "through Vulkan, not ROCm (AMD Radeon(TM) Graphics" in gpu.evidence
    cuda = OllamaLog(
        lines=1, computes=[InferenceCompute("GPU-1", "cuda", "8.9", "NVIDIA GeForce RTX 4090", "23.6 GiB")]
    )
    assert check_ollama_gpu(env, Extras(ollama_log=cuda)).status == "warn"  # the NVIDIA card, not the AMD one


# -- Ollama's logs as they are now (0.9 to 0.32): iGPUs left out, 0.12+ discovery, hand-shortened ---------
def env_of(*silicon: str, reported: str | None = None, override: str | None = None) -> Environment:
    """A recorded environment whose kernel reports ``silicon`` (KFD order) and whose torch reports
    ``reported`` for each device (an override's target) or the silicon itself."""
    data = json.loads((ENVS / "rx7900xtx_rocm6.json").read_text())
    node = data["system"]["gpus"][0]
    data["system"]["gpus"] = [{**node, "node": i + 1, "gfx": g} for i, g in enumerate(silicon)]
    data["devices"] = [
        {**data["devices"][0], "index": i, "arch": reported or g, "gfx": reported or g, "hardware_gfx": g}
        for i, g in enumerate(silicon)
    ]
    data["variables"]["HSA_OVERRIDE_GFX_VERSION"] = override
    return Environment.from_dict(data)


def ollama_checks(env: Environment, log: str) -> dict[str, Any]:
    extras = Extras(ollama_log=parse(log_text(log)), ollama_log_from=f"{log}.log")
    return {c.id: c for c in (check_ollama_gfx(env, extras), check_ollama_gpu(env, extras))}


def test_a_skipped_igpu_does_not_hide_the_cards_verdict() -> None:
    """RX 7700S (gfx1102) + Radeon 680M (gfx1035): the server skips the iGPU, the card is supported."""
    checks = ollama_checks(env_of("gfx1102", "gfx1035"), "gfx1102_igpu_skipped_0.9.6_journal")
    gfx = checks["ollama-gfx"]
    assert gfx.status == "ok" and gfx.evidence.startswith("gfx1102: the server says"), gfx
    assert "leaves out the integrated GPU (gfx1035)" in gfx.evidence
    assert checks["ollama-gpu"].status == "ok" and "ROCm, gfx1102" in checks["ollama-gpu"].evidence


def test_an_override_naming_the_gfx_itself_is_not_needed() -> None:
    checks = ollama_checks(env_of("gfx1102", "gfx1035"), "gfx1102_override_11.0.2_0.9.6_journal")
    gfx = checks["ollama-gfx"]
    assert gfx.status == "warn" and "HSA_OVERRIDE_GFX_VERSION=11.0.2" in gfx.evidence and "needs none" in gfx.evidence
    assert "delete the HSA_OVERRIDE_GFX_VERSION line" in (gfx.fix or "")
    # the log ends before a verdict: the iGPU left out is no CPU fallback while a card remains
    assert checks["ollama-gpu"].status == "skipped"


@pytest.mark.parametrize(
    ("silicon", "value", "unneeded"),
    [
        ("gfx1102", "11.0.2", True),
        ("gfx1151", "11.5.1", True),
        ("gfx1031", "10.3.0", False),
        ("gfx1100", "11.0.0", True),
    ],
)
def test_one_rule_for_the_pytorch_and_the_ollama_check(silicon: str, value: str, unneeded: bool) -> None:
    """The same override on the same silicon: both checks call it unneeded, or neither does."""
    from pytest_rocm.doctor.machine import check_override
    from pytest_rocm.env import arch

    target = arch.parse_override(value)
    torch_side = check_override(env_of(silicon, reported=target, override=value), Extras())
    log = parse(
        f'level=INFO source=amd_linux.go:389 msg="skipping rocm gfx compatibility check" HSA_OVERRIDE_GFX_VERSION={value}'
    )
    ollama_side = check_ollama_gfx(env_of(silicon), Extras(ollama_log=log))
    assert ("not needed" in torch_side.evidence) is unneeded, torch_side
    assert ("needs none" in ollama_side.evidence) is unneeded, ollama_side


def test_the_override_of_a_0_12_server_config_line() -> None:
    log = parse(log_text("server_config_override_11.5.1_strix_halo"))
    assert log.override == "11.5.1" and log.lines == 3
    gfx = check_ollama_gfx(env_of("gfx1151"), Extras(ollama_log=log))
    assert gfx.status == "warn" and "HSA_OVERRIDE_GFX_VERSION=11.5.1" in gfx.evidence and "needs none" in gfx.evidence
    unset = parse(
        'time=x level=INFO source=routes.go:1 msg="server config" env="map[HIP_VISIBLE_DEVICES: HSA_OVERRIDE_GFX_VERSION: HTTPS_PROXY:]"'
    )
    assert unset.override is None and unset.lines == 1


def test_a_0_12_discovery_line_shows_the_override_it_ran_under() -> None:
    """An 890M (gfx1150) that the server reports as compute=gfx1100 ran under 11.0.0, which the log
    prints nowhere else; the iGPU it then drops leaves the server on the CPU."""
    checks = ollama_checks(env_of("gfx1150"), "igpu_dropped_890m_0.30")
    assert "HSA_OVERRIDE_GFX_VERSION=11.0.0" in checks["ollama-gfx"].evidence
    gpu = checks["ollama-gpu"]
    assert gpu.status == "fail" and "leaves out the integrated GPU" in gpu.evidence
    assert 'Environment="OLLAMA_IGPU_ENABLE=1"' in (gpu.fix or "")


@pytest.mark.parametrize(
    ("name", "silicon", "said"),
    [
        (
            "cpu_shortened_by_hand_0.17.7",
            ["gfx1201"],
            "runs models on the CPU ('inference compute id=cpu library=cpu')",
        ),
        # an Intel iGPU through Vulkan, on a machine with no AMD GPU: the server has nothing left
        ("igpu_dropped_0.32.5_shortened", [], "leaves out the integrated GPU ('dropping integrated GPU"),
        ("cpu_fallback_0.12.8", ["gfx1031"], 'msg="inference compute" id=cpu library=cpu'),
    ],
)
def test_a_log_shortened_by_hand_is_still_an_ollama_log(name: str, silicon: list[str], said: str) -> None:
    log = parse(log_text(name))
    assert log.lines > 0
    env = env_of(*silicon) if silicon else Environment()
    gpu = check_ollama_gpu(env, Extras(ollama_log=log, ollama_log_from="x.log"))
    assert gpu.status == "fail" and said in gpu.evidence, gpu


def test_bare_fields_after_a_shortened_message_belong_to_it() -> None:
    log = parse(log_text("igpu_dropped_0.32.5_shortened"))
    assert log.skipped_igpus == [""]  # compute=0.0 is Vulkan's, not a gfx
    parsed = parse("dropping integrated GPU; to enable, set OLLAMA_IGPU_ENABLE=1\nid=0 library=ROCm compute=gfx1103\n")
    assert parsed.skipped_igpus == ["gfx1103"]


def test_prose_that_names_a_message_is_not_a_log() -> None:
    assert parse("we changed the server config and inference compute is slow\n").lines == 0
    assert parse("I think inference compute fails\n").lines == 0


def test_a_0_12_rocm_discovery_line_is_the_servers_word_on_the_gfx() -> None:
    """0.12 and later print no "amdgpu is supported": the inference compute line says it runs the
    gfx. The fields are those of Crosstalk-Solutions/project-nomad#1056's 0.30 line (library=ROCm
    compute=... name=ROCm0 description=...), for a card the server keeps."""
    line = (
        'time=2026-01-02T03:04:05.000Z level=INFO source=types.go:42 msg="inference compute" id=0 library=ROCm '
        'compute=gfx1201 name=ROCm0 description="AMD Radeon RX 9070 XT" libdirs=ollama,rocm type=discrete '
        'total="15.9 GiB" available="15.8 GiB"'
    )
    extras = Extras(ollama_log=parse(line), ollama_log_from="x.log")
    gfx = check_ollama_gfx(env_of("gfx1201"), extras)
    assert gfx.status == "ok" and gfx.evidence.startswith("gfx1201: the server runs on it"), gfx
    assert check_ollama_gpu(env_of("gfx1201"), extras).status == "ok"


def test_a_failed_0_12_discovery_is_the_cause_of_the_cpu_fallback() -> None:
    """The message of ollama/ollama#15762's and #13070's titles, with the fields Ollama logs it with."""
    text = (
        'time=2026-04-23T04:08:30.000Z level=INFO source=runner.go:464 msg="failure during GPU discovery" '
        'OLLAMA_LIBRARY_PATH="[/usr/lib/ollama /usr/lib/ollama/rocm]" extra_envs=map[] error="runner crashed"\n'
        'time=2026-04-23T04:08:30.001Z level=INFO source=types.go:60 msg="inference compute" id=cpu library=cpu\n'
    )
    gpu = check_ollama_gpu(env_of("gfx1031"), Extras(ollama_log=parse(text), ollama_log_from="x.log"))
    assert gpu.status == "fail" and "its GPU discovery failed" in gpu.evidence and "runner crashed" in gpu.evidence
