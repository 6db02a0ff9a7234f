"""The doctor's vocabulary: a check's status, its result (``Check``) and the facts beyond the
Environment some checks read (``Extras``).

``doctor.checks`` re-exports all of it; import from there.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from pytest_rocm.doctor.ollama import OllamaInstall
from pytest_rocm.doctor.ollama_log import OllamaLog
from pytest_rocm.env.index import IndexAnswer
from pytest_rocm.report.escape import terminal_line

#: ok: nothing wrong; warn: a run works but misleads or is fragile; fail: a run breaks;
#: skipped: the check does not apply here, or lacks the facts to judge
CheckStatus = Literal["ok", "warn", "fail", "skipped"]
STATUSES: tuple[CheckStatus, ...] = ("ok", "warn", "fail", "skipped")
#: the statuses that are a problem: shown by the pytest header and ``rocm-compat env``
PROBLEMS: tuple[CheckStatus, ...] = ("fail", "warn")
#: the status as the one-line form shows it (four characters, so the ids line up)
MARKS: dict[CheckStatus, str] = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL", "skipped": "skip"}


@dataclass
class Check:
    id: str
    status: CheckStatus
    #: what the check saw, one line
    evidence: str
    #: how to fix it, a command or a sentence (None when there is nothing to fix)
    fix: str | None = None

    def __post_init__(self) -> None:
        # evidence quotes what the project did not write (log lines, recorded names, paths): written
        # out once here, so every output (text, JSON, the pytest header, rocm-compat env) is one
        # line with no escape sequence or bidi override in it (escaping twice changes nothing)
        self.evidence = terminal_line(self.evidence)
        if self.fix is not None:
            self.fix = terminal_line(self.fix)

    @property
    def line(self) -> str:
        """The check in one line: ``[FAIL] torch-build: <evidence>``.

        The one form every output uses: ``rocm-compat doctor`` (followed by the fix), the pytest
        header (after ``rocm: ``) and the problems of ``rocm-compat env``.
        """
        return f"[{MARKS[self.status]}] {self.id}: {self.evidence}"

    @property
    def is_problem(self) -> bool:
        return self.status in PROBLEMS

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Extras:
    """Facts some checks need beyond the Environment, probed through the same seam
    (``doctor.probe.probe_extras``). The defaults mean "not probed": the checks that need them
    then judge from the Environment alone, or are skipped."""

    #: PCI addresses of AMD display/accelerator devices, seen even when no driver is loaded
    pci_amd_gpus: list[str] = field(default_factory=list)
    #: the MIOpen user database folder and whether this user can write there (None: not probed)
    miopen_path: str | None = None
    miopen_writable: bool | None = None
    #: the kernel command line (/proc/cmdline), for the multi-GPU check (None: not probed)
    kernel_cmdline: str | None = None
    #: PCI addresses of NVIDIA GPUs, and whether the NVIDIA driver's device files exist
    #: (None: not probed): the accelerator check and the install line tell an NVIDIA box from a CPU one
    pci_nvidia_gpus: list[str] = field(default_factory=list)
    nvidia_driver: bool | None = None
    #: what PyTorch's index said of the installed torch build (None: not asked, or no answer)
    torch_on_index: IndexAnswer | None = None
    #: why the index was not asked or gave no answer (``offline``, ``unreachable``); None when it answered
    index_note: str | None = None
    #: where the libraries live (``torch``: its folder; ``the Python environment``: sys.prefix); empty: not probed
    install_paths: dict[str, str] = field(default_factory=dict)
    #: the Ollama install and its bundled ROCm (None: none found, or not looked for: only
    #: ``rocm-compat doctor`` looks)
    ollama: OllamaInstall | None = None
    #: what Ollama's server log says about GPU discovery, and where it came from (a file, the journal)
    ollama_log: OllamaLog | None = None
    ollama_log_from: str | None = None
