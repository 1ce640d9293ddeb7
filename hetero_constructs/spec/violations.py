"""Violations: what a rule reports, and the one error the library raises for them."""

from __future__ import annotations

import difflib
import heapq
import json
import reprlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from hetero_constructs.spec.rule_registry import EXECUTION_INPUT, register_rule

_MAX_VALUE_CHARS = 200
# Containers deeper than this are shown as "..." (a value may be nested or even cyclic).
_MAX_RENDER_DEPTH = 8
# Integers wider than this are described by their size: Python refuses to turn integers of
# more than 4,300 digits into text, and nobody reads 80 digits anyway.
_MAX_RENDERED_INT_BITS = 256
_reprs = reprlib.Repr()
_reprs.maxstring = _reprs.maxother = _MAX_VALUE_CHARS


def render_value(value: Any) -> str:
    """A short, unambiguous rendering of a user-given value for messages.

    JSON for JSON-like values (map keys sorted), at most 200 characters. The cost is bounded
    whatever the value: only what is shown is rendered, so a huge, deeply nested or cyclic
    value (or an integer Python cannot print) is shown in the same time as a small one.
    """
    parts: list[str] = []
    _render(value, parts, [_MAX_VALUE_CHARS + 1], 0)
    text = "".join(parts)
    if len(text) > _MAX_VALUE_CHARS:
        text = text[: _MAX_VALUE_CHARS - 3] + "..."
    return text


def _render(value: Any, parts: list[str], budget: list[int], depth: int) -> None:
    """Append ``value``'s text to ``parts`` until ``budget`` (characters left) runs out."""
    if budget[0] <= 0:
        return
    if isinstance(value, str):
        # Escaping works character by character, so encoding a cut string gives the same
        # first characters as encoding the whole string.
        _emit(parts, budget, json.dumps(value[: budget[0]]))
    elif value is None or isinstance(value, bool | float):
        _emit(parts, budget, json.dumps(value))
    elif isinstance(value, int):
        _emit(parts, budget, _integer_text(value))
    elif isinstance(value, Mapping | list | tuple):
        if depth >= _MAX_RENDER_DEPTH:
            _emit(parts, budget, "...")
            return
        if isinstance(value, Mapping):
            _render_mapping(value, parts, budget, depth)
        else:
            _emit(parts, budget, "[")
            for index, item in enumerate(value):
                if budget[0] <= 0:
                    return
                if index:
                    _emit(parts, budget, ", ")
                _render(item, parts, budget, depth + 1)
            _emit(parts, budget, "]")
    else:
        _emit(parts, budget, json.dumps(_safe_repr(value)[: budget[0]]))


def _render_mapping(
    value: Mapping[Any, Any], parts: list[str], budget: list[int], depth: int
) -> None:
    # An entry takes at least 6 characters, so only the first few keys can ever be shown.
    shown = budget[0] // 6 + 1
    try:
        keys = heapq.nsmallest(shown, value.keys())
    except TypeError:  # keys of mixed types do not sort: keep their order
        keys = [key for key, _ in zip(value.keys(), range(shown), strict=False)]
    _emit(parts, budget, "{")
    for index, key in enumerate(keys):
        if budget[0] <= 0:
            return
        if index:
            _emit(parts, budget, ", ")
        _emit(parts, budget, json.dumps(_key_text(key)[: budget[0]]) + ": ")
        _render(value[key], parts, budget, depth + 1)
    _emit(parts, budget, "}")


def _key_text(key: Any) -> str:
    """Map keys as JSON writes them: strings as they are, scalars as their JSON text."""
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, bool | float):
        return json.dumps(key)
    if isinstance(key, int):
        return _integer_text(key)
    return _safe_repr(key)


def _integer_text(value: int) -> str:
    if value.bit_length() > _MAX_RENDERED_INT_BITS:
        digits = int(value.bit_length() * 0.30103) + 1
        return f"<an integer of about {digits} digits>"
    return str(value)


def _safe_repr(value: Any) -> str:
    try:
        return _reprs.repr(value)
    except Exception:  # a user object whose repr fails still gets a message
        return f"<{type(value).__name__}>"


def _emit(parts: list[str], budget: list[int], text: str) -> None:
    parts.append(text)
    budget[0] -= len(text)


_MAX_PATH_CHARS = 300

#: What a warning's acknowledgment snippet asks for in place of the reason.
ACKNOWLEDGMENT_REASON = "<why this does not apply to the job, 10 characters or more>"


def _printable(text: str) -> str:
    """``text`` with each unprintable character written as its escape (``\\n``, ``\\ud800``)."""
    return "".join(c if c.isprintable() else json.dumps(c)[1:-1] for c in text)


def shorten(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters (ending in ``...`` when cut)."""
    return text if len(text) <= limit else text[: max(limit - 3, 0)] + "..."


def did_you_mean(given: str, known: Iterable[str]) -> str | None:
    """The known name ``given`` was most likely meant to be, if any.

    Spelling variants first (``instanceCount``, ``Instance-Count``), then close spellings, then
    a name that contains the given one or is contained in it (``count`` -> ``instance_count``).
    """
    if not isinstance(given, str) or not given or len(given) > 100:
        return None
    candidates = sorted(set(known))
    squashed = {_squash(name): name for name in candidates}
    if _squash(given) in squashed:
        return squashed[_squash(given)]
    close = difflib.get_close_matches(given, candidates, n=1)
    if close:
        return close[0]
    core = _squash(given)
    related = [
        name
        for name in candidates
        if (len(core) >= 3 and core in _squash(name))
        or (len(_squash(name)) >= 4 and _squash(name) in core)
    ]
    if not related:
        return None
    return max(related, key=lambda name: difflib.SequenceMatcher(None, given, name).ratio())


def _squash(name: str) -> str:
    return "".join(c for c in name.casefold() if c.isalnum())


def unknown_key_fix(given: str, known: Iterable[str]) -> str:
    """The fix for an unknown key: the likely name, or removing it."""
    meant = did_you_mean(given, known)
    return f"did you mean '{meant}'?" if meant else "remove the key"


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
    #: ``error``: the API or the toolkit would reject or misbehave. ``warning``: a documented
    #: recommendation where sources disagree; it may be acknowledged with a reason.
    severity: str = "error"

    def __post_init__(self) -> None:
        # Texts may quote user input (keys, names): keep them printable (a lone surrogate or
        # a control character would break the CLI's output) and the path readable in length.
        for name in ("path", "problem", "allowed", "fix"):
            text = getattr(self, name)
            if isinstance(text, str) and not text.isprintable():
                object.__setattr__(self, name, _printable(text))
        if isinstance(self.path, str) and len(self.path) > _MAX_PATH_CHARS:
            object.__setattr__(self, "path", shorten(self.path, _MAX_PATH_CHARS))

    @property
    def acknowledgment(self) -> str | None:
        """For a warning, the spec entry that silences it (the reason left for the user)."""
        if self.severity != "warning":
            return None
        return f'acknowledgments: {{"{self.rule}": "{ACKNOWLEDGMENT_REASON}"}}'

    @property
    def message(self) -> str:
        """The full sentence: what went wrong, the value given, what is allowed, the fix.

        A warning's fix also says how to acknowledge it.
        """
        text = (
            f"{self.problem} Given: {render_value(self.value)}. "
            f"Allowed: {self.allowed}. Fix: {self.fix}"
        )
        acknowledgment = self.acknowledgment
        if acknowledgment is not None:
            text += f"; or, if it does not apply, acknowledge it: {acknowledgment}"
        return text

    def __str__(self) -> str:
        return f"[{self.rule}] {self.path or '(spec)'}: {self.message}"

    def line(self) -> str:
        """``str(self)`` led by the severity: ``error [RULE] path: message``."""
        return f"{self.severity} {self}"

    def to_dict(self) -> dict[str, str]:
        """``rule``, ``path``, ``message``, and ``severity`` unless it is an error."""
        found = {"rule": self.rule, "path": self.path, "message": self.message}
        if self.severity != "error":
            found["severity"] = self.severity
        return found

    def compact(self) -> Violation:
        """The same violation with every text cut to a bounded size, for size-limited reports.

        The value needs no cutting: ``message`` shows at most 200 ASCII characters of it. The
        JSON form (``to_dict``, ASCII-escaped) stays under about 1,300 characters.
        """
        return replace(
            self,
            path=_fit(self.path, 120),
            problem=_fit(self.problem, 250),
            allowed=_fit(self.allowed, 250),
            fix=_fit(self.fix, 150),
        )


def _fit(text: str, limit: int) -> str:
    """``text`` cut so that its ASCII-escaped JSON form has at most ``limit`` characters."""
    size = 0
    for index, char in enumerate(text):
        if char in '"\\':
            size += 2
        else:  # \uXXXX, twice outside the BMP
            size += 1 if " " <= char <= "~" else 12
        if size > limit - 3:
            return text[:index] + "..."
    return text


# Step Functions keeps at most 32,768 characters of a failure's cause. A report of this many
# compact violations, and one saying how many more there are, stays within it even when the
# report's JSON is escaped once more inside the Lambda's error JSON.
MAX_REPORTED_VIOLATIONS = 10
MORE_VIOLATIONS_RULE = register_rule(
    "MORE-VIOLATIONS",
    group=EXECUTION_INPUT,
    title=f"At most {MAX_REPORTED_VIOLATIONS} violations of an execution input are listed, "
    "then one saying how many more there are.",
    details="So the report fits Step Functions' failure cause (32,768 characters).",
    source="Step Functions: the error cause's size",
)


def bounded(
    violations: Sequence[Violation], limit: int = MAX_REPORTED_VIOLATIONS, *, path: str = ""
) -> tuple[Violation, ...]:
    """The first ``limit`` violations, compacted, and one more saying how many were left out.

    For reports with a size limit, such as a Step Functions failure cause: the JSON of the
    result (``to_dict`` of each) stays under 16,000 characters. ``path`` is where the last
    violation points (e.g. ``execution input``).
    """
    # A list bounded before ends with its own count of what it left out: that count adds up.
    listed = [v for v in violations if v.rule != MORE_VIOLATIONS_RULE]
    counted = sum(
        v.value if isinstance(v.value, int) else 1
        for v in violations
        if v.rule == MORE_VIOLATIONS_RULE
    )
    shown = tuple(v.compact() for v in listed[:limit])
    left_out = len(listed) - len(shown) + counted
    if left_out <= 0:
        return shown
    more = Violation(
        MORE_VIOLATIONS_RULE,
        path,
        f"... and {left_out} more violations, not listed to keep the report short.",
        left_out,
        f"at most {limit} violations are listed",
        "fix the ones listed and try again",
    )
    return (*shown, more)


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
        lines = [f"{count} training-spec {noun}{where}{_tally(self.violations)}:"]
        lines.extend(f"  - {v.line()}" for v in self.violations)
        return "\n".join(lines)

    def with_scope(self, scope: str) -> SpecValidationError:
        """The same violations, the message saying where (``... in <scope>``)."""
        return SpecValidationError(self.violations, scope=scope)


def _tally(violations: Sequence[Violation]) -> str:
    """`` (1 error, 2 warnings)``; empty when every violation is an error."""
    warnings = sum(1 for v in violations if v.severity == "warning")
    if not warnings:
        return ""
    errors = len(violations) - warnings
    return (
        f" ({errors} error{'' if errors == 1 else 's'}, "
        f"{warnings} warning{'' if warnings == 1 else 's'})"
    )


def raise_if_any(violations: Sequence[Violation], *, scope: str | None = None) -> None:
    if violations:
        raise SpecValidationError(violations, scope=scope)


__all__ = [
    "ACKNOWLEDGMENT_REASON",
    "MAX_REPORTED_VIOLATIONS",
    "MORE_VIOLATIONS_RULE",
    "SpecValidationError",
    "Violation",
    "bounded",
    "did_you_mean",
    "raise_if_any",
    "render_value",
    "shorten",
    "unknown_key_fix",
]
