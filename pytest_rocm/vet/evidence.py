"""The findings sorted into what the verdict weighs (:class:`Evidence`), and what speaks against
a class once it is chosen (:func:`contrary`) with a confidence (:func:`confidence`).

Binaries outrank text: when a target ships binaries built for CUDA (NEEDED libcudart, an NVIDIA
fatbin) and none built for ROCm, HIP/ROCm *text* (headers with ``__HIPCC__`` branches, a ROCm
branch in a build script it ships) is no ROCm path; it becomes contrary evidence.
"""

from __future__ import annotations

import re

from pytest_rocm.vet.kinds import BUILD, kind_of
from pytest_rocm.vet.result import ScanResult
from pytest_rocm.vet.rules import ECOSYSTEM, PARTIAL, TEXT, Finding, Side, Tier

_SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}
_TIER_ORDER = {"core": 0, "source": 1, "aware": 2, "caveat": 3, "mention": 4, "usage": 5}
#: ROCm findings that are not header, source or build-script text: they stand even next to CUDA
#: binaries. A ROCm library's name in Python (``"librccl.so.1"``, a ctypes load) is not one of
#: them: next to binaries that all link CUDA it is a hint, not what was built
_RUNTIME_ROCM = ("rocm-version-or-requirement", "rocm-requirement-in-build")


def pick(findings: list[Finding]) -> list[Finding]:
    """One finding per rule, the most severe and core first."""
    seen: dict[str, Finding] = {}
    for f in findings:
        seen.setdefault(f.rule, f)
    return sorted(
        seen.values(),
        key=lambda f: (_TIER_ORDER.get(f.spec.tier, 9), _SEVERITY_ORDER.get(f.severity, 9), f.rule),
    )


def rules_of(findings: list[Finding]) -> str:
    return ", ".join(sorted({f.rule for f in findings}))


class Evidence:
    """The counted findings by side and tier, and the decisions the verdict is made of."""

    def __init__(self, result: ScanResult) -> None:
        self.result = result
        self.all = [f for f in result.findings if f.counts]
        self.cuda_core = self.select("cuda", "core")
        self.cuda_caveat = self.select("cuda", "caveat")
        jit_opt_in = any(f.rule == "cuda-jit-load" for f in self.all)
        builds_native = any(f.rule == "build-native-extension" for f in self.all)
        self.cuda_source = self.select("cuda", "source")
        has_python = result.kinds.get("python", 0) > 0
        # CUDA sources count as native code when nothing else explains them: no Python around
        # them, or a native build that compiles them (pycuda's C++), unless an opt-in JIT does
        self.is_native_cuda = bool(
            self.cuda_core or (self.cuda_source and (not has_python or (builds_native and not jit_opt_in)))
        )
        self.cuda_native = self.cuda_core + self.cuda_source
        self.triton = [f for f in self.select("rocm", "source") if f.rule == "triton-kernel"]
        rocm_native = [f for f in self.select("rocm", "core", "source") if f.rule != "triton-kernel"]
        rocm_native += [f for f in self.select("rocm", "aware") if kind_of(f.path.rsplit("!", 1)[-1]) == BUILD]
        #: CUDA-built binaries and no ROCm-built one: the ROCm text is not what was built
        self.binaries_cuda_only = (
            bool(result.cuda_binaries | result.optional_cuda_binaries) and not result.rocm_binaries
        )
        self.demoted: list[Finding] = []
        if self.binaries_cuda_only:
            built_cuda = result.cuda_binaries | result.optional_cuda_binaries
            self.demoted = [
                f
                for f in rocm_native
                if (f.spec.subject == TEXT and f.rule not in _RUNTIME_ROCM)
                or (f.rule == "rocm-variant-binary" and f.path in built_cuda)  # its name says ROCm, its ELF CUDA
            ]
            rocm_native = [f for f in rocm_native if f not in self.demoted]
        self.rocm_path = rocm_native if self.is_native_cuda else rocm_native + self.triton
        self.rocm_mention = self.select("rocm", "mention")
        self.rocm_aware = self.select("rocm", "aware")
        self.ecosystem = self.select("ecosystem", "usage")
        self.torch_use = self.select("torch", "usage")
        self.gpu_deps = self.select("dependency", "usage")
        self.skipped = [f for f in result.findings if f.spec.side == "safety" and f.severity != "info"]
        #: members of its runtime code or build not read (a size bound, unreadable): the class is a floor
        self.incomplete = [f for f in result.findings if f.rule in PARTIAL and f.place in ("runtime", "build")]

    def select(self, side: Side, *tiers: Tier) -> list[Finding]:
        return [f for f in self.all if f.spec.side == side and f.spec.tier in tiers]

    @staticmethod
    def library(text: str) -> str:
        """Which ecosystem library a finding's line names."""
        words = re.findall(r"[a-z][a-z0-9-]*", text.lower().replace("_", "-"))
        return next((w for w in words if w in ECOSYSTEM), text)


def _first(f: Finding) -> str:
    where = f"{f.path}:{f.line}" if f.line else f.path
    return f"{f.rule} at {where}"


def contrary(klass: int, ev: Evidence, result: ScanResult) -> tuple[list[Finding], list[str]]:
    """The strongest findings against ``klass`` and one line each on what they say."""
    notes: list[str] = []
    binaries = result.kinds.get("binary", 0)
    if klass == 3:
        against = pick(ev.cuda_native)
        if result.cuda_binaries and result.rocm_binaries:
            notes.append(
                f"{len(result.cuda_binaries)} of {binaries} binaries are built for CUDA "
                f"({len(result.rocm_binaries)} for ROCm): check that the one you load is the ROCm one"
            )
        elif result.cuda_binaries:  # no ROCm binary to load: the ROCm path is what the notes name
            notes.append(
                f"{len(result.cuda_binaries)} of {binaries} binaries are built for CUDA and none for ROCm: "
                f"the ROCm path is {rules_of(ev.rocm_path)}, not a binary it ships"
            )
        elif against:
            notes.append(f"CUDA code next to the ROCm path: {rules_of(against)} (first: {_first(against[0])})")
        if not any(f.spec.tier == "core" for f in ev.rocm_path):
            notes.append("no ROCm binary or ROCm build step found: the ROCm path is source text only")
    elif klass == 4:
        against = pick(ev.demoted + ev.triton + ev.rocm_aware + ev.rocm_mention)
        if ev.demoted:
            notes.append(
                f"ships HIP/ROCm text ({rules_of(ev.demoted)}, first: {_first(ev.demoted[0])}) but none of its "
                f"{binaries} binaries links HIP or embeds AMD code: the text says what could be built, "
                "the binaries what was"
            )
        vendored = [f for f in result.findings if f.context == "vendored" and f.spec.side == "rocm"]
        if vendored:
            trees = ", ".join(sorted(result.vendored_unbuilt)[:3])
            notes.append(
                f"HIP/ROCm text in vendored code the package does not build ({trees}): "
                f"{rules_of(vendored)}; if the package does build it, it may be class 3"
            )
            against += pick(vendored)
        if ev.triton:
            notes.append(
                f"its {len({f.path for f in ev.triton})} file(s) of Triton kernels can run on AMD "
                "through Triton's AMD backend; the compiled CUDA code cannot"
            )
    else:
        against = pick(ev.cuda_source + ev.cuda_caveat)
        if ev.cuda_source:
            notes.append(
                f"ships CUDA sources that no build step compiles ({rules_of(ev.cuda_source)}): "
                "an optional kernel JIT-compiled at run time; a ROCm PyTorch hipifies it "
                "when loaded, or the package falls back"
            )
        if ev.cuda_caveat:
            notes.append(f"CUDA assumptions in Python that misbehave on ROCm: {rules_of(ev.cuda_caveat)}")
        if result.mentions:
            n = sum(result.mentions.values())
            notes.append(
                f"{n} CUDA/ROCm match(es) in comments, optional extras, vendored code, optional paths, "
                "tests or examples were not counted"
            )
    return against[:_MAX_AGAINST], notes


_MAX_AGAINST = 4


def confidence(klass: int, ev: Evidence, deciding: list[Finding], against: list[Finding]) -> tuple[str, str]:
    """high / medium / low, and the reason, for a reviewer to weigh the verdict."""
    if ev.incomplete:
        return (
            "low",
            f"the scan did not read everything ({rules_of(ev.incomplete)}): unread members may change the class",
        )
    core_for = any(f.spec.tier == "core" for f in deciding)
    core_against = any(f.spec.tier == "core" for f in against)
    if klass in (1, 2):
        code = sum(ev.result.kinds.get(k, 0) for k in ("python", "binary", "native-source", "cuda-source"))
        if not code:  # a metapackage: what it installs is its requirements, each vetted on its own
            return "medium", "no code of its own: its requirements decide what it installs; vet each of them"
        if ev.cuda_source or ev.cuda_caveat:
            return "medium", "no native GPU code counted, but CUDA sources or CUDA assumptions are present"
        return "high", "no GPU code of either vendor found"
    named = [f for f in deciding if f.spec.tier == "core"]
    if klass == 3 and named and all(f.rule == "rocm-variant-binary" for f in named):
        # a name is a claim: a ROCm library the ELF links or AMD code it embeds would be a fact
        return "medium", (
            f"rests on a file name only ({named[0].text}): its ELF links no ROCm library and embeds no AMD code"
        )
    if core_for and not core_against:
        return "high", "decided by what is built or linked (binaries, build steps, requirements)"
    if core_for:
        return "medium", "built or linked evidence on both sides: read the notes"
    return "low" if core_against else "medium", "decided by source text only, no binary or build step"
