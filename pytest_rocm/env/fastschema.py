"""A JSON Schema compiled once into one Python predicate per node: "is this document valid?",
without jsonschema. For the subset of draft 2020-12 that ``data/schemas/*.json`` use.

Why: importing jsonschema (and referencing, attrs) cost 0.4 G instructions, as much as checking
two 10,000-row reports, on every ``table``/``diff``/``--rocm-env`` read of a valid file. So a
valid document is told valid here, and only an invalid one meets jsonschema, which words the
error (``env.schemas.first_problem``): every message stays jsonschema's. The predicates follow
jsonschema's own rules (``integer`` takes 1.0, ``number`` no bool, ``pattern`` is ``re.search``,
a keyword checks only the types it applies to); tests/env/test_fast_schema.py holds the two to
the same verdict on mutations of every field. A keyword outside the subset is an error when the
schema is compiled, so a schema that grows one can never be checked wrongly in silence.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Callable, Mapping
from typing import Any

Check = Callable[[Any], bool]

#: keywords that only annotate (no effect on validity)
_ANNOTATIONS = frozenset(("$schema", "$id", "$defs", "$comment", "title", "description", "default", "examples"))


def _is_integer(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _is_number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, numbers.Number)


#: jsonschema's draft 2020-12 type checker, name by name
_TYPES: dict[str, Check] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "integer": _is_integer,
    "number": _is_number,
}


def _all(checks: list[Check]) -> Check:
    if not checks:
        return lambda v: True
    if len(checks) == 1:
        return checks[0]
    frozen = tuple(checks)
    return lambda v: all(check(v) for check in frozen)


def _when(kind: str, test: Check) -> Check:
    """A keyword that applies to one type only: any other value passes it (as in JSON Schema)."""
    is_kind = _TYPES[kind]
    return lambda v: not is_kind(v) or test(v)


def _scalar_options(keyword: str, options: list[Any]) -> frozenset[str | None]:
    """enum/const values: strings and null only, so ``in`` is jsonschema's equality (no 1 == True)."""
    if not all(o is None or isinstance(o, str) for o in options):
        raise ValueError(f"{keyword} {options!r}: only strings and null are supported here")
    return frozenset(options)


class Compiler:
    """Compiles the schemas of one registry (``$id`` -> schema) with the given format tests."""

    def __init__(self, registry: Mapping[str, Any], formats: Mapping[str, Check]) -> None:
        self._registry = registry
        self._formats = formats
        self._done: dict[tuple[str, str], Check] = {}

    def compile(self, base: str, pointer: str = "") -> Check:
        """The predicate of the node at ``pointer`` (``/$defs/result``) of the schema ``base``."""
        key = (base, pointer)
        if key not in self._done:
            slot: list[Check] = []
            self._done[key] = lambda v: slot[0](v)  # a $ref back to this node (recursion) waits here
            node: Any = self._registry[base]
            for part in filter(None, pointer.split("/")):
                node = node[part.replace("~1", "/").replace("~0", "~")]
            slot.append(self._node(node, base))
            self._done[key] = slot[0]
        return self._done[key]

    def _ref(self, ref: str, base: str) -> Check:
        document, _, pointer = ref.partition("#")
        if document and document not in self._registry:  # relative to the referring schema
            document = base.rsplit("/", 1)[0] + "/" + document
        return self.compile(document or base, pointer)

    def _node(self, node: Any, base: str) -> Check:
        if node is True:
            return lambda v: True
        if node is False:
            return lambda v: False
        checks: list[Check] = []
        for keyword, value in node.items():
            if keyword in _ANNOTATIONS:
                continue
            compile_keyword = getattr(self, "_k_" + keyword.lstrip("$"), None)
            if compile_keyword is None:
                raise ValueError(f"schema keyword {keyword!r} is not supported by the fast check")
            checks.append(compile_keyword(value, node, base))
        return _all(checks)

    # -- keywords: one method each, value -> predicate ------------------------------------------
    def _k_ref(self, ref: str, node: Any, base: str) -> Check:
        return self._ref(ref, base)

    def _k_type(self, kinds: str | list[str], node: Any, base: str) -> Check:
        tests = tuple(_TYPES[k] for k in ([kinds] if isinstance(kinds, str) else kinds))
        return lambda v: any(test(v) for test in tests)

    def _k_enum(self, options: list[Any], node: Any, base: str) -> Check:
        allowed = _scalar_options("enum", options)
        return lambda v: (v is None or isinstance(v, str)) and v in allowed

    def _k_const(self, option: Any, node: Any, base: str) -> Check:
        allowed = _scalar_options("const", [option])
        return lambda v: (v is None or isinstance(v, str)) and v in allowed

    def _k_anyOf(self, branches: list[Any], node: Any, base: str) -> Check:
        tests = tuple(self._node(b, base) for b in branches)
        return lambda v: any(test(v) for test in tests)

    def _k_required(self, keys: list[str], node: Any, base: str) -> Check:
        return _when("object", lambda v: all(k in v for k in keys))

    def _k_properties(self, properties: dict[str, Any], node: Any, base: str) -> Check:
        tests = tuple((k, self._node(s, base)) for k, s in properties.items())
        return _when("object", lambda v: all(test(v[k]) for k, test in tests if k in v))

    def _k_additionalProperties(self, extra: Any, node: Any, base: str) -> Check:
        if "patternProperties" in node:
            raise ValueError("patternProperties is not supported by the fast check")
        listed = frozenset(node.get("properties", ()))
        test = self._node(extra, base)
        return _when("object", lambda v: all(test(x) for k, x in v.items() if k not in listed))

    def _k_maxProperties(self, bound: int, node: Any, base: str) -> Check:
        return _when("object", lambda v: len(v) <= bound)

    def _k_minProperties(self, bound: int, node: Any, base: str) -> Check:
        return _when("object", lambda v: len(v) >= bound)

    def _k_items(self, items: Any, node: Any, base: str) -> Check:
        if isinstance(items, list) or "prefixItems" in node:
            raise ValueError("tuple items are not supported by the fast check")
        test = self._node(items, base)
        return _when("array", lambda v: all(map(test, v)))

    def _k_maxItems(self, bound: int, node: Any, base: str) -> Check:
        return _when("array", lambda v: len(v) <= bound)

    def _k_minItems(self, bound: int, node: Any, base: str) -> Check:
        return _when("array", lambda v: len(v) >= bound)

    def _k_minLength(self, bound: int, node: Any, base: str) -> Check:
        return _when("string", lambda v: len(v) >= bound)

    def _k_maxLength(self, bound: int, node: Any, base: str) -> Check:
        return _when("string", lambda v: len(v) <= bound)

    def _k_pattern(self, pattern: str, node: Any, base: str) -> Check:
        search = re.compile(pattern).search  # jsonschema's re.search: "$" also before a final newline
        return _when("string", lambda v: search(v) is not None)

    def _k_format(self, name: str, node: Any, base: str) -> Check:
        test = self._formats.get(name)
        if test is None:  # jsonschema's checker knows only these formats: any other is not checked
            return lambda v: True
        return lambda v: bool(test(v))

    # jsonschema's comparisons, negated as they stand: NaN fails none of them, so it passes
    def _k_minimum(self, bound: float, node: Any, base: str) -> Check:
        return _when("number", lambda v: not v < bound)

    def _k_maximum(self, bound: float, node: Any, base: str) -> Check:
        return _when("number", lambda v: not v > bound)

    def _k_exclusiveMinimum(self, bound: float, node: Any, base: str) -> Check:
        return _when("number", lambda v: not v <= bound)

    def _k_exclusiveMaximum(self, bound: float, node: Any, base: str) -> Check:
        return _when("number", lambda v: not v >= bound)
