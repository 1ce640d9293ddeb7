"""SageMaker's API schema, read from botocore's service model.

botocore's own ``ParamValidator`` checks only types, required members and minimums. The
maximums, patterns and enums are in the same model; this module reads them so that the rules
can enforce them. Nothing here is copied by hand.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

import botocore.loaders
import botocore.session
from botocore.model import ListShape, MapShape, Shape, StructureShape
from botocore.validate import ParamValidator

OPERATION = "CreateTrainingJob"

# Java regex classes in the model that Python's ``re`` lacks, mapped to the nearest class
# that Python accepts inside a character set. ``\w`` is a little wider than letters and
# numbers (it also takes ``_``), which never rejects what the API accepts. Separators
# (``\p{Z}``) are listed exactly: ``\s`` would also take tabs and newlines, which the API's
# tag pattern forbids.
_JAVA_CLASSES = {r"\p{L}": r"\w", r"\p{N}": r"\w", r"\p{M}": r"\w"}


@cache
def _separators() -> str:
    """Unicode category Z (space, line and paragraph separators), escaped for a set."""
    # Every separator is in the Basic Multilingual Plane.
    found = (chr(code) for code in range(0x10000))
    return "".join(re.escape(char) for char in found if unicodedata.category(char)[0] == "Z")


@cache
def compile_pattern(pattern: str) -> re.Pattern[str]:
    """Compile a model pattern for a full match (the model's patterns carry no anchors)."""
    for java, python in _JAVA_CLASSES.items():
        pattern = pattern.replace(java, python)
    if r"\p{Z}" in pattern:
        pattern = pattern.replace(r"\p{Z}", _separators())
    return re.compile(pattern, re.DOTALL)


@lru_cache(maxsize=1)
def _service_model() -> Any:
    return botocore.session.get_session().get_service_model("sagemaker")


@lru_cache(maxsize=1)
def input_shape() -> StructureShape:
    shape = _service_model().operation_model(OPERATION).input_shape
    assert isinstance(shape, StructureShape)
    return shape


def shape_at(path: str) -> Shape:
    """The shape at a dotted path under the CreateTrainingJob input; ``[]`` steps into lists.

    ``"ResourceConfig.InstanceGroups[].InstanceGroupName"`` names the group-name string shape;
    ``{}`` steps into a map's values and ``{key}`` into its keys.
    """
    return _shape_at(path)


@cache
def _shape_at(path: str) -> Shape:
    shape: Shape = input_shape()
    for step in path.split("."):
        into_list = step.endswith("[]")
        name = step.removesuffix("[]")
        if name in ("{}", "{key}"):
            assert isinstance(shape, MapShape)
            shape = shape.value if name == "{}" else shape.key
            continue
        assert isinstance(shape, StructureShape), f"{path}: {name} is not under a structure"
        shape = shape.members[name]
        if into_list:
            assert isinstance(shape, ListShape)
            shape = shape.member
    return shape


@dataclass(frozen=True)
class Bounds:
    """The constraints the model puts on one shape."""

    minimum: int | None
    maximum: int | None
    pattern: str | None
    enum: tuple[str, ...]

    def describe_length(self, unit: str = "characters") -> str:
        low = self.minimum if self.minimum is not None else 0
        if self.maximum is None:
            return f"at least {low} {unit}"
        return f"{low} to {self.maximum} {unit}"


def bounds(path: str) -> Bounds:
    return _bounds(path)


@cache
def _bounds(path: str) -> Bounds:
    shape = shape_at(path)
    meta = shape.metadata
    return Bounds(
        minimum=meta.get("min"),
        maximum=meta.get("max"),
        pattern=meta.get("pattern"),
        enum=tuple(getattr(shape, "enum", None) or ()),
    )


def matches(path: str, value: str) -> bool:
    """True when ``value`` fits the pattern and length bounds of the shape at ``path``."""
    shape_bounds = bounds(path)
    if shape_bounds.minimum is not None and len(value) < shape_bounds.minimum:
        return False
    if shape_bounds.maximum is not None and len(value) > shape_bounds.maximum:
        return False
    if shape_bounds.pattern is not None:
        return compile_pattern(shape_bounds.pattern).fullmatch(value) is not None
    return True


@lru_cache(maxsize=1)
def training_instance_types() -> frozenset[str]:
    """The ``TrainingInstanceType`` enum."""
    return frozenset(bounds("ResourceConfig.InstanceType").enum)


@cache
def dns_suffix(region: str) -> str | None:
    """The partition DNS suffix of a region (``amazonaws.com``, ``amazonaws.com.cn``, ...)."""
    endpoints = botocore.loaders.create_loader().load_data("endpoints")
    for partition in endpoints["partitions"]:
        if region in partition.get("regions", {}) or re.match(partition["regionRegex"], region):
            return str(partition["dnsSuffix"])
    return None


# -- Whole-request checks --------------------------------------------------------------------


@dataclass(frozen=True)
class ShapeProblem:
    path: str
    problem: str
    value: Any
    allowed: str


def check_request(request: Mapping[str, Any]) -> list[ShapeProblem]:
    """Every maximum, minimum, pattern and enum in the model that the request breaks."""
    return list(_walk(input_shape(), request, ""))


def _walk(shape: Shape, value: Any, path: str) -> Iterator[ShapeProblem]:
    meta = shape.metadata
    if isinstance(shape, StructureShape) and isinstance(value, Mapping):
        for name, item in value.items():
            member = shape.members.get(name)
            if member is not None:
                yield from _walk(member, item, f"{path}.{name}" if path else name)
        return
    if isinstance(shape, ListShape) and isinstance(value, list):
        yield from _size(meta, len(value), value, path, "items")
        for index, item in enumerate(value):
            yield from _walk(shape.member, item, f"{path}[{index}]")
        return
    if isinstance(shape, MapShape) and isinstance(value, Mapping):
        yield from _size(meta, len(value), value, path, "entries")
        for key, item in value.items():
            yield from _walk(shape.key, key, f"{path} key {key!r}")
            yield from _walk(shape.value, item, f"{path}.{key}")
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


def botocore_validation_errors(request: Mapping[str, Any]) -> str | None:
    """botocore's own report for the request, or ``None`` when it passes."""
    report = ParamValidator().validate(request, input_shape())
    return report.generate_report() if report.has_errors() else None
