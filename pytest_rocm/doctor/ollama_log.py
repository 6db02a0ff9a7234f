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
  the server runs on (``library=cpu``: the CPU fallback).

A log holds several server starts; only the last one (from its last ``Listening on`` line)
describes the server now. Journal prefixes (``Jan 14 19:05:43 host ollama[1672]: ``) are skipped.
Stdlib only.
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


def _last_start(lines: list[str]) -> list[str]:
    starts = [i for i, line in enumerate(lines) if 'msg="Listening on' in line]
    return lines[starts[-1] :] if starts else lines


def _gfx_list(text: str) -> tuple[str, ...]:
    return tuple(_GFX.findall(text))


def parse(text: str) -> OllamaLog:
    """What the last server start in ``text`` says about GPU discovery."""
    log = OllamaLog()
    for line in _last_start(text.splitlines()):
        if "msg=" not in line:
            continue
        f = fields(line)
        msg = f.get("msg", "")
        if not msg:
            continue
        log.lines += 1
        verbatim = line.strip()
        if msg.startswith("Listening on") and (m := _VERSION.search(msg)):
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
            log.quoted.setdefault("override", verbatim)
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
    return log


def message_of(line: str) -> str:
    """A quoted line's ``msg`` and the fields that matter, without the timestamp and journal prefix."""
    start = line.find("level=")
    return line[start:] if start >= 0 else line
