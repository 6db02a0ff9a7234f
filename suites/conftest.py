"""What every bundled suite needs decided before any suite is collected: triton's interpreter.

``@triton.jit`` picks interpreter or compiler when a function is decorated, and triton decorates
its own standard library (``tl.max``, ``tl.sum`` ...) when ``triton.language`` is first imported.
Other suites import triton long before the library suite runs (the corpus suite's
``torch.testing._internal`` imports it at collection), so the decision cannot wait for
``suites/libraries/conftest.py``, which pytest loads only when it reaches that folder: made there,
kernels ran interpreted but called a compiled ``tl.max`` and failed. pytest loads this file with
the initial conftests (whenever the target is ``suites`` or anything below it), before collection.
"""

from __future__ import annotations

import os
from typing import Any

import pytest


def triton_interpret_decision(environ: dict[str, str], device_option: str | None, gpu_present: Any) -> tuple[bool, str]:
    """Whether triton kernels must run in its interpreter (TRITON_INTERPRET=1), and why.

    ``gpu_present`` is a callable (only called when the answer depends on it: it imports torch).
    A user's own TRITON_INTERPRET wins; then ``--rocm-device`` (cpu -> interpreter, a GPU ->
    compiled); without that option, the interpreter only when torch sees no GPU.
    """
    if "TRITON_INTERPRET" in environ:
        return environ["TRITON_INTERPRET"] == "1", "TRITON_INTERPRET set by the user"
    if device_option:
        if device_option.strip().lower().startswith("cpu"):
            return True, "--rocm-device=cpu"
        return False, f"--rocm-device={device_option}"
    if gpu_present():
        return False, "a GPU is present"
    return True, "no GPU: the device under test is the CPU"


def _torch_sees_gpu() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


_INTERPRET_KEY = pytest.StashKey[tuple[bool, str]]()


def pytest_configure(config: pytest.Config) -> None:
    device_option = config.getoption("rocm_device", default=None)  # resolved by the plugin
    interpret, why = triton_interpret_decision(dict(os.environ), device_option, _torch_sees_gpu)
    if interpret and "TRITON_INTERPRET" not in os.environ:
        os.environ["TRITON_INTERPRET"] = "1"
    config.stash[_INTERPRET_KEY] = (interpret, why)


@pytest.fixture
def triton_interpreting(request: pytest.FixtureRequest) -> tuple[bool, str]:
    """(kernels run in triton's interpreter?, why) as decided at configure time."""
    return request.config.stash.get(_INTERPRET_KEY, (os.environ.get("TRITON_INTERPRET") == "1", "environment"))
