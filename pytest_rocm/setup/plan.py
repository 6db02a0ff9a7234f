"""The pip commands of ``rocm-compat setup``, as data: the torch step and the extras step. Pure:
the installed requirements come in as strings (``Requires-Dist`` lines from the seam)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from packaging.markers import Marker
from packaging.requirements import InvalidRequirement, Requirement

from pytest_rocm.doctor.facts import Build, knowledge

DISTRIBUTION = "pytest-rocm"
#: what each target installs: the extras of pytest-rocm (``all``: every extra it has)
TARGETS: dict[str, tuple[str, ...]] = {
    "suites": ("suites",),
    "test": ("test",),
    "all": ("suites", "test", "vet", "lint"),
}
#: what a torch replacement removes first (the doctor's reinstall line): the old build's companions
#: would otherwise keep pulling it back
REPLACED = ("torch", "torchvision", "torchaudio")


def pip(python: str, *args: str) -> list[str]:
    """``python -m pip ARGS``: pip of the running interpreter's environment, never another one."""
    return [python, "-m", "pip", *args]


def torch_install(python: str, index_url: str | None, version: str | None = None) -> list[str]:
    """``pip install torch --index-url URL`` (an index that serves the build), or ``torch==V``
    from the configured index (the fallback)."""
    spec = f"torch=={version}" if version else "torch"
    return pip(python, "install", spec, *(["--index-url", index_url] if index_url else []))


def torch_uninstall(python: str) -> list[str]:
    return pip(python, "uninstall", "-y", *REPLACED)


def extra_requirements(requires: Iterable[str], extras: Sequence[str]) -> list[str]:
    """The requirements of pytest-rocm's ``extras``, markers applied, self-references
    (``pytest-rocm[suites,vet]``) expanded: what ``pip install -e ".[EXTRA]"`` would add."""
    parsed = []
    for line in requires:
        try:
            parsed.append(Requirement(line))
        except InvalidRequirement:
            continue
    found: list[str] = []
    wanted, seen = list(extras), set()
    while wanted:
        extra = wanted.pop(0)
        if extra in seen:
            continue
        seen.add(extra)
        for req in parsed:
            if req.marker is None or not _applies(req.marker, extra):
                continue
            if req.name == DISTRIBUTION:
                wanted.extend(sorted(req.extras))
                continue
            text = f"{req.name}{'[' + ','.join(sorted(req.extras)) + ']' if req.extras else ''}{req.specifier}"
            if text not in found:
                found.append(text)
    return found


def _applies(marker: Marker, extra: str) -> bool:
    """Whether a requirement's marker holds for ``extra`` (and not for the bare install)."""
    return marker.evaluate({"extra": extra}) and not marker.evaluate({"extra": ""})


def companions(build: Build) -> list[str]:
    """What goes next to a torch of this build (doctor.json ``torch_install.companions``)."""
    return list(knowledge()["torch_install"]["companions"][build])


def extras_install(python: str, requirements: Sequence[str], torch_version: str) -> list[str]:
    """The extras in one pip call, torch pinned to the installed one: a library that wants another
    torch makes pip fail loudly instead of swapping the build (PyPI's torch is a CUDA build)."""
    return pip(python, "install", *requirements, f"torch=={torch_version}")
