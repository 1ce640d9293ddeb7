"""The walk over spec-file data that collects every problem instead of stopping at the first."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from hetero_constructs.spec.fields import (
    TYPE_RULE,
    UNKNOWN_KEY_RULE,
)
from hetero_constructs.spec.violations import (
    SpecValidationError,
    Violation,
    shorten,
    unknown_key_fix,
)

T = TypeVar("T")


class Reader:
    """Walks the raw data once, collecting every problem instead of stopping at the first."""

    def __init__(self) -> None:
        self.violations: list[Violation] = []

    def problem(
        self, rule: str, path: str, problem: str, value: Any, allowed: str, fix: str
    ) -> None:
        self.violations.append(Violation(rule, path, problem, value, allowed, fix))

    def mapping(self, path: str, value: Any, keys: frozenset[str] | None) -> Mapping[str, Any]:
        """A mapping with string keys; unknown keys are reported (``keys=None``: any key)."""
        if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
            self.problem(
                TYPE_RULE,
                path,
                "Expected a mapping with string keys.",
                value,
                "a mapping",
                f"give '{path}' as a mapping",
            )
            return {}
        if keys is not None:
            for key in value:
                if key not in keys:
                    self._unknown(path, key, keys)
        return value

    def _unknown(self, path: str, key: str, keys: frozenset[str]) -> None:
        shown = shorten(key, 100)
        self.problem(
            UNKNOWN_KEY_RULE,
            f"{path}.{shown}" if path else shown,
            "Unknown key; the SDK would silently ignore it.",
            key,
            ", ".join(sorted(keys)),
            unknown_key_fix(key, keys),
        )

    def sequence(self, path: str, value: Any) -> list[Any]:
        if not isinstance(value, list | tuple):
            self.problem(
                TYPE_RULE, path, "Expected a list.", value, "a list", f"give '{path}' as a list"
            )
            return []
        return list(value)

    def build(self, path: str, factory: Callable[..., T], **fields: Any) -> T | None:
        """Call a value-object constructor; its type violations get the object's path."""
        try:
            return factory(**fields)
        except SpecValidationError as error:
            for v in error.violations:
                full = f"{path}.{v.path}" if path and v.path else (path or v.path)
                quoted, requoted = f"'{v.path}'", f"'{full}'"
                self.violations.append(
                    Violation(
                        v.rule,
                        full,
                        v.problem.replace(quoted, requoted),
                        v.value,
                        v.allowed,
                        v.fix.replace(quoted, requoted),
                    )
                )
            return None


__all__ = [
    "Reader",
]
