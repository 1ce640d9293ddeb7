"""The whole-request check: every maximum, minimum, pattern and enum a request breaks.

One validator per model shape, built once per process: a single pass over a request finds
every constraint it breaks and tells whether botocore's ``ParamValidator`` would reject it
(whose own report is produced only then).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from decimal import Decimal
from functools import lru_cache
from typing import Any, NamedTuple

from botocore.model import ListShape, MapShape, Shape, StructureShape

from hetero_constructs.service.model import (
    botocore_minimum,
    input_shape,
    is_header_json,
    size_limits,
)
from hetero_constructs.service.patterns import lazy_pattern


class ShapeProblem(NamedTuple):
    """One constraint of the model that a request breaks, where, and what is allowed."""

    path: str
    problem: str
    value: Any
    allowed: str


class RequestVerdict(NamedTuple):
    """Every model constraint a request breaks, and botocore's report when it rejects it."""

    problems: list[ShapeProblem]
    botocore_report: str | None


# A validator takes (value, where, problems) and returns flags. ``where`` is the path as a
# linked tuple (parent, step kind, step), rendered only when a problem is found.
_Where = tuple[Any, int, Any] | None


_Validator = Callable[[Any, _Where, list[ShapeProblem]], int]


_REJECTED = 1  # botocore's ParamValidator rejects the value


_UNDECIDED = 2  # a construct only botocore's ParamValidator judges (documents, unions, ...)


_MEMBER, _INDEX, _KEY, _VALUE = range(4)


def _render(where: _Where) -> str:
    steps: list[tuple[int, Any]] = []
    while where is not None:
        where, kind, step = where
        steps.append((kind, step))
    path = ""
    for kind, step in reversed(steps):
        if kind == _MEMBER:
            path = f"{path}.{step}" if path else step
        elif kind == _INDEX:
            path = f"{path}[{step}]"
        elif kind == _KEY:
            path = f"{path} key {step!r}"
        else:
            path = f"{path}.{step}"
    return path


def _range(low: int | None, high: int | None, unit: str) -> str:
    suffix = f" {unit}" if unit else ""
    if high is None:
        return f"at least {low}{suffix}"
    if low is None:
        return f"at most {high}{suffix}"
    return f"{low} to {high}{suffix}"


class _ValidatorBuilder:
    """Builds one validator per shape; structures are registered first, so cycles work."""

    def __init__(self) -> None:
        self._built: dict[tuple[str, bool, bool], _Validator] = {}

    def build(self, shape: Shape) -> _Validator:
        serialization = shape.serialization
        key = (
            shape.name,
            bool(serialization.get("hostLabel")),
            bool(serialization.get("jsonvalue")),
        )
        found = self._built.get(key)
        if found is None:
            found = self._build(shape, key)
            self._built[key] = found
        return found

    def _build(self, shape: Shape, key: tuple[str, bool, bool]) -> _Validator:
        if isinstance(shape, StructureShape):
            return self._structure(shape, key)
        if isinstance(shape, ListShape):
            validator = self._list(shape)
        elif isinstance(shape, MapShape):
            validator = self._map(shape)
        elif shape.type_name == "string":
            validator = _string(shape)
        elif shape.type_name in ("integer", "long"):
            validator = _integer(shape)
        elif shape.type_name in ("double", "float"):
            validator = _number(shape)
        elif shape.type_name == "boolean":
            validator = _boolean
        else:  # blob, timestamp: only botocore's own checks
            validator = _undecided
        if is_header_json(shape):
            return _also_undecided(validator)
        return validator

    def _structure(self, shape: StructureShape, key: tuple[str, bool, bool]) -> _Validator:
        members: dict[str, _Validator] = {}
        required = frozenset(shape.required_members)
        special = _UNDECIDED if (shape.is_tagged_union or shape.is_document_type) else 0

        def validate(value: Any, where: _Where, problems: list[ShapeProblem]) -> int:
            if not isinstance(value, dict):
                if isinstance(value, Mapping):  # checked for the model's limits all the same
                    for name, item in value.items():
                        member = members.get(name)
                        if member is not None:
                            member(item, (where, _MEMBER, name), problems)
                return _REJECTED
            flags = special
            if required and not required <= value.keys():
                flags = _REJECTED
            for name, item in value.items():
                member = members.get(name)
                if member is None:
                    flags |= _REJECTED
                else:
                    flags |= member(item, (where, _MEMBER, name), problems)
            return flags

        self._built[key] = validate
        for name, member_shape in shape.members.items():
            members[name] = self.build(member_shape)
        return validate

    def _list(self, shape: ListShape) -> _Validator:
        member = self.build(shape.member)
        low, high, floor, ceiling, botocore_floor = size_limits(shape)

        def validate(value: Any, where: _Where, problems: list[ShapeProblem]) -> int:
            if isinstance(value, list):
                found = problems
                size = len(value)
                if size < floor or size > ceiling:
                    allowed = _range(low, high, "items")
                    found.append(ShapeProblem(_render(where), f"has {size} items", value, allowed))
            elif isinstance(value, tuple):
                found = []  # botocore takes tuples; the model's limits are checked on lists
                size = len(value)
            else:
                return _REJECTED
            flags = _REJECTED if size < botocore_floor else 0
            for index, item in enumerate(value):
                flags |= member(item, (where, _INDEX, index), found)
            return flags

        return validate

    def _map(self, shape: MapShape) -> _Validator:
        key_validator = self.build(shape.key)
        value_validator = self.build(shape.value)
        low, high, floor, ceiling, _ = size_limits(shape)  # botocore checks no map size

        def validate(value: Any, where: _Where, problems: list[ShapeProblem]) -> int:
            if isinstance(value, dict):
                flags = 0
            elif isinstance(value, Mapping):
                flags = _REJECTED
            else:
                return _REJECTED
            size = len(value)
            if size < floor or size > ceiling:
                allowed = _range(low, high, "entries")
                problems.append(ShapeProblem(_render(where), f"has {size} entries", value, allowed))
            for key, item in value.items():
                flags |= key_validator(key, (where, _KEY, key), problems)
                flags |= value_validator(item, (where, _VALUE, key), problems)
            return flags

        return validate


def _string(shape: Shape) -> _Validator:
    low, high, floor, ceiling, botocore_floor = size_limits(shape)
    enum_values: list[str] = list(getattr(shape, "enum", None) or ())
    enum = frozenset(enum_values)
    listed = ", ".join(enum_values[:8]) + (
        f", ... ({len(enum_values)} values)" if len(enum_values) > 8 else ""
    )
    pattern_text = shape.metadata.get("pattern")
    pattern = lazy_pattern(pattern_text)

    def validate(value: Any, where: _Where, problems: list[ShapeProblem]) -> int:
        if not isinstance(value, str):
            return _REJECTED
        size = len(value)
        if size < floor or size > ceiling:
            allowed = _range(low, high, "characters")
            problems.append(ShapeProblem(_render(where), f"has {size} characters", value, allowed))
        if enum and value not in enum:
            problems.append(
                ShapeProblem(_render(where), "is not one of the API's values", value, listed)
            )
        if pattern is not None and not pattern.fullmatch(value):
            problems.append(
                ShapeProblem(
                    _render(where), "does not match the API pattern", value, f"/{pattern_text}/"
                )
            )
        return _REJECTED if size < botocore_floor else 0

    return validate


def _integer(shape: Shape) -> _Validator:
    low, high = shape.metadata.get("min"), shape.metadata.get("max")
    botocore_low = botocore_minimum(shape)
    floor = -math.inf if low is None else low
    ceiling = math.inf if high is None else high

    def validate(value: Any, where: _Where, problems: list[ShapeProblem]) -> int:
        if not isinstance(value, int):
            return _REJECTED
        if value < floor or value > ceiling:
            allowed = _range(low, high, "")
            problems.append(
                ShapeProblem(_render(where), "is out of the API's range", value, allowed)
            )
        return _REJECTED if botocore_low is not None and value < botocore_low else 0

    return validate


def _number(shape: Shape) -> _Validator:
    botocore_low = botocore_minimum(shape)

    def validate(value: Any, where: _Where, problems: list[ShapeProblem]) -> int:
        if not isinstance(value, float | Decimal | int):
            return _REJECTED
        return _REJECTED if botocore_low is not None and value < botocore_low else 0

    return validate


def _boolean(value: Any, where: _Where, problems: list[ShapeProblem]) -> int:
    return 0 if isinstance(value, bool) else _REJECTED


def _undecided(value: Any, where: _Where, problems: list[ShapeProblem]) -> int:
    return _UNDECIDED


def _also_undecided(validator: _Validator) -> _Validator:
    def validate(value: Any, where: _Where, problems: list[ShapeProblem]) -> int:
        return validator(value, where, problems) | _UNDECIDED

    return validate


@lru_cache(maxsize=1)
def _request_validator() -> _Validator:
    return _ValidatorBuilder().build(input_shape())


def validate_request(request: Mapping[str, Any]) -> RequestVerdict:
    """One pass over the request: the model's broken constraints and botocore's verdict.

    botocore's report is the one ``ParamValidator`` writes; it runs only for a request the
    pass found it rejects (or one with a construct only botocore judges).
    """
    problems: list[ShapeProblem] = []
    flags = _request_validator()(request, None, problems)
    report = _botocore_report(request) if flags else None
    return RequestVerdict(problems, report)


def check_request(request: Mapping[str, Any]) -> list[ShapeProblem]:
    """Every maximum, minimum, pattern and enum in the model that the request breaks."""
    problems: list[ShapeProblem] = []
    _request_validator()(request, None, problems)
    return problems


def botocore_validation_errors(request: Mapping[str, Any]) -> str | None:
    """botocore's own report for the request, or ``None`` when it passes."""
    if not _request_validator()(request, None, []):
        return None
    return _botocore_report(request)


def _botocore_report(request: Mapping[str, Any]) -> str | None:
    from botocore.validate import ParamValidator

    report = ParamValidator().validate(request, input_shape())
    return report.generate_report() if report.has_errors() else None


__all__ = [
    "RequestVerdict",
    "ShapeProblem",
    "botocore_validation_errors",
    "check_request",
    "validate_request",
]
