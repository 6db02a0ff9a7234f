"""Where a table cell and ``rocm-compat diff`` point at a failure's reproducer: the command that
writes it (``rocm-compat repro REPORT NODEID -o repro/``), for a row whose failed parity record
carries a spec a script can be made from (``parity.callspec``). Pure and stdlib only."""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping
from typing import Any

#: where the command writes the scripts (a folder beside the report)
REPRO_DIR = "repro/"


def reproducible(records: Iterable[Any]) -> bool:
    """Whether a failed record of these carries a spec with an op or a corpus sample (one a script
    can rebuild)."""
    for record in records:
        if isinstance(record, Mapping) and record.get("ok") is False:
            spec = record.get("repro")
            if isinstance(spec, Mapping) and (
                isinstance(spec.get("op"), str) or isinstance(spec.get("corpus"), Mapping)
            ):
                return True
    return False


def reproducible_failures(changes: Iterable[Any], candidate: Mapping[str, Any]) -> list[str]:
    """The node ids among ``changes`` (a diff's regressions and new failures) whose failed check
    in ``candidate`` a script can rebuild, in their order."""
    by_id = {r.get("nodeid"): r for r in candidate.get("results") or [] if isinstance(r, Mapping)}
    found = [c.nodeid for c in changes if c.nodeid in by_id and reproducible(by_id[c.nodeid].get("parity") or [])]
    return list(dict.fromkeys(found))


def reproducer_lines(nodeids: list[str], report: str) -> list[str]:
    """``rocm-compat diff``'s section: each reproducible regression's node id and its command."""
    lines = [f"reproducers (rocm-compat repro): {len(nodeids)}"]
    for nodeid in nodeids:
        lines += [f"  {nodeid}", f"    {repro_command(report, nodeid)}"]
    return lines


def repro_command(report: str, nodeid: str) -> str:
    """``rocm-compat repro REPORT 'NODEID' -o repro/``, each argument quoted for a POSIX shell."""
    return f"rocm-compat repro {shlex.quote(report)} {shlex.quote(nodeid)} -o {REPRO_DIR}"
