"""Violations: what a rule reports, and the one error the library raises for them."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

_MAX_VALUE_CHARS = 200


def render_value(value: Any) -> str:
    """A short, unambiguous rendering of a user-given value for messages."""
    try:
        text = json.dumps(value, default=repr, sort_keys=True)
    except (TypeError, ValueError):
        text = repr(value)
    if len(text) > _MAX_VALUE_CHARS:
        text = text[: _MAX_VALUE_CHARS - 3] + "..."
    return text


@dataclass(frozen=True)
class Violation:
    """One broken rule.

    ``path`` points into the spec with the SageMaker Python SDK's argument names,
    e.g. ``instance_groups[1].instance_type`` or ``channels.train.instance_groups``.
    """

    rule: str
    path: str
    problem: str
    value: Any
    allowed: str
    fix: str

    @property
    def message(self) -> str:
        """The full sentence: what went wrong, the value given, what is allowed, the fix."""
        return (
            f"{self.problem} Given: {render_value(self.value)}. "
            f"Allowed: {self.allowed}. Fix: {self.fix}"
        )

    def __str__(self) -> str:
        return f"[{self.rule}] {self.path or '(spec)'}: {self.message}"

    def to_dict(self) -> dict[str, str]:
        return {"rule": self.rule, "path": self.path, "message": self.message}


class SpecValidationError(ValueError):
    """Raised with every violation of a training spec at once."""

    def __init__(self, violations: Iterable[Violation], *, scope: str | None = None) -> None:
        self.violations: tuple[Violation, ...] = tuple(violations)
        self.scope = scope
        super().__init__(self._render())

    def _render(self) -> str:
        where = f" in {self.scope}" if self.scope else ""
        count = len(self.violations)
        noun = "violation" if count == 1 else "violations"
        lines = [f"{count} training-spec {noun}{where}:"]
        lines.extend(f"  - {v}" for v in self.violations)
        return "\n".join(lines)

    def with_scope(self, scope: str) -> SpecValidationError:
        return SpecValidationError(self.violations, scope=scope)


def raise_if_any(violations: Sequence[Violation], *, scope: str | None = None) -> None:
    if violations:
        raise SpecValidationError(violations, scope=scope)
