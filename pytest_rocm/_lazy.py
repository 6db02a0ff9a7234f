"""Names a module loads on first use (PEP 562), for the package root and ``suite_support``: a
table ``name -> "module"`` or ``"module:attribute"``, imported when the name is first read, then
kept as a plain attribute. Stdlib only, so importing a module that uses it stays cheap (the plugin
loads the root when pytest starts: no torch, no packaging)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Collection, Mapping
from typing import Any


def lazy_attributes(
    module_name: str, table: Mapping[str, str], public: Collection[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module's ``__getattr__`` and ``__dir__`` for the names of ``table``."""
    namespace = vars(sys.modules[module_name])

    def __getattr__(name: str) -> Any:
        where = table.get(name)
        if where is None:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        module, _, attribute = where.partition(":")
        value = getattr(importlib.import_module(module), attribute or name)
        namespace[name] = value  # once loaded, a plain attribute
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *public})

    return __getattr__, __dir__
