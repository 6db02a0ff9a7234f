"""The JSON Schemas of the documents pytest-rocm reads (``data/schemas/*.json``, published in
docs/design.md) and one validator for them, with one-line errors.

Why here: the environment loader (this layer) and the report loader (``report``, one layer up)
both validate, and the report schema refers to the environment one. A document is first checked
by the schema compiled to Python predicates (``env.fastschema``); jsonschema is imported only to
word the error of an invalid one (0.4 G instructions to import: more than checking two
10,000-row reports), so ``matrix`` (stdlib and packaging only, imported by noxfile.py from nox's
interpreter) can still import ``env.model``, and ``table``/``diff`` of valid reports never load it.

Formats the schemas use, checked here with the project's own parsers: ``pep440``
(``packaging.version.Version``), ``arch`` and ``gfx`` (``env.arch``), ``gfx-target-version``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache
from typing import Any

from pytest_rocm._resources import load_json
from pytest_rocm.env import arch
from pytest_rocm.env.fastschema import Check, Compiler

#: schema name -> file in data/schemas
SCHEMA_FILES: dict[str, str] = {
    "environment": "schemas/environment-1.json",
    "report": "schemas/report-1.json",
    "workload": "schemas/workload-1.json",
}

_NVIDIA_RE = re.compile(r"^(sm|compute)_[0-9]+[a-z]?$")

#: versions of the plain shapes (2.6.0+rocm6.2.4, 3.11.7, 4.46.0.dev0, 1.0rc1.post2, 6.2.4-116):
#: all valid PEP 440, told so without importing packaging; any other string is asked of packaging
_PLAIN_VERSION_RE = re.compile(
    r"[0-9]+(\.[0-9]+)*((a|b|rc)[0-9]+)?(-[0-9]+|\.post[0-9]+)?(\.dev[0-9]+)?(\+[a-z0-9]+(\.[a-z0-9]+)*)?"
)

#: what each format means, for messages
FORMAT_TEXT: dict[str, str] = {
    "pep440": "a PEP 440 version (2.6.0+rocm6.2.4)",
    "arch": "an architecture name (gfx1100, gfx90a:xnack-, sm_90)",
    "gfx": "a gfx name (gfx1100, gfx90a)",
    "gfx-target-version": "a KFD gfx_target_version (110000 for gfx1100)",
}


def is_pep440(value: Any) -> bool:
    if not isinstance(value, str) or _PLAIN_VERSION_RE.fullmatch(value):
        return True
    from packaging.version import InvalidVersion, Version  # 0.1 G instructions: only for odd versions

    try:
        Version(value)
    except InvalidVersion:
        return False
    return True


def is_arch(value: Any) -> bool:
    if not isinstance(value, str):
        return True
    # not ASCII (gfx١١00), or padded: not a name the runtime prints
    return value.isascii() and value == value.strip() and (arch.is_gfx(value) or bool(_NVIDIA_RE.match(value)))


def is_gfx(value: Any) -> bool:
    if not isinstance(value, str):
        return True
    return value.isascii() and value == value.strip().lower() and ":" not in value and arch.is_gfx(value)


def is_target_version(value: Any) -> bool:
    if not isinstance(value, int) or isinstance(value, bool):
        return True
    try:
        return arch.is_gfx(arch.gfx_from_target_version(value))
    except ValueError:
        return False


_FORMATS = {"pep440": is_pep440, "arch": is_arch, "gfx": is_gfx, "gfx-target-version": is_target_version}


def schema(name: str) -> dict[str, Any]:
    """The parsed schema (``environment`` or ``report``)."""
    document: dict[str, Any] = load_json(SCHEMA_FILES[name])
    return document


@cache
def _validator(name: str, definition: str | None = None) -> Any:
    """The validator of schema ``name``, or of one of its ``$defs`` (``report``'s ``result``: one
    line of a sidecar is one result, checked on its own so the message can name the line)."""
    import jsonschema
    from referencing import Registry, Resource

    resources = [(schema(n)["$id"], Resource.from_contents(schema(n))) for n in SCHEMA_FILES]
    checker = jsonschema.FormatChecker(formats=())
    for format_name, test in _FORMATS.items():
        checker.checks(format_name)(test)
    cls = jsonschema.validators.validator_for(schema(name))
    target = schema(name) if definition is None else {"$ref": f"{schema(name)['$id']}#/$defs/{definition}"}
    return cls(target, registry=Registry().with_resources(resources), format_checker=checker)


@cache
def _fast(name: str, pointer: str = "") -> Check:
    """Schema ``name`` (or its part at ``pointer``, ``/$defs/result``) as one Python predicate."""
    registry = {schema(n)["$id"]: schema(n) for n in SCHEMA_FILES}
    return Compiler(registry, _FORMATS).compile(schema(name)["$id"], pointer)


def conforms(name: str, document: Any, pointer: str = "") -> bool:
    """Whether ``document`` is valid under schema ``name`` (its part at ``pointer``), by the
    compiled predicates: the same verdict as jsonschema's, without importing it."""
    return _fast(name, pointer)(document)


def location(path: Iterable[Any]) -> str:
    """``["devices", 0, "index"]`` -> ``devices[0].index``."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def describe(error: Any) -> str:
    """One line for a jsonschema ValidationError: where, the value, what was expected."""
    where = location(error.absolute_path) or "document"
    value, rule, expected = error.instance, error.validator, error.validator_value
    if rule == "required":
        missing = next((k for k in expected if isinstance(value, dict) and k not in value), "?")
        return f"{where}: field {missing!r} is missing"
    if rule == "type":
        kinds = expected if isinstance(expected, list) else [expected]
        return f"{where} is {_shown(value)}, expected {' or '.join(kinds)}"
    if rule in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        bound = {"minimum": "at least", "maximum": "at most"}.get(rule, "beyond")
        return f"{where} is {_shown(value)}, expected {bound} {expected}"
    if rule == "format":
        return f"{where} is {_shown(value)}, not {FORMAT_TEXT.get(expected, expected)}"
    if rule in ("enum", "const"):
        options = expected if rule == "enum" else [expected]
        return f"{where} is {_shown(value)}, expected one of {', '.join(repr(o) for o in options)}"
    if rule == "pattern":
        wanted = error.schema.get("description") or f"text matching {expected}"
        return f"{where} is {_shown(value)}, expected {wanted}"
    if rule in ("minLength", "maxItems", "maxLength", "minItems"):
        # said in our words: jsonschema's message starts with the whole value, so cutting it to a
        # length cut off the reason ("... is too long") of a list of 10,000 devices
        size = len(value) if isinstance(value, (str, list, dict)) else 0
        what = f"{size} characters" if rule.endswith("Length") else f"{size} items"
        verdict = "too long, at most" if rule.startswith("max") else "too short, at least"
        return f"{where} is {_shown(value)} ({what}): {verdict} {expected}"
    # the value shortened first, then the message: the reason is never what is cut off
    message = " ".join(str(error.message).replace(repr(value), _shown(value)).split())
    return f"{where}: {_shown(value)} fails {rule} ({_clipped(message)})"


def _clipped(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _expects(branch: Any) -> str:
    """What one ``anyOf`` branch accepts, in words."""
    if "format" in branch:
        return str(FORMAT_TEXT.get(branch["format"], branch["format"]))
    if "const" in branch:
        return repr(branch["const"])
    if "enum" in branch:
        return " or ".join(repr(v) for v in branch["enum"])
    kinds = branch.get("type", "something else")
    return " or ".join(kinds) if isinstance(kinds, list) else str(kinds)


@cache
def _sub_validator(name: str, pointer: str) -> Any:
    """A validator of one part of a schema (``#/$defs/result``), sharing its registry and formats."""
    whole = _validator(name)
    return whole.evolve(schema={"$ref": f"{schema(name)['$id']}{pointer}"})


def first_problem(name: str, document: Any, definition: str | None = None) -> str | None:
    """The first schema violation as one line, or None when ``document`` is valid (``definition``:
    check it against that ``$defs`` entry of the schema instead of the whole schema). A valid
    document is told valid by :func:`conforms`; jsonschema words what is wrong with another."""
    if conforms(name, document, "" if definition is None else f"/$defs/{definition}"):
        return None
    return _first(list(_validator(name, definition).iter_errors(document)))


def first_problem_at(name: str, document: Any, pointer: str, at: Iterable[Any]) -> str | None:
    """:func:`first_problem` of ``document`` against the part ``pointer`` of schema ``name``
    (``#/$defs/result``); the line names where the part sits in its document (``results[3]``)."""
    if conforms(name, document, pointer.removeprefix("#")):
        return None
    return problem_by_jsonschema(name, document, pointer, at)


def problem_by_jsonschema(name: str, document: Any, pointer: str = "#", at: Iterable[Any] = ()) -> str | None:
    """:func:`first_problem_at` by jsonschema alone (the tests hold the fast checks to it)."""
    errors = list(_sub_validator(name, pointer).iter_errors(document))
    for error in errors:
        error.path.extendleft(reversed(list(at)))
    return _first(errors)


def _first(errors: list[Any]) -> str | None:
    import jsonschema

    if not errors:
        return None
    error = max(errors, key=jsonschema.exceptions.relevance)
    if error.validator in ("anyOf", "oneOf"):
        where = location(error.absolute_path) or "document"
        options = ", ".join(_expects(b) for b in error.validator_value)
        return f"{where} is {_shown(error.instance)}, expected one of: {options}"
    return describe(error)


def duplicates(values: Iterable[Any]) -> Any:
    """The first value that appears twice, else None (indexes, node ids: JSON Schema cannot say)."""
    seen: set[Any] = set()
    for value in values:
        if value in seen:
            return value
        seen.add(value)
    return None
