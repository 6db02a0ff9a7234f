"""``ISSUE.md`` beside the reproducers: the environment in the lines maintainers ask for, the
failing figures per dtype and the command that runs each script, ready to paste. Pure.

No path of the user's machine and no user name unless ``keep_paths``: only the fields listed here
are read from the environment, and every absolute or home path in them is written ``<path>``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pytest_rocm.repro.write import Plan

#: variables that change what a ROCm (or CUDA) stack computes or which device it picks
_VARIABLE = re.compile(
    r"(HSA_OVERRIDE_GFX_VERSION|HIP_VISIBLE_DEVICES|ROCR_VISIBLE_DEVICES|CUDA_VISIBLE_DEVICES|GPU_DEVICE_ORDINAL"
    r"|PYTORCH_ROCM_ARCH|HSA_\w+|HIP_\w+|MIOPEN_\w+|ROCBLAS_\w+|HIPBLASLT_\w+|TORCH_BLAS_\w+|PYTORCH_TUNABLEOP_\w+"
    r"|PYTORCH_\w*HIP\w*|AMD_\w+|NCCL_\w+|RCCL_\w+)"
)
#: an absolute path or a home path (``/home/alice/x``, ``~/x``, ``C:\\Users\\alice``)
_PATH = re.compile(r"(?:~|(?<![\w.])/|\b[A-Za-z]:\\)[^\s:;,'\"]*")
_FENCE = re.compile(r"`{3,}")


def _clean(value: Any, keep_paths: bool, limit: int = 200) -> str:
    text = " ".join(str(value).split())[:limit]
    text = _FENCE.sub("'''", text)  # a value never closes the code block it is shown in
    return text if keep_paths else _PATH.sub("<path>", text)


def environment_lines(env: Mapping[str, Any], keep_paths: bool = False) -> list[str]:
    """``torch 2.5.1+rocm6.2 (HIP 6.2.41134)``, ``device 0: AMD Radeon RX 7900 XTX (gfx1100)``, ..."""

    def get(mapping: Any, key: str) -> Any:
        return mapping.get(key) if isinstance(mapping, Mapping) else None

    def shown(value: Any) -> str:
        return "unknown" if value in (None, "") else _clean(value, keep_paths)

    system = get(env, "system")
    lines = [
        f"torch: {shown(get(env, 'torch'))} (HIP {shown(get(env, 'hip'))}, CUDA {shown(get(env, 'cuda'))})",
        f"backend: {shown(get(env, 'backend'))}",
        f"ROCm: {shown(get(env, 'rocm') or get(system, 'rocm_version'))}",
        f"amdgpu driver: {shown(get(system, 'amdgpu_version'))}",
    ]
    devices = get(env, "devices")
    for device in devices if isinstance(devices, list) else []:
        if isinstance(device, Mapping):
            hw = get(device, "hardware_gfx")
            hardware = f", hardware {shown(hw)}" if hw and hw != get(device, "gfx") else ""
            lines.append(
                f"device {shown(get(device, 'index'))}: {shown(get(device, 'name'))} "
                f"({shown(get(device, 'arch'))}{hardware})"
            )
    if not isinstance(devices, list) or not devices:
        lines.append("device: unknown (the report names none)")
    lines += [f"python: {shown(get(env, 'python'))}", f"platform: {shown(get(env, 'platform'))}"]
    variables = get(env, "variables")
    set_vars = sorted(
        (str(k), v)
        for k, v in (variables.items() if isinstance(variables, Mapping) else [])
        if _VARIABLE.fullmatch(str(k)) and v is not None
    )
    lines += [f"{_clean(k, keep_paths)}={_clean(v, keep_paths)}" for k, v in set_vars]
    if not set_vars:
        lines.append("variables: none of HSA_OVERRIDE_GFX_VERSION, HIP_*, ROCR_*, MIOPEN_*... set")
    return lines


def issue_text(report: Mapping[str, Any], built: Plan, keep_paths: bool = False, device: str = "cuda") -> str:
    """The page (Markdown): environment, then per script its row, figures per dtype, and command."""
    env = report.get("environment")
    parts = ["# Numerical mismatch against a float64 CPU reference", "", "## Environment", "", "```"]
    parts += environment_lines(env if isinstance(env, Mapping) else {}, keep_paths)
    parts += ["```", ""]
    for script in built.scripts:
        parts += [f"## `{_clean(script.op, True)}`", "", f"Found by `{_clean(script.nodeid, keep_paths)}`.", ""]
        if script.op.startswith(("OpInfo ", "ModuleInfo ")):  # a corpus row: named by its sample
            parts += [
                "The sample is PyTorch's own: the script rebuilds it from `torch.testing._internal` of that"
                " torch (which needs `expecttest`), seeded as the corpus made it.",
                "",
            ]
        parts += [f"- {_clean(dtype, True)}: {_clean(text, keep_paths, 400)}" for dtype, text in script.figures.items()]
        parts += [
            "",
            "Standalone reproducer (needs only torch; exit 1: reproduces, 0: does not):",
            "",
            "```",
            f"python {script.file}" + ("" if device == "cuda" else f" --device {device}"),
            "```",
            "",
        ]
    if built.refused:
        parts += ["## Not reproduced by a script", ""]
        parts += [f"- `{_clean(r.nodeid, keep_paths)}`: {_clean(r.why, keep_paths, 300)}" for r in built.refused]
        parts.append("")
    return "\n".join(parts)
