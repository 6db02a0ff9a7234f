"""From findings to a class (1-4), the evidence that decided it, and what to do next.

1 pure PyTorch (or pure Python): runs unchanged on ROCm.
2 built on the PyTorch ecosystem (transformers, peft, accelerate, diffusers...): runs unchanged.
3 native GPU code with a ROCm path (HIP sources or binaries, a ROCm build, Triton kernels):
  works on some gfx targets; check yours.
4 CUDA-only native code: fails on ROCm until someone ports it.

Only evidence counts (a match in a comment or an optional extra does not). CUDA sources that no
build step compiles (a ``.cu`` file JIT-loaded by an otherwise pure-Python package, like peft's
optional BOFT kernel) are a caveat, not class 4: the package imports and runs without them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pytest_rocm.vet.rules import BUILD, ECOSYSTEM, Finding, Side, Tier, kind_of
from pytest_rocm.vet.scan import ScanResult
from pytest_rocm.vet.target import Target

TITLES = {
    1: "pure PyTorch / Python: runs unchanged on ROCm",
    2: "built on the PyTorch ecosystem: runs unchanged on ROCm",
    3: "native GPU code with a ROCm path: works on some gfx targets, check yours",
    4: "CUDA-only native code: fails on ROCm until someone ports it",
}
_SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}
_MAX_EVIDENCE = 6


@dataclass
class Verdict:
    klass: int
    title: str
    reason: str
    evidence: list[Finding] = field(default_factory=list)
    caveats: list[str] = field(default_factory=list)
    next_steps: list[str] = field(default_factory=list)


def _pick(findings: list[Finding]) -> list[Finding]:
    """One finding per rule, the most severe and core first."""
    seen: dict[str, Finding] = {}
    for f in findings:
        seen.setdefault(f.rule, f)
    tier_order = {"core": 0, "source": 1, "aware": 2, "caveat": 3, "mention": 4, "usage": 5}
    return sorted(
        seen.values(), key=lambda f: (tier_order.get(f.spec.tier, 9), _SEVERITY_ORDER.get(f.severity, 9), f.rule)
    )


def _library(text: str) -> str:
    """Which ecosystem library a finding's line names."""
    words = re.findall(r"[a-z][a-z0-9-]*", text.lower().replace("_", "-"))
    return next((w for w in words if w in ECOSYSTEM), text)


def _rules(findings: list[Finding]) -> str:
    return ", ".join(sorted({f.rule for f in findings}))


def decide(target: Target, result: ScanResult) -> Verdict:
    ev = [f for f in result.findings if f.counts]

    def select(side: Side, *tiers: Tier) -> list[Finding]:
        return [f for f in ev if f.spec.side == side and f.spec.tier in tiers]

    cuda_core = select("cuda", "core")
    cuda_source = select("cuda", "source")
    cuda_caveat = select("cuda", "caveat")
    has_python = result.kinds.get("python", 0) > 0
    triton = [f for f in select("rocm", "source") if f.rule == "triton-kernel"]
    # a ROCm path for native code: HIP sources/binaries, a ROCm build, or a ROCm branch in the
    # build script; Triton kernels are GPU code of their own, not a port of compiled CUDA code
    rocm_native = [f for f in select("rocm", "core", "source") if f.rule != "triton-kernel"]
    rocm_native += [f for f in select("rocm", "aware") if kind_of(f.path.rsplit("!", 1)[-1]) == BUILD]
    native_cuda = bool(cuda_core or (cuda_source and not has_python))
    rocm_path = rocm_native if native_cuda else rocm_native + triton
    rocm_mention = select("rocm", "mention")
    ecosystem = select("ecosystem", "usage")
    torch_use = select("torch", "usage")
    gpu_deps = select("dependency", "usage")
    name = target.name

    caveats: list[str] = []
    steps: list[str] = []
    live = f"run the live check here and on the AMD machine: rocm-compat vet {target.spec} --run"
    if rocm_path:
        klass = 3
        reason = f"ROCm path: {_rules(rocm_path)}"
        if cuda_core or cuda_source:
            reason += f"; CUDA code next to it: {_rules(cuda_core + cuda_source)}"
        evidence = _pick(rocm_path)[:3] + _pick(cuda_core + cuda_source)[:3]
        steps += [
            "check that its ROCm build covers your gfx target (rocm-compat env shows yours) and your ROCm version",
            live,
        ]
        if not any(f.spec.tier == "core" for f in rocm_path):
            steps.append(
                "the ROCm path is in its sources (HIP code, ROCm branches, Triton kernels): it must be "
                "built or JIT-compiled for your gfx; a prebuilt binary may be CUDA-only"
            )
    elif native_cuda:
        klass = 4
        decisive = cuda_core or cuda_source
        reason = f"CUDA-only: {_rules(decisive)}; no HIP/ROCm path found"
        evidence = _pick(decisive + cuda_source)[:_MAX_EVIDENCE]
        steps += [
            f"look for a ROCm build of {name}: a ROCm wheel index, a '-rocm' package, or a "
            "ROCm fork (github.com/ROCm hosts many)",
            "try building it against a ROCm PyTorch: torch.utils.cpp_extension hipifies "
            "CUDAExtension sources; inline PTX, CUTLASS, TensorRT and NVML calls block that",
            "ask upstream for HIP support, quoting the findings below",
        ]
        blockers = [f for f in cuda_source if f.rule in ("inline-ptx", "cuda-only-header", "cuda-library-call")]
        if blockers:
            caveats.append(f"hard to port: {_rules(blockers)}")
        if triton:
            caveats.append(
                f"its {len({f.path for f in triton})} file(s) of Triton kernels can run on AMD "
                "through Triton's AMD backend; the compiled CUDA code cannot"
            )
        if rocm_mention:
            caveats.append("its description mentions ROCm/AMD: read what it says, a ROCm build may exist")
    else:
        klass = 2 if ecosystem else 1
        if ecosystem:
            libs = sorted({_library(f.text) for f in ecosystem})[:5]
            reason = f"pure Python on the PyTorch ecosystem ({', '.join(libs)})"
            evidence = _pick(ecosystem)[:3] + _pick(torch_use)[:1]
            steps.append(
                "its ecosystem dependencies decide the rest: run their library suites "
                "(rocm-compat run) and vet any native GPU library they pull in"
            )
        elif torch_use:
            reason = "pure Python on PyTorch: no native GPU code, no CUDA-only dependency"
            evidence = _pick(torch_use)[:2]
        else:
            native = result.kinds.get("binary", 0) + result.kinds.get("native-source", 0)
            reason = (
                "no GPU code found: Python and CPU-only native code" if native else "pure Python: no GPU code found"
            )
            evidence = []
        steps.append(live)
        if cuda_source:
            caveats.append(
                f"ships CUDA sources that no build step compiles ({_rules(cuda_source)}): "
                "an optional kernel JIT-compiled at run time; a ROCm PyTorch hipifies it "
                "when loaded, or the package falls back"
            )
            evidence += _pick(cuda_source)[:2]
    if cuda_caveat:
        caveats.append(f"CUDA assumptions in Python that misbehave on ROCm: {_rules(cuda_caveat)}")
    for f in _pick(gpu_deps):
        caveats.append(f"depends on a native GPU library ({f.text}): vet it too")
    if target.name.lower() in ("torch", "pytorch"):
        local = (target.version or "").partition("+")[2] or "none"
        caveats.append(
            f"this is PyTorch itself (build '{local}'): on AMD install the ROCm build from "
            "https://download.pytorch.org/whl/rocmX.Y; a +cpu or +cuXYZ build has no ROCm support"
        )
    skipped = [f for f in result.findings if f.spec.side == "safety" and f.severity != "info"]
    if skipped:
        # counts, not the kept findings: the scan keeps only KEEP_PER_RULE examples per rule
        total = sum(result.counts[rule] for rule in {f.rule for f in skipped}) or len(skipped)
        caveats.append(f"{total} member(s) not read for safety or size ({_rules(skipped)})")
    return Verdict(klass, TITLES[klass], reason, evidence, caveats, steps)
