"""Captures of the example training scripts (docs/examples/train_*.py), made once per session on the CPU."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path
from typing import Any

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
SCRIPTS = {"llama": "train_tiny_llama.py", "cnn": "train_small_cnn.py", "lstm": "train_lstm.py"}


def capture_script(name: str, path: Path) -> dict[str, Any]:
    """Run the example in this process under ``pytest_rocm.capture(path)``; the document."""
    import pytest_rocm

    saved = sys.argv
    sys.argv = [SCRIPTS[name], "--steps", "1", "--device", "cpu"]
    try:
        with pytest_rocm.capture(path) as cap:
            runpy.run_path(str(EXAMPLES / SCRIPTS[name]), run_name="__main__")
    finally:
        sys.argv = saved
    assert cap.document is not None
    return cap.document


@pytest.fixture(scope="session")
def captures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``{"cnn": Path, "lstm": Path, "llama": Path}``: the three captures as files."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    folder = tmp_path_factory.mktemp("captures")
    paths = {}
    for name in SCRIPTS:
        paths[name] = folder / f"{name}.json"
        capture_script(name, paths[name])
    return paths


@pytest.fixture(scope="session")
def workload_captures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The realistic workloads of ``workloads.py`` (LoRA, generate, bf16 autocast, channels_last
    vision), each captured once into a file."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("peft")
    import pytest_rocm

    sys.path.insert(0, str(Path(__file__).parent))
    from workloads import WORKLOADS

    folder = tmp_path_factory.mktemp("workloads")
    paths = {}
    for name, run in WORKLOADS.items():
        paths[name] = folder / f"{name}.json"
        with pytest_rocm.capture(paths[name]):
            run()
    return paths
