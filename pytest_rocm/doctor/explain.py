"""``rocm-compat doctor --explain``: which known error a pasted line (or a whole log) is, its cause
and the fix that applies to this gfx and ROCm.

The knowledge is data (``data/known_errors.json``, one entry per error, each with the real lines
it was recorded from and their URLs). An entry's ``match`` is a *template*, never a regular
expression from the file: its words are matched literally (case and runs of blanks ignored) and
only these placeholders stand for what varies between pastes of the same error:

- ``{gfx}``: a gfx name (``gfx1103``, features allowed: ``gfx90a:sramecc+:xnack-``), which then
  decides the entry's fixes that name a gfx;
- ``{path}``: a path, Windows ones with spaces included; ``{num}``: a number (``6.8.0``);
  ``{any}``: anything on the line.

A line is compared after what real pastes add is taken away: terminal colour codes, typographic
quotes for straight ones, non-breaking spaces; the template may match anywhere in it, so a
timestamp, a journal prefix or a Python traceback's indentation before it changes nothing.
Stdlib and ``packaging`` only; pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from pytest_rocm.env import arch

#: the placeholders of a template and what each stands for (each one a named group: ``gfx0`` is the
#: first gfx, the one that decides the fixes)
PLACEHOLDERS = {
    "gfx": r"gfx[0-9a-f]{3,4}(?::[a-z0-9+:-]*)?",
    "path": r".*?",
    "num": r"[0-9]+(?:[.,_-][0-9a-z]+)*",
    "any": r".*?",
}
#: a line longer than this is matched on its first part only (a log's JSON blob is not an error line)
MAX_LINE = 4096
_PLACEHOLDER = re.compile(r"\{([a-z]+)\}")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
_QUOTES = str.maketrans({"“": '"', "”": '"', "„": '"', "‘": "'", "’": "'", "\u00a0": " ", "\u202f": " "})
_ROCM = re.compile(r"(?i)\brocm[\s_-]?(?:version\s*:?\s*)?v?([0-9]+\.[0-9]+(?:\.[0-9]+)?)")


class KnowledgeError(ValueError):
    """A known_errors.json entry that cannot be used (names the entry and what is wrong)."""


def compile_template(template: str, where: str = "match") -> re.Pattern[str]:
    """The pattern of a template (see the module docstring); KnowledgeError on an unknown placeholder."""
    parts: list[str] = []
    seen: dict[str, int] = {}
    for i, piece in enumerate(_PLACEHOLDER.split(template)):
        if i % 2:
            if piece not in PLACEHOLDERS:
                raise KnowledgeError(f"{where}: unknown placeholder {{{piece}}} (known: {', '.join(PLACEHOLDERS)})")
            n = seen[piece] = seen.get(piece, -1) + 1
            parts.append(f"(?P<{piece}{n}>{PLACEHOLDERS[piece]})")
        elif piece:
            words = piece.split()
            lead = r"\s*" if piece[:1].isspace() else ""
            tail = r"\s*" if piece[-1:].isspace() else ""
            parts.append(lead + r"\s+".join(re.escape(w) for w in words) + tail)
    if not any(_PLACEHOLDER.sub("", template).split()):
        raise KnowledgeError(f"{where}: a template needs words of its own, not only placeholders")
    return re.compile("".join(parts), re.IGNORECASE)


def normalise(line: str) -> str:
    """A pasted line as the templates see it: no colour codes, straight quotes, plain spaces."""
    return _ANSI.sub("", line[:MAX_LINE]).translate(_QUOTES)


@dataclass(frozen=True)
class Fix:
    text: str
    #: gfx patterns (names, globs, families: env.arch.matches) it applies to; empty: any gfx
    gfx: tuple[str, ...] = ()
    not_gfx: tuple[str, ...] = ()
    #: the ROCm releases it applies to (a PEP 440 specifier, ``>=7.2``); None: any
    rocm: SpecifierSet | None = None
    source: str | None = None

    @property
    def conditional(self) -> bool:
        return bool(self.gfx or self.not_gfx or self.rocm)

    def condition(self) -> str:
        """``on rdna2 but not gfx1030, ROCm >=7.2`` ("" when unconditional)."""
        said = []
        if self.gfx:
            said.append(f"on {', '.join(self.gfx)}" + (f" but not {', '.join(self.not_gfx)}" if self.not_gfx else ""))
        elif self.not_gfx:
            said.append(f"not on {', '.join(self.not_gfx)}")
        if self.rocm:
            said.append(f"ROCm {self.rocm}")
        return ", ".join(said)

    def applies(self, gfx: str | None, rocm: str | None) -> bool | None:
        """True/False when the facts decide, None when a fact it needs is unknown."""
        verdict: bool | None = True
        if self.gfx or self.not_gfx:
            if gfx is None:
                verdict = None
            elif (self.gfx and not any(arch.matches(p, gfx) for p in self.gfx)) or any(
                arch.matches(p, gfx) for p in self.not_gfx
            ):
                return False
        if self.rocm:
            if rocm is None:
                return None
            try:
                if Version(rocm) not in self.rocm:
                    return False
            except InvalidVersion:
                return None
        return verdict

    def worded(self, gfx: str | None) -> str:
        """The fix with ``{gfx}`` and ``{override}`` (the usual HSA_OVERRIDE_GFX_VERSION for it,
        data/gfx.json) filled in; without a gfx, words that say which."""
        if gfx is None:
            return self.text.replace("{gfx}", "the GPU's gfx").replace(
                "{override}", "X.Y.Z (the value usual for that gfx)"
            )
        override = arch.override_for(gfx)
        return self.text.replace("{gfx}", gfx).replace("{override}", override or "X.Y.Z (none is known for it)")


@dataclass(frozen=True)
class KnownError:
    id: str
    category: str
    message: str
    #: the compiled templates, tried in order (a specific one that captures the gfx first)
    patterns: tuple[re.Pattern[str], ...]
    cause: str
    fixes: tuple[Fix, ...]
    check: str | None
    samples: tuple[tuple[str, str], ...]

    #: per template, its longest word in lower case: a line without it cannot match (a cheap test
    #: first, so a log of 100,000 lines is read in a second or two, not half a minute)
    needles: tuple[str, ...] = ()

    def match(self, line: str) -> re.Match[str] | None:
        seen = normalise(line)
        return self.match_normalised(seen, seen.lower())

    def match_normalised(self, seen: str, lowered: str) -> re.Match[str] | None:
        for pattern, needle in zip(self.patterns, self.needles or ("",) * len(self.patterns), strict=True):
            if needle in lowered and (m := pattern.search(seen)):
                return m
        return None


def _fix(entry_id: str, raw: Any) -> Fix:
    if not isinstance(raw, dict) or not isinstance(raw.get("fix"), str):
        raise KnowledgeError(f"{entry_id}: a fix must be an object with a 'fix' text")
    when = raw.get("when") or {}
    gfx = tuple(arch.validate_pattern(p) for p in when.get("gfx", []))
    not_gfx = tuple(arch.validate_pattern(p) for p in when.get("not_gfx", []))
    try:
        rocm = SpecifierSet(when["rocm"]) if when.get("rocm") else None
    except InvalidSpecifier:
        raise KnowledgeError(f"{entry_id}: bad ROCm condition {when['rocm']!r} (a PEP 440 specifier: >=7.2)") from None
    return Fix(raw["fix"], gfx, not_gfx, rocm, raw.get("source"))


def _fixes_from(table: str | None) -> tuple[Fix, ...]:
    """The fixes a doctor.json table implies (``rocblas_dropped``: the gfx and ROCm releases whose
    rocBLAS ships no kernels): one fact, read by the doctor's check and by --explain alike."""
    if table is None:
        return ()
    if table != "rocblas_dropped":
        raise KnowledgeError(f"fixes_from {table!r}: only 'rocblas_dropped' is known")
    from pytest_rocm.doctor.facts import knowledge
    from pytest_rocm.env.wheels import rocm_install_line

    return tuple(
        Fix(
            f"the rocBLAS of ROCm {e['from']} and later ships no {gfx} kernels: use a torch built on ROCm "
            f"{e['last_good']} ({rocm_install_line(e['last_good'])})",
            gfx=(gfx,),
            rocm=SpecifierSet(f">={e['from']}"),
            source=str(e["sources"][0]),
        )
        for gfx, e in knowledge()["rocblas_dropped"]["list"].items()
    )


def load(entries: list[dict[str, Any]]) -> list[KnownError]:
    """The known errors of known_errors.json's list; KnowledgeError names the first bad entry."""
    known = []
    for e in entries:
        where = str(e.get("id", "?"))
        try:
            # a fix for this gfx or ROCm before the ones for any: the most specific advice first
            fixes = tuple(
                sorted(
                    _fixes_from(e.get("fixes_from")) + tuple(_fix(where, f) for f in e["fixes"]),
                    key=lambda f: not f.conditional,
                )
            )
            samples = tuple((str(s["line"]), str(s["source"])) for s in e["samples"])
            templates = [str(t) for t in (e["match"] if isinstance(e["match"], list) else [e["match"]])]
            patterns = tuple(compile_template(t, f"{where}: match") for t in templates)
            needles = tuple(max(_PLACEHOLDER.sub(" ", t).lower().split(), key=len) for t in templates)
            known.append(
                KnownError(
                    where, e["category"], e["message"], patterns, e["cause"], fixes, e.get("check"), samples, needles
                )
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise KnowledgeError(f"known_errors.json: entry {where}: {exc}") from None
    return known


@lru_cache(maxsize=1)
def bundled() -> tuple[KnownError, ...]:
    from pytest_rocm._resources import load_json

    return tuple(load(list(load_json("known_errors.json")["errors"])))


@dataclass
class Finding:
    """One known error found in the text: where first, how often, and what decides its fixes."""

    error: KnownError
    line_no: int
    line: str
    gfx: str | None
    count: int = 1
    fixes: list[tuple[Fix, bool | None]] = field(default_factory=list)


def _cores(known: tuple[KnownError, ...]) -> tuple[str, ...]:
    """The plain core of every needle (its longest run of letters, digits and underscores, so
    typographic quotes or colour codes around it do not hide it), in lower case."""
    cores = {max(re.findall(r"\w+", needle) or [""], key=len) for e in known for needle in e.needles}
    return tuple(sorted(c for c in cores if c))


def rocm_in(text: str) -> str | None:
    """The ROCm release a text names (``/opt/rocm-5.7.0``, ``+rocm6.2.4``, ``ROCm version : 7.2.4``)
    when it names exactly one; None when none or several."""
    found = {m.group(1) for m in _ROCM.finditer(text[: 1 << 20])}
    return found.pop() if len(found) == 1 else None


def explain(
    text: str, gfx: str | None = None, rocm: str | None = None, known: tuple[KnownError, ...] | None = None
) -> list[Finding]:
    """Every known error in ``text``, in the order first seen; one finding per error and gfx (a
    log that repeats a line a thousand times gives one finding with its count)."""
    known = bundled() if known is None else known
    rocm = rocm or rocm_in(text)
    found: dict[tuple[str, str | None], Finding] = {}
    cores = _cores(known)
    for no, line in enumerate(text.splitlines(), 1):
        low = line[:MAX_LINE].lower()
        if not any(core in low for core in cores):
            continue  # none of the words a known error needs: most lines of a log
        seen = normalise(line)
        lowered = seen.lower()
        for error in known:
            m = error.match_normalised(seen, lowered)
            if m is None:
                continue
            named = m.groupdict().get("gfx0")
            seen_gfx = arch.split_arch(named.lower())[0] if named else gfx
            key = (error.id, seen_gfx)
            if key in found:
                found[key].count += 1
                continue
            decided = [(f, f.applies(seen_gfx, rocm)) for f in error.fixes]
            fixes: list[tuple[Fix, bool | None]] = [(f, v) for f, v in decided if v is not False]
            found[key] = Finding(error, no, line.strip(), seen_gfx, fixes=fixes)
    return list(found.values())
