"""From findings to a class (1-4), the evidence that decided it, the strongest evidence against
it, a confidence, and what to do next.

1 pure PyTorch (or pure Python): runs unchanged on ROCm.
2 built on the PyTorch ecosystem (transformers, peft, accelerate, diffusers...): runs unchanged.
3 native GPU code with a ROCm path (HIP sources or binaries, a ROCm build, Triton kernels, a
  binding to ROCm libraries): works on some gfx targets; check yours.
4 CUDA-only native code: fails on ROCm until someone ports it.

Only evidence counts (a match in a comment, an optional extra or a vendored tree the package does
not build does not). For a built package, the binaries are the evidence of what was built: when
its binaries link CUDA or embed NVIDIA code and none links HIP or embeds AMD code, HIP text in
its headers (what *could* be built) is a note against the verdict, not a ROCm path. CUDA sources
that nothing builds and only an opt-in loads (peft's BOFT kernel) are a caveat; a kernel loaded on
the import path is the package's core.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pytest_rocm.vet.evidence import Evidence, confidence, contrary, pick, rules_of
from pytest_rocm.vet.result import ScanResult
from pytest_rocm.vet.rules import Finding
from pytest_rocm.vet.target import Target

TITLES = {
    1: "pure PyTorch / Python: runs unchanged on ROCm",
    2: "built on the PyTorch ecosystem: runs unchanged on ROCm",
    3: "native GPU code with a ROCm path: works on some gfx targets, check yours",
    4: "CUDA-only native code: fails on ROCm until someone ports it",
}
_MAX_EVIDENCE = 6


@dataclass
class Verdict:
    klass: int
    title: str
    reason: str
    evidence: list[Finding] = field(default_factory=list)  # the deciding findings, one per rule
    caveats: list[str] = field(default_factory=list)
    next_steps: list[str] = field(default_factory=list)
    #: the strongest evidence against the class, so a reviewer can overrule it in a minute
    contrary: list[Finding] = field(default_factory=list)
    contrary_notes: list[str] = field(default_factory=list)
    confidence: str = "medium"  # high | medium | low, and why
    confidence_why: str = ""
    #: why the class is only a floor ("3 member(s) not read (oversized-member)"); "" for a full read
    at_least: str = ""


def decide(target: Target, result: ScanResult) -> Verdict:
    ev = Evidence(result)
    name = target.name
    caveats: list[str] = []
    steps: list[str] = []
    live = f"run the live check here and on the AMD machine: rocm-compat vet {target.spec} --run"
    if ev.rocm_path:
        klass = 3
        reason = f"ROCm path: {rules_of(ev.rocm_path)}"
        if ev.cuda_native:
            reason += f"; CUDA code next to it: {rules_of(ev.cuda_native)}"
        evidence = pick(ev.rocm_path)[:3]  # the CUDA code next to it is evidence against (contrary)
        steps += [
            "check that its ROCm build covers your gfx target (rocm-compat env shows yours) and your ROCm version",
            live,
        ]
        if not any(f.spec.tier == "core" for f in ev.rocm_path):
            steps.append(
                "the ROCm path is in its sources (HIP code, ROCm branches, Triton kernels): it must be "
                "built or JIT-compiled for your gfx; a prebuilt binary may be CUDA-only"
            )
    elif ev.is_native_cuda:
        klass = 4
        decisive = ev.cuda_core or ev.cuda_source
        reason = f"CUDA-only: {rules_of(decisive)}; no HIP/ROCm path found"
        evidence = pick(decisive + ev.cuda_source)[:_MAX_EVIDENCE]
        steps += [
            f"look for a ROCm build of {name}: a ROCm wheel index, a '-rocm' package, or a "
            "ROCm fork (github.com/ROCm hosts many)",
            "try building it against a ROCm PyTorch: torch.utils.cpp_extension hipifies "
            "CUDAExtension sources; inline PTX, CUTLASS, TensorRT and NVML calls block that",
            "ask upstream for HIP support, quoting the findings below",
        ]
        blockers = [f for f in ev.cuda_source if f.rule in ("inline-ptx", "cuda-only-header", "cuda-library-call")]
        if blockers:
            caveats.append(f"hard to port: {rules_of(blockers)}")
        if ev.rocm_mention:
            caveats.append("its description mentions ROCm/AMD: read what it says, a ROCm build may exist")
    else:
        klass = 2 if ev.ecosystem else 1
        native = result.kinds.get("binary", 0) + result.kinds.get("native-source", 0)
        what = "Python and CPU-only native code" if native else "pure Python"  # a C extension is not pure Python
        if ev.ecosystem:
            libs = sorted({ev.library(f.text) for f in ev.ecosystem})[:5]
            reason = f"{what} on the PyTorch ecosystem ({', '.join(libs)})"
            evidence = pick(ev.ecosystem)[:3] + pick(ev.torch_use)[:1]
            steps.append(
                "its ecosystem dependencies decide the rest: run their library suites "
                "(rocm-compat run) and vet any native GPU library they pull in"
            )
        elif ev.torch_use:
            reason = f"{what} on PyTorch: no native GPU code, no CUDA-only dependency"
            evidence = pick(ev.torch_use)[:2]
        else:
            reason = f"no GPU code found: {what}" if native else "pure Python: no GPU code found"
            evidence = []
        steps.append(live)  # CUDA sources beside it are evidence against, in the note (evidence.contrary)
    if ev.cuda_caveat and klass >= 3:  # below, the note against the verdict says it
        caveats.append(f"CUDA assumptions in Python that misbehave on ROCm: {rules_of(ev.cuda_caveat)}")
    for f in pick(ev.gpu_deps):
        caveats.append(f"depends on a native GPU library ({f.text}): vet it too")
    if target.name.lower() in ("torch", "pytorch"):
        local = (target.version or "").partition("+")[2] or "none"
        caveats.append(
            f"this is PyTorch itself (build '{local}'): on AMD install the ROCm build from "
            "https://download.pytorch.org/whl/rocmX.Y; a +cpu or +cuXYZ build has no ROCm support"
        )
    caveats += _not_counted(result)
    if ev.skipped:
        # counts, not the kept findings: the scan keeps only KEEP_PER_RULE examples per rule
        total = sum(result.counts[rule] for rule in {f.rule for f in ev.skipped}) or len(ev.skipped)
        caveats.append(f"{total} member(s) not read for safety or size ({rules_of(ev.skipped)})")
    against, notes = contrary(klass, ev, result)
    evidence = [f for f in evidence if f not in against]  # one finding is never both for and against
    level, why = confidence(klass, ev, evidence, against)
    title, at_least = TITLES[klass], ""
    if klass == 1 and result.kinds.get("binary", 0) + result.kinds.get("native-source", 0):
        title = "no GPU code (Python and CPU-only native code): runs unchanged on ROCm"
    if ev.incomplete:  # what was not read may hold what decides: the class is a floor, and says so
        unread = sum(result.counts[rule] for rule in {f.rule for f in ev.incomplete}) or len(ev.incomplete)
        at_least = f"{unread} member(s) of its code not read: {rules_of(ev.incomplete)}"
        title = f"{title.split(':')[0]} in the files read; not all were read, one may raise the class"
        reason = f"in the files read: {reason}; {at_least}, and one of them may raise the class"
    verdict = Verdict(klass, title, reason, evidence, caveats, steps, against, notes, level, why)
    verdict.at_least = at_least
    return verdict


def _not_counted(result: ScanResult) -> list[str]:
    """What the verdict left out on purpose, said so a reviewer can overrule it: CUDA code on an
    optional path (a sub-package the import does not load, a binary only a fallback loads, a
    helper only an opt-in API calls), and GPU code in the package's tests and examples."""
    lines = []
    if result.purpose:
        lines.append(f"its CUDA code would be an optional path in another package, but here {result.purpose}: counted")
    if result.optional_parts:
        parts = result.optional_parts.most_common()
        shown = "; ".join(f"{part} ({n} finding(s))" for part, n in parts[:3])
        more = f"; and {len(parts) - 3} more" if len(parts) > 3 else ""
        lines.append(f"CUDA code on an optional path, a caveat and not the verdict: {shown}{more}")
    for place, n in sorted(result.elsewhere.items()):
        lines.append(
            f"{n} CUDA/ROCm finding(s) in its {place}, not counted: they show how it is tested or "
            f"used, not what it is (first: {result.elsewhere_first[place]})"
        )
    return lines
