"""The checks of Ollama: the ROCm runtime it bundles (``ollama-runtime``), whether that runtime has
kernels for this machine's gfx (``ollama-gfx``) and what its server log says it runs on
(``ollama-gpu``). Ollama decides by itself, with its own ROCm, whether it uses the GPU: nothing
the system's ROCm or torch says applies to it.

Facts come from ``Extras.ollama`` (the install, ``doctor.ollama``) and ``Extras.ollama_log``
(the server log, ``doctor.ollama_log``); the gfx override rules from ``env.arch`` (data/gfx.json).
"""

from __future__ import annotations

import dataclasses

from pytest_rocm.doctor import ids
from pytest_rocm.doctor.facts import apu_gfxs, hardware_gfxs
from pytest_rocm.doctor.model import Check, CheckStatus, Extras
from pytest_rocm.doctor.ollama_log import OllamaLog, UnsupportedGpu, message_of
from pytest_rocm.env import arch
from pytest_rocm.env.model import Environment

#: ROCm-less GPUs in current Ollama: ollama/ollama#12071 (dhiltgen, 2026-07-02)
VULKAN_NOTE = "current Ollama releases run GPUs their ROCm lacks through Vulkan, on by default (ollama/ollama#12071)"
#: how the server gets a variable (ollama/ollama docs/faq.md, "Setting environment variables on Linux")
SERVICE_FIX = (
    'sudo systemctl edit ollama, add [Service] and Environment="{assignment}" below it, then '
    "sudo systemctl restart ollama"
)
#: an iGPU the server leaves out: 0.12 and later have a switch (project-nomad#1092: the 780M then
#: runs a model on the GPU); earlier servers ignore a ROCm GPU reporting under 1 GiB (ollama/ollama#2195)
IGPU_FIX_SWITCH = SERVICE_FIX.format(assignment="OLLAMA_IGPU_ENABLE=1")
IGPU_FIX_OLD = (
    "this Ollama ignores a ROCm GPU that reports less than 1 GiB of VRAM (ollama/ollama#2195): give the iGPU a "
    "larger UMA frame buffer in the BIOS, or use Ollama 0.12 or later with OLLAMA_IGPU_ENABLE=1"
)
BUNDLE_FIX = (
    "reinstall Ollama with its ROCm libraries (on Linux curl -fsSL https://ollama.com/install.sh | sh fetches "
    "its ROCm bundle when it sees an AMD GPU; the Windows installer carries them)"
)


def _quote(log: OllamaLog, key: str) -> str:
    return f"'{message_of(log.quoted[key])}'" if key in log.quoted else ""


def _version(extras: Extras) -> str:
    version = (extras.ollama.version if extras.ollama else None) or (
        extras.ollama_log.version if extras.ollama_log else None
    )
    return f"Ollama {version}" if version else "Ollama"


def _logged_gfx(log: OllamaLog | None) -> list[str]:
    if log is None:
        return []
    seen = [*log.supported, *(u.gfx for u in log.unsupported), *log.too_old, *(c.compute for c in log.rocm_computes)]
    return list(dict.fromkeys(g for g in seen if arch.is_gfx(g)))


def _judged_gfxs(env: Environment, log: OllamaLog | None) -> tuple[list[str], list[str]]:
    """(the GPUs to judge, the integrated ones the server left out): the kernel's GPUs (else the
    log's), less the iGPUs the log says the server skipped: their verdict is not the card's."""
    gfxs = list(dict.fromkeys(hardware_gfxs(env) or _logged_gfx(log)))
    if log is None or not log.skipped_igpus:
        return gfxs, []
    named = {g for g in log.skipped_igpus if g}
    left_out = [g for g in gfxs if g in apu_gfxs() or g in named]
    return [g for g in gfxs if g not in left_out], left_out or sorted(named)


def _reported_override(log: OllamaLog, silicon: list[str]) -> OllamaLog:
    """The log with the override its 0.12+ discovery lines show: they print no override line, but
    report the gfx the runtime was told (``library=ROCm compute=gfx1100`` for a gfx1150 under
    HSA_OVERRIDE_GFX_VERSION=11.0.0); unchanged when the server printed one or none shows."""
    if log.override is not None or not silicon:
        return log
    seen = [(c.compute, "compute_gpu") for c in log.rocm_computes] + [(g, "igpu_skipped") for g in log.skipped_igpus]
    for gfx, key in seen:
        if arch.is_gfx(gfx) and gfx not in silicon and (value := arch.override_string(gfx)) is not None:
            return dataclasses.replace(log, override=value, quoted={**log.quoted, "override": log.quoted[key]})
    return log


def _covered(extras: Extras) -> tuple[set[str] | None, str]:
    """The gfx Ollama's bundled ROCm has kernels for, and who says so; None when nothing does."""
    if extras.ollama is not None and extras.ollama.rocblas_gfx:
        return set(extras.ollama.rocblas_gfx), f"the rocBLAS bundled in {extras.ollama.rocm_dir}"
    log = extras.ollama_log
    if log is not None and log.unsupported:
        return set(log.unsupported[0].supported), "the server's own list (its log)"
    return None, ""


def check_ollama_runtime(env: Environment, extras: Extras) -> Check:
    """Which ROCm Ollama carries, beside the system's."""
    install = extras.ollama
    if install is None:
        return Check(
            ids.OLLAMA_RUNTIME, "skipped", "no Ollama install found (or not looked for: rocm-compat doctor looks)"
        )
    who = f"{_version(extras)} ({install.binary})"
    system = env.system.rocm_version
    if install.rocm_dir is None:
        if hardware_gfxs(env):
            return Check(
                ids.OLLAMA_RUNTIME,
                "warn",
                f"{who} has no ROCm libraries beside it (no libamdhip64/librocblas in lib/ollama or lib/ollama/rocm): "
                "it cannot use the AMD GPU and runs models on the CPU",
                BUNDLE_FIX,
            )
        return Check(ids.OLLAMA_RUNTIME, "ok", f"{who} carries no ROCm runtime (no AMD GPU here)")
    bundled = f"ROCm {install.rocm_version}" if install.rocm_version else "a ROCm of unknown release"
    beside = (
        f"; the system's ROCm {system} does not decide what Ollama runs" if system else "; no system ROCm is needed"
    )
    if system and install.rocm_version and system.split(".")[0] != install.rocm_version.split(".")[0]:
        beside += " (a fix or an upgrade of the system's ROCm does not reach Ollama)"
    return Check(ids.OLLAMA_RUNTIME, "ok", f"{who} loads its own {bundled} from {install.rocm_dir}{beside}")


def _override_fix(gfx: str, covered: set[str] | None) -> str | None:
    value = arch.override_for(gfx)
    if value is None:
        return None
    target = arch.parse_override(value)
    if covered is not None and target not in covered:
        return None
    assignment = f"HSA_OVERRIDE_GFX_VERSION={value}"
    return SERVICE_FIX.format(assignment=assignment) + f" (runs {target} kernels, the usual fix for {gfx})"


def _judge_override(log: OllamaLog, covered: set[str] | None, said_by: str, silicon: list[str]) -> Check | None:
    """An override that reached the server: malformed (quotes in the value), naming a gfx the
    bundle lacks, or not needed (the rule of the PyTorch check: env.arch.override_unneeded)."""
    value = log.override
    if value is None:
        return None
    seen = _quote(log, "override")
    if '"' in value or "'" in value:
        bare = value.strip("\"' ")
        return Check(
            ids.OLLAMA_GFX,
            "fail",
            f"the server got HSA_OVERRIDE_GFX_VERSION with quotes inside its value ({seen}): the runtime cannot read "
            "it (ollama/ollama#3107)",
            SERVICE_FIX.format(assignment=f"HSA_OVERRIDE_GFX_VERSION={bare}") + " (no quotes around the version)",
        )
    try:
        target = arch.parse_override(value)
    except ValueError as exc:
        return Check(ids.OLLAMA_GFX, "fail", f"{exc} ({seen})", "set it as major.minor.stepping, e.g. 10.3.0")
    if covered is not None and target not in covered:
        listed = ", ".join(sorted(covered)) or "no gfx at all"
        return Check(
            ids.OLLAMA_GFX,
            "warn",
            f"HSA_OVERRIDE_GFX_VERSION={value} makes the GPU run {target} kernels, but {said_by} has none for it "
            f"(it covers {listed}) ({seen})",
            BUNDLE_FIX if not covered else "pick an override whose gfx is in that list, or unset it",
        )
    if silicon and all(arch.override_unneeded(g, target, covered) for g in silicon):
        why = "names that gfx itself" if set(silicon) == {target} else f"{said_by} has native kernels for it"
        return Check(
            ids.OLLAMA_GFX,
            "warn",
            f"HSA_OVERRIDE_GFX_VERSION={value} reached the server but {', '.join(silicon)} needs none: it {why} "
            f"({seen})",
            "sudo systemctl edit ollama, delete the HSA_OVERRIDE_GFX_VERSION line, then sudo systemctl restart ollama",
        )
    return Check(
        ids.OLLAMA_GFX, "ok", f"HSA_OVERRIDE_GFX_VERSION={value} reached the server: it runs {target} kernels ({seen})"
    )


def check_ollama_gfx(env: Environment, extras: Extras) -> Check:
    """Whether Ollama's bundled rocBLAS has kernels for this machine's gfx, and the override that applies."""
    log = extras.ollama_log
    covered, said_by = _covered(extras)
    gfxs, left_out = _judged_gfxs(env, log)
    silicon = gfxs if hardware_gfxs(env) else []
    if log is not None and (
        judged := _judge_override(_reported_override(log, silicon + left_out), covered, said_by, silicon)
    ):
        return judged
    besides = ""
    if log is not None and left_out:
        besides = f"; it leaves out the integrated GPU ({', '.join(left_out)}) ({_quote(log, 'igpu_skipped')})"
    if gfxs and covered is None and log is not None and set(gfxs) <= set(log.supported):
        return Check(ids.OLLAMA_GFX, "ok", f"{', '.join(gfxs)}: the server says {_quote(log, 'supported')}{besides}")
    running = {c.compute for c in log.rocm_computes} if log is not None else set()
    if gfxs and covered is None and log is not None and set(gfxs) <= running:
        # 0.12 and later print no "amdgpu is supported": the discovery line is the server's word
        return Check(
            ids.OLLAMA_GFX, "ok", f"{', '.join(gfxs)}: the server runs on it ({_quote(log, 'compute_gpu')}){besides}"
        )
    if not gfxs and left_out and log is not None:
        return Check(
            ids.OLLAMA_GFX,
            "skipped",
            f"the only AMD GPU ({', '.join(left_out)}) is integrated and the server leaves it out "
            f"({_quote(log, 'igpu_skipped')}): see ollama-gpu",
        )
    if not gfxs or covered is None:
        return Check(
            ids.OLLAMA_GFX, "skipped", "no AMD GPU known, or no bundled ROCm kernels and no server log to judge"
        )
    missing = [g for g in gfxs if g not in covered]
    if not missing:
        return Check(ids.OLLAMA_GFX, "ok", f"{', '.join(gfxs)} covered by {said_by}{besides}")
    gfx = missing[0]
    listed = ", ".join(sorted(covered, key=lambda g: (len(g), g))) or "no gfx at all"
    evidence = f"{arch.describe(gfx)} has no kernels in {said_by} (it covers {listed}): Ollama runs on the CPU"
    if log is not None and "unsupported" in log.quoted:
        evidence += f" ({_quote(log, 'unsupported')})"
    fix = _override_fix(gfx, covered)
    if fix is None:
        fix = f"no override is known to make Ollama's ROCm run {gfx}" + (
            "; " + BUNDLE_FIX
            if not covered
            else f"; {VULKAN_NOTE}; or llama.cpp built for it (GGML_HIP=ON, AMDGPU_TARGETS={gfx})"
        )
    return Check(ids.OLLAMA_GFX, "warn", evidence, fix)


def _cause(log: OllamaLog) -> tuple[str, str]:
    """Why the server fell back to the CPU, and the fix, from the lines before its verdict."""
    if log.too_old:
        gfx = log.too_old[0]
        return (
            f"it rejects {gfx} as too old ({_quote(log, 'too_old')})",
            f"Ollama's ROCm does not run {gfx}: its discovery wants gfx9 or later (RocmComputeMajorMin, "
            "likelovewant/ollama-for-amd#51; ollama/ollama#2453 asks for gfx803)",
        )
    if log.unsupported:
        bad: UnsupportedGpu = log.unsupported[0]
        said = f"its ROCm library has no kernels for {bad.gfx} ({_quote(log, 'unsupported')})"
        if not bad.supported:
            return said, BUNDLE_FIX
        if log.override is not None:
            return (
                said,
                f"HSA_OVERRIDE_GFX_VERSION={log.override} is set: pick one whose gfx is in its list ({', '.join(bad.supported)})",
            )
        fix = _override_fix(bad.gfx, set(bad.supported))
        return said, fix or (
            f"no override is known to make it run {bad.gfx}: its list is {', '.join(bad.supported)}; {VULKAN_NOTE}"
        )
    if log.discovery_failed:
        return (
            f"its GPU discovery failed ({_quote(log, 'discovery_failed')})",
            "run the server with OLLAMA_DEBUG=1 and read the lines before that one (the discovery runner's own "
            "error); rocm-compat doctor --explain-file on the log names a known one",
        )
    if log.skipped_igpus:
        said = f"it leaves out the integrated GPU ({_quote(log, 'igpu_skipped')})"
        return said, IGPU_FIX_SWITCH if "OLLAMA_IGPU_ENABLE" in log.quoted["igpu_skipped"] else IGPU_FIX_OLD
    if log.no_amd_gpu:
        return (
            f"it found no AMD GPU it can use ({_quote(log, 'no_amd_gpu')})",
            "run the server with OLLAMA_DEBUG=1 and read the amdgpu lines before that one; "
            "the Ollama service's user must be in the render and video groups",
        )
    return "", "run the server with OLLAMA_DEBUG=1 and read the lines of GPU discovery"


def check_ollama_gpu(env: Environment, extras: Extras) -> Check:
    """What Ollama's server runs models on, as its log says: the GPU (which library, which gfx) or the CPU."""
    log = extras.ollama_log
    if log is None:
        return Check(
            ids.OLLAMA_GPU,
            "skipped",
            "no Ollama server log read (rocm-compat doctor --ollama-log FILE, or a readable journalctl -u ollama)",
        )
    where = extras.ollama_log_from or "the log"
    if log.lines == 0:
        return Check(ids.OLLAMA_GPU, "skipped", f"{where} has no Ollama server lines")
    who = _version(extras)
    if log.rocm_computes:
        c = log.rocm_computes[0]
        named = c.description or c.name
        return Check(ids.OLLAMA_GPU, "ok", f"{who} runs on the GPU: ROCm, {c.compute} ({named}, {c.total}) ({where})")
    if vulkan := [c for c in log.gpu_computes if c.library.lower() == "vulkan"]:
        c = vulkan[0]
        return Check(
            ids.OLLAMA_GPU,
            "ok",
            f"{who} runs on the GPU through Vulkan, not ROCm ({c.description or c.name}, {c.total}) ({where})",
        )
    if log.gpu_computes:
        c = log.gpu_computes[0]
        amd = hardware_gfxs(env)
        status: CheckStatus = "warn" if amd else "ok"
        also = f", not the AMD GPU ({', '.join(amd)})" if amd else ""
        return Check(ids.OLLAMA_GPU, status, f"{who} runs on {c.library} ({c.name}){also} ({where})")
    fell_back = (
        log.no_gpu
        or "compute_cpu" in log.quoted
        or log.unsupported
        or log.too_old
        or log.no_amd_gpu
        or log.discovery_failed
        or (log.skipped_igpus and not _judged_gfxs(env, log)[0])  # every GPU it has is an iGPU it left out
    )
    if not fell_back:
        return Check(
            ids.OLLAMA_GPU,
            "skipped",
            f"{where} does not say what the last server start runs on (no inference compute line)",
        )
    cause, fix = _cause(log)
    verdict = _quote(log, "no_gpu") or _quote(log, "compute_cpu")
    evidence = f"{who} runs models on the CPU{f' ({verdict})' if verdict else ''}" + (f": {cause}" if cause else "")
    return Check(ids.OLLAMA_GPU, "fail", f"{evidence} ({where})", fix)
