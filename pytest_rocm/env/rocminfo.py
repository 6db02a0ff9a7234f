"""Read ``rocminfo`` output: each agent's name, node and the ISAs the runtime offers it.

A GPU agent lists its own ISA (``amdgcn-amd-amdhsa--gfx1150``) and, with code object v6 runtimes,
the generic one it also loads (``ISA 2``: ``amdgcn-amd-amdhsa--gfx11-generic``). The text is pasted
by users or captured by tools: this parser reads what it can and skips the rest, and names what it
could not read (``RocminfoAgent.errors``). Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pytest_rocm.env import arch

_AGENT_RE = re.compile(r"^\s*Agent\s+([0-9]+)\s*$")
_FIELD_RE = re.compile(r"^\s*(Name|Node|Device Type|Marketing Name):\s*(.*?)\s*$")
_ISA_HEADER_RE = re.compile(r"^\s*ISA\s+[0-9]+\s*$")


@dataclass
class RocminfoAgent:
    number: int
    name: str | None = None
    marketing_name: str | None = None
    device_type: str | None = None
    node: int | None = None
    #: the ISA targets in the order rocminfo lists them (``gfx1150``, ``gfx11-generic``)
    isas: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def generic_isas(self) -> list[str]:
        return [isa for isa in self.isas if arch.is_generic(isa)]


def parse_rocminfo(text: str) -> list[RocminfoAgent]:
    """The agents of a ``rocminfo`` listing, in its order (CPU agents included)."""
    agents: list[RocminfoAgent] = []
    in_isa = False
    for line in text.splitlines():
        agent = _AGENT_RE.match(line)
        if agent:
            agents.append(RocminfoAgent(int(agent.group(1))))
            in_isa = False
            continue
        if not agents:
            continue
        current = agents[-1]
        if _ISA_HEADER_RE.match(line):
            in_isa = True
            continue
        m = _FIELD_RE.match(line)
        if not m:
            continue
        key, value = m.groups()
        if key == "Name" and (in_isa or value.startswith("amdgcn-")):
            try:
                current.isas.append(arch.parse_isa(value)[0])
            except ValueError as exc:
                current.errors.append(f"agent {current.number}: {exc}")
        elif key == "Name" and current.name is None:
            current.name = value
        elif key == "Marketing Name" and current.marketing_name is None:
            current.marketing_name = value
        elif key == "Device Type" and current.device_type is None:
            current.device_type = value
        elif key == "Node" and current.node is None:
            current.node = int(value) if value.isdecimal() and value.isascii() else None
    return agents
