"""The program ``vet --run`` runs in its sandboxed child: import one module, print a line of facts
about it (``python -c "from pytest_rocm._import_probe import main; main()" MODULE``).

The vetted package's code runs in this process, so what it prints is the child's *claim*
(``vet.live.child_claims`` reads it as such, never as the record's facts).

Why at the package root, not in ``vet/``: everything this process imports before the vetted module
is part of what is measured (``sys.modules`` decides the ``torch`` facts, the import's time and
memory). The root is lazy and this module is stdlib only; ``pytest_rocm.vet`` would import the
whole scanner first. Its folder is on the child's import path already (last: after the vetted
folder, so it never shadows the vetted code).
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Sequence
from typing import Any

#: what starts the line of facts (after a newline: the vetted code may leave a line unfinished)
MARK = "@@vet@@"
#: the child's command line for ``module``
START = "from pytest_rocm._import_probe import main; main()"


def facts(name: str) -> dict[str, Any]:
    """Import ``name`` (its code runs here) and describe what came of it."""
    module = importlib.import_module(name)
    public = sorted(n for n in dir(module) if not n.startswith("_") and callable(getattr(module, n, None)))
    found: dict[str, Any] = {
        "module": name,
        "version": str(getattr(module, "__version__", "") or "") or None,
        "file": getattr(module, "__file__", None),
        "public_callables": len(public),
        "examples": public[:10],
    }
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "version"):
        found["torch"] = torch.__version__
        found["hip"] = getattr(torch.version, "hip", None)
        found["cuda"] = getattr(torch.version, "cuda", None)
    return found


def main(argv: Sequence[str] | None = None) -> None:
    """Print the facts of the module named first in ``argv`` (an import error is raised as it is:
    the parent reads its last line)."""
    name = (sys.argv[1:] if argv is None else argv)[0]
    print("\n" + MARK + json.dumps(facts(name)))
