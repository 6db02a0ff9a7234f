"""Library suites: per-test library facts for the report and offline Hugging Face (triton's
interpreter is decided before any suite is collected, in ``suites/conftest.py``).

Every test module names its library and class with ``pytestmark = pytest.mark.library(name,
cls)`` (a test may override it). From that marker this conftest

* names the compatibility-table row ``libraries/<class>/<library>/<check>[<params>]`` (a
  ``feature`` marker added at collection), so the table groups libraries by class, and
* records ``(INFO_PROPERTY, {"library", "class", "version", ...})`` on the test through the
  ``library_info`` fixture; tests add what ran (``backend``, ``target``...) to that same dict.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_rocm import INFO_PROPERTY

sys.path.insert(0, str(Path(__file__).parent))  # the suite's helper modules, in any import mode

from _library_support import LIBRARY_CLASSES, library_version

# Never reach the Hugging Face Hub: the ecosystem checks build tiny models from configs. Forced,
# not defaulted (as in the model suite): a user's HF_HUB_OFFLINE=0 must not let a check download.
for _var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
    os.environ[_var] = "1"

#: distribution name of each library module the suites import
DISTRIBUTIONS = {
    "triton": "triton",
    "bitsandbytes": "bitsandbytes",
    "flash_attn": "flash-attn",
    "xformers": "xformers",
    "transformers": "transformers",
    "peft": "peft",
    "accelerate": "accelerate",
    "llama_cpp": "llama-cpp-python",
}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "library(name, cls): the library a check exercises and its class "
        f"({', '.join(LIBRARY_CLASSES)}); names the row libraries/<cls>/<name>/<check>",
    )
    if not any(line.split("(")[0].split(":")[0].strip() == "rocm_feature" for line in config.getini("markers")):
        config.addinivalue_line("markers", "rocm_feature(name): names the compatibility-table row")


def _library_marker(item: pytest.Item) -> tuple[str, str] | None:
    marker = item.get_closest_marker("library")
    if marker is None:
        return None
    name = marker.args[0] if marker.args else marker.kwargs["name"]
    cls = marker.args[1] if len(marker.args) > 1 else marker.kwargs["cls"]
    if cls not in LIBRARY_CLASSES:
        raise pytest.UsageError(f"{item.nodeid}: library class {cls!r} is not one of {', '.join(LIBRARY_CLASSES)}")
    return name, cls


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here not in Path(str(item.path)).parents or item.get_closest_marker("rocm_feature"):
            continue
        lib = _library_marker(item)
        if lib is None:
            continue
        name, cls = lib
        check = item.name.split("[", 1)[0].removeprefix("test_")
        params = item.name[len(item.name.split("[", 1)[0]) :]
        item.add_marker(pytest.mark.rocm_feature(f"libraries/{cls}/{name}/{check}{params}"))


@pytest.fixture(autouse=True)
def library_info(request: pytest.FixtureRequest, record_property: Any) -> dict[str, Any]:
    """The test's ``rocm_info`` dict, already on the report; add what ran to it."""
    lib = _library_marker(request.node)
    info: dict[str, Any] = {}
    if lib is not None:
        name, cls = lib
        info.update(library=name, **{"class": cls}, version=library_version(DISTRIBUTIONS.get(name, name)))
    record_property(INFO_PROPERTY, info)
    return info


@pytest.fixture
def device(request: pytest.FixtureRequest) -> Any:
    """The device under test: the plugin's ``rocm_device``."""
    return request.getfixturevalue("rocm_device")


@pytest.fixture
def gpu_device(device: Any) -> Any:
    """The device under test when it is a GPU; GPU-only libraries skip with the reason otherwise."""
    if device.type == "cpu":
        pytest.skip("needs a GPU: the device under test is the CPU")
    return device
