"""Type checks for the spec value objects.

Each value object checks its own fields when it is built and raises one
``SpecValidationError`` listing every field of the wrong type, so that the semantic
rules can rely on types. Paths are relative to the object; the spec-file loader
prefixes them with where the object sits in the file.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from hetero_constructs.core.violations import Violation, raise_if_any

TYPE_RULE = "SPEC-TYPE"


def is_integer(value: Any) -> bool:
    """An int, or a float with an integral value (CDK encodes number tokens as such floats)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value) and value.is_integer()


def is_json_value(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return False
    return True


class FieldChecker:
    """Collects type violations for one object, then raises them together."""

    def __init__(self, owner: str) -> None:
        self.owner = owner
        self.violations: list[Violation] = []

    def _bad(self, path: str, value: Any, allowed: str) -> None:
        self.violations.append(
            Violation(
                rule=TYPE_RULE,
                path=path,
                problem=f"{self.owner} field '{path}' has the wrong type.",
                value=value,
                allowed=allowed,
                fix=f"give '{path}' as {allowed}",
            )
        )

    def string(self, path: str, value: Any, *, optional: bool = False) -> None:
        if value is None and optional:
            return
        if not isinstance(value, str):
            self._bad(path, value, "a string" + (" or null" if optional else ""))

    def integer(self, path: str, value: Any, *, optional: bool = False) -> None:
        if value is None and optional:
            return
        if not is_integer(value):
            self._bad(path, value, "an integer" + (" or null" if optional else ""))

    def boolean(self, path: str, value: Any) -> None:
        if not isinstance(value, bool):
            self._bad(path, value, "true or false")

    def string_tuple(self, path: str, value: Any) -> None:
        if not isinstance(value, tuple) or not all(isinstance(v, str) for v in value):
            self._bad(path, value, "a list of strings")

    def string_mapping(self, path: str, value: Any) -> None:
        if not isinstance(value, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            self._bad(path, value, "a mapping of strings to strings")

    def json_mapping(self, path: str, value: Any) -> None:
        if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
            self._bad(path, value, "a mapping with string keys")
            return
        for key, item in value.items():
            if not is_json_value(item):
                self._bad(
                    f"{path}.{key}", item, "a JSON value (string, number, boolean, list, map)"
                )

    def one_of(self, path: str, value: Any, allowed_type: type, what: str) -> None:
        if not isinstance(value, allowed_type):
            self._bad(path, value, what)

    def tuple_of(self, path: str, value: Any, item_type: type, what: str) -> None:
        if not isinstance(value, tuple) or not all(isinstance(v, item_type) for v in value):
            self._bad(path, value, what)

    def done(self) -> None:
        raise_if_any(self.violations)


def as_tuple(value: Any) -> Any:
    """Lists become tuples so value objects stay immutable; anything else is left for the checks."""
    return tuple(value) if isinstance(value, list) else value
