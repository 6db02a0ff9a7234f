"""pytest entry point (``pytest11: rocm``). Scaffold: the core issue fills this in."""

from __future__ import annotations

pytest_plugins = ["pytest_rocm.parity_plugin", "pytest_rocm.report_plugin"]
