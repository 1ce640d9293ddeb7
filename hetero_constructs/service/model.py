"""SageMaker's API schema, read from botocore's service model.

botocore's own ``ParamValidator`` checks only types, required members and minimums. The
maximums, patterns and enums are in the same model; this module reads them so that the rules
can enforce them. Nothing here is copied by hand: shapes, their bounds, enums and patterns
(``patterns`` translates the model's Java regular expressions), the training instance types,
and a region's DNS suffix. The whole-request check is ``request_validator``.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from functools import cache, lru_cache
from typing import NamedTuple

import botocore.loaders
from botocore.model import ListShape, MapShape, ServiceModel, Shape, StructureShape

from hetero_constructs.service.patterns import lazy_pattern

OPERATION = "CreateTrainingJob"

# -- Model patterns are Java regular expressions ------------------------------------------------


# -- The model -----------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _service_model() -> ServiceModel:
    # The loader a botocore session would use: AWS_DATA_PATH first (the Lambda package's model).
    loader = botocore.loaders.create_loader(os.environ.get("AWS_DATA_PATH"))
    return ServiceModel(loader.load_service_model("sagemaker", "service-2"), "sagemaker")


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


class Bounds(NamedTuple):
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


@cache
def bounds(path: str) -> Bounds:
    """The constraints of the shape at ``path`` (see ``shape_at``), read once per path."""
    shape = shape_at(path)
    meta = shape.metadata
    return Bounds(
        minimum=meta.get("min"),
        maximum=meta.get("max"),
        pattern=meta.get("pattern"),
        enum=tuple(getattr(shape, "enum", None) or ()),
    )


def _fits_function(shape_bounds: Bounds) -> Callable[[str], bool]:
    low = shape_bounds.minimum or 0
    high = sys.maxsize if shape_bounds.maximum is None else shape_bounds.maximum
    pattern = lazy_pattern(shape_bounds.pattern)
    if pattern is None:
        return lambda value: low <= len(value) <= high
    return lambda value: low <= len(value) <= high and bool(pattern.fullmatch(value))


@cache
def string_fits(path: str) -> Callable[[str], bool]:
    """The test of a string against the length and pattern at ``path``, built once per path."""
    return _fits_function(bounds(path))


def matches(path: str, value: str) -> bool:
    """True when ``value`` fits the pattern and length bounds of the shape at ``path``."""
    return string_fits(path)(value)


@cache
def enum_values(path: str) -> frozenset[str]:
    """The enum of the shape at ``path`` as a set (empty when the shape has none)."""
    return frozenset(bounds(path).enum)


def training_instance_types() -> frozenset[str]:
    """The ``TrainingInstanceType`` enum."""
    return enum_values("ResourceConfig.InstanceType")


@cache
def dns_suffix(region: str) -> str | None:
    """The partition DNS suffix of a region (``amazonaws.com``, ``amazonaws.com.cn``, ...)."""
    endpoints = botocore.loaders.create_loader().load_data("endpoints")
    for partition in endpoints["partitions"]:
        if region in partition.get("regions", {}) or re.match(partition["regionRegex"], region):
            return str(partition["dnsSuffix"])
    return None


# -- What the whole-request checks read of a shape ----------------------------------------


def size_limits(shape: Shape) -> tuple[int | None, int | None, int, int, int]:
    """min, max, and the three as plain numbers for sizes: min (0), max, botocore's min (0)."""
    low, high = shape.metadata.get("min"), shape.metadata.get("max")
    botocore_low = botocore_minimum(shape)
    return (
        low,
        high,
        0 if low is None else low,
        sys.maxsize if high is None else high,
        0 if botocore_low is None else botocore_low,
    )


def botocore_minimum(shape: Shape) -> int | None:
    """The minimum botocore enforces: the model's, or 1 for host-label members."""
    if "min" in shape.metadata:
        return int(shape.metadata["min"])
    return 1 if shape.serialization.get("hostLabel") else None


def is_header_json(shape: Shape) -> bool:
    """A JSON value in a header: botocore judges it with its own check."""
    serialization = shape.serialization
    return bool(serialization.get("jsonvalue")) and serialization.get("location") == "header"


# -- A clean request, answered by generated code -------------------------------------------------
#
# Most requests break nothing, and the validators above still pay a call and a path step per
# member to find that out. For a request without a problem, one function per structure shape,
# written as Python source on the structure's first use, answers with every check inlined:
# True only when the validators would find no problem and flag nothing. For anything else (a
# problem, a construct only botocore judges, a tuple for a list, a read-only mapping) it says
# False, and the validators run to report it in their order.


__all__ = [
    "OPERATION",
    "Bounds",
    "botocore_minimum",
    "bounds",
    "dns_suffix",
    "enum_values",
    "input_shape",
    "is_header_json",
    "matches",
    "shape_at",
    "size_limits",
    "string_fits",
    "training_instance_types",
]
