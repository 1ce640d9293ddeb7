"""The one-pass request validator against what it replaces: botocore's ``ParamValidator`` plus
a second walk over the model's maximums, minimums, patterns and enums.

Requests are generated from the CreateTrainingJob input shape itself: valid members, values at
and beyond every bound, wrong types, unknown and missing members, tuples for lists and
read-only mappings for dicts.
"""

from __future__ import annotations

import string
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

from botocore.model import ListShape, MapShape, Shape, StructureShape
from botocore.validate import ParamValidator
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hetero_constructs.service import request_validator
from hetero_constructs.service.model import input_shape
from hetero_constructs.service.patterns import compile_pattern
from hetero_constructs.service.request_validator import ShapeProblem

MAX_DEPTH = 4

# -- The reference: the checks the validator replaced, as they were --------------------------


def reference_walk(shape: Shape, value: Any, path: str) -> Iterator[ShapeProblem]:
    """The former ``service_model._walk``, kept here verbatim as the oracle."""
    meta = shape.metadata
    if isinstance(shape, StructureShape) and isinstance(value, Mapping):
        for name, item in value.items():
            member = shape.members.get(name)
            if member is not None:
                yield from reference_walk(member, item, f"{path}.{name}" if path else name)
        return
    if isinstance(shape, ListShape) and isinstance(value, list):
        yield from _size(meta, len(value), value, path, "items")
        for index, item in enumerate(value):
            yield from reference_walk(shape.member, item, f"{path}[{index}]")
        return
    if isinstance(shape, MapShape) and isinstance(value, Mapping):
        yield from _size(meta, len(value), value, path, "entries")
        for key, item in value.items():
            yield from reference_walk(shape.key, key, f"{path} key {key!r}")
            yield from reference_walk(shape.value, item, f"{path}.{key}")
        return
    if shape.type_name == "string" and isinstance(value, str):
        yield from _size(meta, len(value), value, path, "characters")
        enum = getattr(shape, "enum", None)
        if enum and value not in enum:
            listed = ", ".join(enum[:8]) + (f", ... ({len(enum)} values)" if len(enum) > 8 else "")
            yield ShapeProblem(path, "is not one of the API's values", value, listed)
        pattern = meta.get("pattern")
        if pattern and compile_pattern(pattern).fullmatch(value) is None:
            yield ShapeProblem(path, "does not match the API pattern", value, f"/{pattern}/")
        return
    if shape.type_name in ("integer", "long") and isinstance(value, int):
        low, high = meta.get("min"), meta.get("max")
        if (low is not None and value < low) or (high is not None and value > high):
            yield ShapeProblem(path, "is out of the API's range", value, _range(low, high, ""))


def _range(low: int | None, high: int | None, unit: str) -> str:
    suffix = f" {unit}" if unit else ""
    if high is None:
        return f"at least {low}{suffix}"
    if low is None:
        return f"at most {high}{suffix}"
    return f"{low} to {high}{suffix}"


def _size(
    meta: Mapping[str, Any], size: int, value: Any, path: str, unit: str
) -> Iterator[ShapeProblem]:
    low, high = meta.get("min"), meta.get("max")
    if (low is not None and size < low) or (high is not None and size > high):
        yield ShapeProblem(path, f"has {size} {unit}", value, _range(low, high, unit))


def reference(request: Any) -> tuple[list[ShapeProblem], str | None]:
    report = ParamValidator().validate(request, input_shape())
    return (
        list(reference_walk(input_shape(), request, "")),
        report.generate_report() if report.has_errors() else None,
    )


# -- Requests generated from the model ---------------------------------------------------------

WRONG_SCALARS = (None, 0, -1, 1.5, True, "x", b"x", [], {})
_PATTERNS: dict[str, st.SearchStrategy[str]] = {}


def _lengths(shape: Shape) -> list[int]:
    """Sizes around the shape's bounds (and small ones), the interesting lengths."""
    low, high = shape.metadata.get("min"), shape.metadata.get("max")
    points = {0, 1, 2}
    for bound in (low, high):
        if bound is not None:
            points |= {bound - 1, bound, bound + 1}
    return sorted(n for n in points if 0 <= n <= 2100)


def _within(shape: Shape, sizes: list[int]) -> list[int]:
    low, high = shape.metadata.get("min", 0), shape.metadata.get("max")
    return [n for n in sizes if n >= low and (high is None or n <= high)] or [low]


class Requests:
    """Draws values for shapes; a wild request gets wrong types and broken bounds now and then,
    a tame one only values within the model (so that many requests pass)."""

    def __init__(self, draw: st.DrawFn, wild: bool) -> None:
        self.draw = draw
        self.wild = wild

    def rarely(self) -> bool:
        return self.wild and self.draw(st.integers(0, 7)) == 7

    def pick(self, choices: list[Any] | tuple[Any, ...] | str) -> Any:
        return choices[self.draw(st.integers(0, len(choices) - 1))]

    def value(self, shape: Shape, depth: int) -> Any:
        if self.rarely():
            return self.pick(WRONG_SCALARS)
        if isinstance(shape, StructureShape):
            return self.structure(shape, depth)
        if isinstance(shape, ListShape | MapShape):
            sizes = [n for n in _lengths(shape) if n <= (110 if self.wild else 3)]
            if not self.wild:
                sizes = _within(shape, sizes) if depth < MAX_DEPTH else []
            size = self.pick(sizes) if sizes else 0
            if isinstance(shape, ListShape):
                items = [self.value(shape.member, depth + 1) for _ in range(size)]
                return tuple(items) if self.rarely() else items
            entries: dict[Any, Any] = {}
            for _ in range(size):
                key = self.value(shape.key, depth + 1)
                if isinstance(key, str | int | float | bytes) or key is None:
                    entries[key] = self.value(shape.value, depth + 1)
            return MappingProxyType(entries) if self.rarely() else entries
        if shape.type_name == "string":
            return self.string(shape)
        if shape.type_name in ("integer", "long"):
            return self.integer(shape)
        return self.draw(st.booleans()) if shape.type_name == "boolean" else None

    def string(self, shape: Shape) -> Any:
        enum = getattr(shape, "enum", None)
        pattern = shape.metadata.get("pattern")
        choices = (["enum"] * 3 if enum else []) + (["pattern"] * 3 if pattern else [])
        choices += ["length", "text"] if self.wild or not choices else []
        choice = self.pick(choices)
        if choice == "enum":
            return self.pick(enum)
        if choice == "pattern":
            if pattern not in _PATTERNS:
                matching = st.from_regex(compile_pattern(pattern), fullmatch=True)
                _PATTERNS[pattern] = matching.filter(lambda text: len(text) < 3000)
            return self.draw(_PATTERNS[pattern])
        sizes = _lengths(shape) if self.wild else _within(shape, _lengths(shape))
        if choice == "length":
            return self.pick(string.ascii_letters + "-_ :/\u00e9\n") * self.pick(sizes)
        return self.draw(st.text(min_size=min(sizes), max_size=max(min(sizes), 12)))

    def integer(self, shape: Shape) -> Any:
        low, high = shape.metadata.get("min"), shape.metadata.get("max")
        edges = [0, 1, -1, 2**31] if self.wild else []
        for bound in (low, high):
            if bound is not None:
                edges += [bound - 1, bound, bound + 1] if self.wild else [bound]
        if not self.wild:
            return (
                self.draw(st.integers(low, high))
                if self.draw(st.booleans())
                else self.pick(edges or [1])
            )
        return (
            self.pick(edges)
            if self.draw(st.booleans())
            else self.draw(st.integers() | st.booleans())
        )

    def structure(self, shape: StructureShape, depth: int) -> Any:
        required = list(shape.required_members)
        names: list[str] = []
        if depth < MAX_DEPTH:
            members = list(shape.members)
            names = list(
                dict.fromkeys(self.pick(members) for _ in range(self.draw(st.integers(0, 3))))
            )
        if not self.rarely():  # usually every required member is there
            names = required + [n for n in names if n not in required]
        result: dict[Any, Any] = {n: self.value(shape.members[n], depth + 1) for n in names}
        if self.rarely():
            result[self.pick(["Unknown", "trainingJobName", 3])] = None
        return MappingProxyType(result) if depth and self.rarely() else result


@st.composite
def requests(draw: st.DrawFn) -> Any:
    return Requests(draw, wild=draw(st.booleans())).structure(input_shape(), 0)


SETTINGS = settings(
    max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), database=None
)


@SETTINGS
@given(requests())
def test_validator_agrees_with_param_validator_and_the_former_walk(request: Any) -> None:
    problems, report = reference(request)
    verdict = request_validator.validate_request(request)
    assert verdict.problems == problems
    assert verdict.botocore_report == report
    assert request_validator.check_request(request) == problems
    assert request_validator.botocore_validation_errors(request) == report
