"""The documented path of the suites' helpers before the layout moved them (docs/report.md).

Kept so suites written against it keep working; the names are public as
``pytest_rocm.skip_not_installed``, ``pytest_rocm.not_installed_reason`` and
``pytest_rocm.INFO_PROPERTY``.
"""

from pytest_rocm import skip_not_installed
from pytest_rocm.report.outcomes import INFO_PROPERTY, not_installed_reason

__all__ = ["INFO_PROPERTY", "not_installed_reason", "skip_not_installed"]
