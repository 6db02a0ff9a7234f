"""What an Ollama server log says about GPU discovery: a pure parser of its lines.

Ollama decides by itself whether it runs on the GPU, with its own ROCm, and says so only in its
server log (``journalctl -u ollama``, ``~/.ollama/logs/server.log``, ``docker logs``). The lines
read here, in the forms several Ollama versions wrote them (real captures in tests/data/ollama):

- ``msg="Listening on 127.0.0.1:11434 (version 0.5.4)"``: the server's version;
- ``msg="amdgpu is supported" gpu=0 gpu_type=gfx1100`` (0.2 and later);
- ``msg="amdgpu is not supported (supported types:[gfx1030 ...])" gpu_type=gfx1031`` (0.4 and
  later), ``msg="amdgpu is not supported" gpu_type=gfx1031 supported_types=[gfx1103]`` (0.3), and
  ``msg="amdgpu [0] gfx1103 is not supported by /tmp/.../rocm [gfx1030 ...]"`` (0.1);
- ``msg="amdgpu too old gfx803"``;
- ``msg="skipping rocm gfx compatibility check" HSA_OVERRIDE_GFX_VERSION=11.0.0``: an override
  reached the server (its value as the server got it, quotes and all);
- ``msg="no compatible amdgpu devices detected"``, ``msg="no compatible GPUs were discovered"``;
- ``msg="inference compute" id=... library=rocm ... compute=gfx1100 ... total="20.0 GiB"``: what
  the server runs on (``library=cpu``: the CPU fallback); 0.12 and later write ``library=ROCm
  compute=gfx1151 name=ROCm0 description=... libdirs=... type=iGPU``;
- ``msg="unsupported Radeon iGPU detected skipping" id=1`` (0.2 to 0.11) and ``msg="dropping
  integrated GPU; to enable, set OLLAMA_IGPU_ENABLE=1" id=0 library=ROCm compute=gfx1100`` (0.12
  and later): an integrated GPU the server leaves out;
- ``msg="server config" env="map[... HSA_OVERRIDE_GFX_VERSION:11.5.1 ...]"``: the variables the
  server was started with, the override among them (0.12 and later print no "skipping rocm gfx
  compatibility check" line), and a runner's ``HSA_OVERRIDE_GFX_VERSION=`` field.

A log holds several server starts; only the last one (from its last ``server config`` or
``Listening on`` line) describes the server now. Journal prefixes (``Jan 14 19:05:43 host
ollama[1672]: ``) are skipped. A log shortened by hand still reads: a line that starts with one of
these messages without ``msg=`` is that message, and a line of bare ``key=value`` fields after it
belongs to it (``discovering available GPUs...`` / ``dropping integrated GPU; ...`` / ``id=0
library=Vulkan compute=0.0``). Stdlib only.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

#: one logfmt field: ``key=value`` or ``key="quoted \"value\""``
_FIELD = re.compile(r'([A-Za-z_][A-Za-z0-9_.]*)=("(?:[^"\\]|\\.)*"|\S*)')
_VERSION = re.compile(r"\(version ([^)\s]+)\)")
_GFX = re.compile(r"\bgfx[0-9a-f]+\b")
#: 0.1's form: ``amdgpu [0] gfx1103 is not supported by /tmp/ollama2145067703/rocm [gfx1030 ...]``
_OLD_UNSUPPORTED = re.compile(r"amdgpu \[(\w+)\] (gfx[0-9a-f]+) is not supported by (\S+) \[([^\]]*)\]")
#: the messages a line shortened by hand may start with (no ``time=``, no ``msg=``)
KNOWN_MESSAGES = (
    "inference compute",
    "amdgpu is supported",
    "amdgpu is not supported",
    "amdgpu too old",
    "skipping rocm gfx compatibility check",
    "unsupported Radeon iGPU detected skipping",
    "dropping integrated GPU; to enable, set OLLAMA_IGPU_ENABLE=1",
    "no compatible amdgpu devices detected",
    "no compatible GPUs were discovered",
    "discovering available GPUs...",
    "looking for compatible GPUs",
    "entering low vram mode",
    "failure during GPU discovery",
    "Listening on",
    "server config",
)
_ONLY_FIELDS = re.compile(r'^\s*(?:[A-Za-z_][A-Za-z0-9_.]*=(?:"(?:[^"\\]|\\.)*"|\S*)\s*)+$')
_ENV_OVERRIDE = re.compile(r"(?:^|[\s\[])HSA_OVERRIDE_GFX_VERSION:(\S*)")
#: what a journal, docker or timestamping tool puts before Ollama's own text (``Jan 14 19:05:43 host
#: ollama[1672]: ``, ``[ollama-ollama-1] 2026-02-07T15:23:47.296Z ``); nothing else may come before a
#: message shortened by hand, so prose that mentions one is not taken for it
_PREFIX = re.compile(
    r"^(?:\S+\s+\d{1,2}\s+\d\d:\d\d:\d\d\s+\S+\s+\S+?:\s+|\[[^\]]*\]\s*|\d{4}-\d\d-\d\dT\S+\s+"
    r"|\d{4}/\d\d/\d\d \d\d:\d\d:\d\d\s+|[-*>]\s+)*"
)


@dataclass(frozen=True)
class UnsupportedGpu:
    """A GPU Ollama saw and would not use: its gfx and the gfx its bundled ROCm library covers."""

    gpu: str
    gfx: str
    library: str | None
    #: the gfx list the server printed (empty: it printed ``[]``, its library covers none)
    supported: tuple[str, ...]


@dataclass(frozen=True)
class InferenceCompute:
    """One ``inference compute`` line: a device the server will run models on."""

    id: str
    library: str
    compute: str
    name: str
    total: str
    #: the marketing name newer servers print (``description="AMD Radeon(TM) Graphics"``); "" when none
    description: str = ""


@dataclass
class OllamaLog:
    """The GPU discovery of the last server start a log shows."""

    #: how many lines came from Ollama's server (logfmt lines with ``msg=``); 0: not an Ollama log
    lines: int = 0
    version: str | None = None
    supported: list[str] = field(default_factory=list)
    unsupported: list[UnsupportedGpu] = field(default_factory=list)
    too_old: list[str] = field(default_factory=list)
    #: the HSA_OVERRIDE_GFX_VERSION the server saw, exactly as it printed it (None: none set)
    override: str | None = None
    computes: list[InferenceCompute] = field(default_factory=list)
    no_amd_gpu: bool = False
    no_gpu: bool = False
    #: 0.12 and later: the discovery runner failed (``msg="failure during GPU discovery" ... error="runner crashed"``)
    discovery_failed: bool = False
    #: integrated GPUs the server left out: the gfx it printed for each ("" when it printed none)
    skipped_igpus: list[str] = field(default_factory=list)
    #: the lines the findings came from, verbatim (the evidence the checks quote)
    quoted: dict[str, str] = field(default_factory=dict)

    @property
    def gpu_computes(self) -> list[InferenceCompute]:
        return [c for c in self.computes if c.library.lower() != "cpu"]

    @property
    def rocm_computes(self) -> list[InferenceCompute]:
        return [c for c in self.computes if c.library.lower() == "rocm"]


def fields(line: str) -> dict[str, str]:
    """The logfmt fields of one log line, quoted values unquoted (Go's %q, read as JSON)."""
    found: dict[str, str] = {}
    for key, raw in _FIELD.findall(line):
        if raw.startswith('"'):
            try:
                value = json.loads(raw)
            except ValueError:
                value = raw[1:-1]
            found[key] = value if isinstance(value, str) else raw
        else:
            found[key] = raw
    return found


def _last_start(records: list[tuple[str, dict[str, str], str]]) -> list[tuple[str, dict[str, str], str]]:
    """The records of the last server start: from its ``server config`` line (0.12 and later print
    it first), or its ``Listening on`` line when no ``server config`` came since the last start."""
    start, in_config = 0, False
    for i, (msg, _, _) in enumerate(records):
        if msg == "server config":
            start, in_config = i, True
        elif msg.startswith("Listening on"):
            if not in_config:
                start = i
            in_config = False
    return records[start:]


def records(text: str) -> list[tuple[str, dict[str, str], str]]:
    """(msg, fields, verbatim line) of each line Ollama's server wrote, in order; a bare field line
    after a message shortened by hand adds its fields to it."""
    found: list[tuple[str, dict[str, str], str]] = []
    hand_shortened = False
    for line in text.splitlines():
        verbatim = line.strip()
        if "msg=" in line:
            f = fields(line)
            if f.get("msg"):
                found.append((f["msg"], f, verbatim))
            hand_shortened = False
            continue
        body = _PREFIX.sub("", line.strip(), count=1).strip()
        known = next((m for m in KNOWN_MESSAGES if body.startswith(m)), None)
        if known is not None:
            f = fields(body[len(known) :])
            f["msg"] = body if known in ("Listening on", "amdgpu too old") else known
            found.append((f["msg"], f, verbatim))
            hand_shortened = True
        elif hand_shortened and found and _ONLY_FIELDS.match(body):
            for key, value in fields(body).items():
                found[-1][1].setdefault(key, value)
    return found


def _gfx_list(text: str) -> tuple[str, ...]:
    return tuple(_GFX.findall(text))


def parse(text: str) -> OllamaLog:
    """What the last server start in ``text`` says about GPU discovery."""
    log = OllamaLog()
    env_override: str | None = None
    for msg, f, verbatim in _last_start(records(text)):
        log.lines += 1
        if "HSA_OVERRIDE_GFX_VERSION" in f and f["HSA_OVERRIDE_GFX_VERSION"] and env_override is None:
            env_override = f["HSA_OVERRIDE_GFX_VERSION"]  # a runner's environment (OLLAMA_DEBUG)
            log.quoted.setdefault("override", verbatim)
        if msg == "server config" and (m := _ENV_OVERRIDE.search(f.get("env", ""))) and m.group(1):
            env_override = m.group(1)
            log.quoted["override"] = verbatim
        elif msg.startswith("Listening on") and (m := _VERSION.search(msg)):
            log.version = m.group(1)
        elif msg == "amdgpu is supported":
            log.supported.append(f.get("gpu_type", ""))
            log.quoted.setdefault("supported", verbatim)
        elif msg.startswith("amdgpu is not supported"):
            listed = msg.partition("supported types:")[2] or f.get("supported_types", "")
            log.unsupported.append(
                UnsupportedGpu(f.get("gpu", "?"), f.get("gpu_type", "?"), f.get("library"), _gfx_list(listed))
            )
            log.quoted.setdefault("unsupported", verbatim)
        elif m := _OLD_UNSUPPORTED.search(msg):
            log.unsupported.append(UnsupportedGpu(m.group(1), m.group(2), m.group(3), _gfx_list(m.group(4))))
            log.quoted.setdefault("unsupported", verbatim)
        elif msg.startswith("amdgpu too old"):
            log.too_old.extend(_gfx_list(msg))
            log.quoted.setdefault("too_old", verbatim)
        elif msg == "skipping rocm gfx compatibility check":
            log.override = f.get("HSA_OVERRIDE_GFX_VERSION", "")
            log.quoted["override"] = verbatim
        elif msg.startswith(("unsupported Radeon iGPU detected skipping", "dropping integrated GPU")):
            log.skipped_igpus.append(f.get("compute", "") if arch_like(f.get("compute", "")) else "")
            log.quoted.setdefault("igpu_skipped", verbatim)
        elif msg.startswith("failure during GPU discovery"):
            log.discovery_failed = True
            log.quoted.setdefault("discovery_failed", verbatim)
        elif msg == "no compatible amdgpu devices detected":
            log.no_amd_gpu = True
            log.quoted.setdefault("no_amd_gpu", verbatim)
        elif msg == "no compatible GPUs were discovered":
            log.no_gpu = True
            log.quoted.setdefault("no_gpu", verbatim)
        elif msg == "inference compute":
            compute = InferenceCompute(
                f.get("id", "?"),
                f.get("library", "?"),
                f.get("compute", ""),
                f.get("name", ""),
                f.get("total", ""),
                f.get("description", ""),
            )
            log.computes.append(compute)
            key = "compute_gpu" if compute.library.lower() != "cpu" else "compute_cpu"
            log.quoted.setdefault(key, verbatim)
    if log.override is None and env_override is not None:
        log.override = env_override
    return log


def arch_like(name: str) -> bool:
    return bool(_GFX.fullmatch(name))


def message_of(line: str) -> str:
    """A quoted line's ``msg`` and the fields that matter, without the timestamp and journal prefix."""
    start = line.find("level=")
    return line[start:] if start >= 0 else line
