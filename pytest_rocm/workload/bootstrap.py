"""``rocm-compat capture``'s side of the child process: what its ``sitecustomize`` runs.

Python imports ``sitecustomize`` at start-up from the first folder of ``PYTHONPATH`` that has
one; ``rocm-compat capture`` puts a folder with its own there, so the command it runs (``python
train.py``, ``python -m pkg``, a launcher script that starts Python) records from its first line
without being changed. Only the first Python process records: the variable that asks for it is
removed from its environment, so the processes it starts (data loader workers) do not overwrite
its file. The file is written at exit, whatever the exit status (the parent adds it); a process
killed by a signal writes nothing, and the parent says so.
"""

from __future__ import annotations

import atexit
import importlib
import os
import sys
from pathlib import Path

#: the variable naming the file to write; read once and removed
OUTPUT_VARIABLE = "PYTEST_ROCM_CAPTURE"
#: the folder of our sitecustomize, taken off sys.path before the user's own is imported
SITE_VARIABLE = "PYTEST_ROCM_CAPTURE_SITE"

SITECUSTOMIZE = """\
# written by rocm-compat capture: start recording, then hand over to any other sitecustomize
import sys
try:
    from pytest_rocm.workload import bootstrap
except ImportError:
    sys.path.append({root!r})
    from pytest_rocm.workload import bootstrap
bootstrap.start()
"""


def write_site(folder: Path) -> Path:
    """The sitecustomize folder for the child's ``PYTHONPATH`` (this package importable from it)."""
    root = str(Path(__file__).resolve().parents[2])
    (folder / "sitecustomize.py").write_text(SITECUSTOMIZE.format(root=root), encoding="utf-8")
    return folder


def _chain_site() -> None:
    """Import the sitecustomize ours shadowed (a virtual environment's, a distribution's)."""
    site = os.environ.pop(SITE_VARIABLE, None)
    if not site:
        return
    ours = sys.modules.pop("sitecustomize", None)
    saved = list(sys.path)
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.abspath(site)]
    try:
        importlib.import_module("sitecustomize")
    except ImportError:
        if ours is not None:
            sys.modules["sitecustomize"] = ours
    finally:
        sys.path[:] = saved


def start() -> None:
    """Begin recording for the rest of this process when the parent asked for it."""
    output = os.environ.pop(OUTPUT_VARIABLE, None)
    _chain_site()
    if not output:
        return
    from pytest_rocm.workload.capture import Capture

    cap = Capture(output)
    cap._start = __import__("time").perf_counter()
    cap.recorder.__enter__()

    def finish() -> None:
        if os.getpid() != cap.pid:  # a forked child exiting: the parent writes the capture
            return
        cap.recorder.__exit__(None, None, None)
        try:
            cap.finish(command=list(sys.orig_argv) if hasattr(sys, "orig_argv") else list(sys.argv))
        except OSError as exc:  # the parent checked the path first: something changed while it ran
            print(f"rocm-compat capture: cannot write {output}: {exc.strerror or exc}", file=sys.stderr)

    atexit.register(finish)
