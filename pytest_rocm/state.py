"""The documented path of the environment accessors before the layout moved them (docs/plugin.md).

Kept so conftests written against it keep working; the names live in ``pytest_rocm.plugin.session``
and are public as ``pytest_rocm.get_environment`` and friends.
"""

from pytest_rocm.plugin.session import device_string, get_device, get_environment

__all__ = ["device_string", "get_device", "get_environment"]
