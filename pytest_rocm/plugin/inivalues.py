"""Reading an ini value as the user wrote it, whatever the file's format.

The plugin's comma-separated ini values (``rocm_gfx``, ``rocm_device_ids``) are registered with
pytest's own ``linelist`` type, the others as strings. pytest 9.2 reads a ``linelist`` value in
ini mode (``pytest.ini``, ``tox.ini``, ``setup.cfg``, ``[tool.pytest.ini_options]``, ``-o``) as
the lines of a string or a TOML list as it is, and in TOML mode (``[tool.pytest]``,
``pytest.toml``) a TOML list only: the documented string there (``rocm_gfx = "gfx1100,gfx90a"``)
is refused with pytest's own one-line ``UsageError`` before a plugin sees it, and ``addini``
takes no union of a list type with ``str``. A string ini value can still meet another TOML type
(``rocm_require_gpu = true``, ``rocm_plan_rocm = 6.2``): pytest hands it over with a deprecation
warning (``[tool.pytest.ini_options]``, pytest 9.1 and later) or refuses it (TOML mode; every
format from pytest 10): a ``TypeError`` up to pytest 9.1, a ``UsageError`` from 9.2. Such a
refused value is read from the file, and through :func:`ini_text` it is never cut into pieces nor
a traceback: a list of strings is the comma-separated list where the option takes one, a string
is itself, anything else is one usage error naming the ini file and what to write instead.
Other plugins' ini values (pytest-timeout's ``timeout``) are theirs: they are read as pytest
gives them, never from the file.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]  # (3.10: a dependency)

#: what a TOML value is called in messages
_TOML_TYPES = {bool: "a boolean", int: "an integer", float: "a number", list: "a list", dict: "a table"}


def ini_file_name(config: pytest.Config) -> str:
    return config.inipath.name if config.inipath else "ini file"


def _from_toml(path: Path | None, name: str) -> Any:
    """The value of ``name`` in the TOML file pytest refused to read it from (None: not found)."""
    if path is None or path.suffix != ".toml":
        return None
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    tables = [document.get("pytest", {})] if path.name in ("pytest.toml", ".pytest.toml") else []
    tool = document.get("tool", {}).get("pytest", {})
    tables += [tool, tool.get("ini_options", {})] if isinstance(tool, dict) else []
    return next((t[name] for t in tables if isinstance(t, dict) and name in t), None)


def ini_raw(config: pytest.Config, name: str) -> Any:
    """``config.getini(name)``, or the TOML value pytest refused (a list or a number for a string
    option, a string for a list option); without pytest's warning about it, since
    :func:`ini_text` reports it in the usage error itself."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pytest.PytestDeprecationWarning)
        try:
            return config.getini(name)
        except (TypeError, pytest.UsageError):
            # A TOML value of another type than the one registered: a TypeError up to pytest 9.1;
            # from 9.2 pytest checks the type itself and raises its own UsageError. Read the value
            # from the file; if it is not there, the error was about something else: keep it.
            value = _from_toml(config.inipath, name)
            if value is None:
                raise
            return value


def ini_text(config: pytest.Config, name: str, takes_list: bool = False, is_flag: bool = False) -> str | None:
    """The ini value as text (None: not set). ``takes_list``: the option is a comma-separated
    list, so a TOML list of strings is that list; ``is_flag``: a TOML boolean is the flag.
    Any other value that is not a string is a ``pytest.UsageError`` naming the file."""
    value = ini_raw(config, name)
    if isinstance(value, str):
        return value.strip() or None
    if value is None or value == []:
        return None
    if is_flag and isinstance(value, bool):
        return "true" if value else "false"
    if takes_list and isinstance(value, list) and all(isinstance(v, str) for v in value):
        return ",".join(v.strip() for v in value)
    kind = _TOML_TYPES.get(type(value), type(value).__name__)
    shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
    wanted = "a string or a list of strings" if takes_list else "a string"
    example = ",".join(str(v) for v in value) if isinstance(value, list) else str(value).lower()
    raise pytest.UsageError(
        f"{name} in {ini_file_name(config)}={shown}: expected {wanted}, not {kind} (write {name} = {example!r})"
    )
