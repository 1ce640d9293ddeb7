"""The cluster and its data: instance groups, their capacity fallbacks, and input channels.

Value objects with the SageMaker Python SDK's names; like every spec object they only insist
on field types (``SpecValidationError`` with every violation), never on validity.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hetero_constructs.spec.fields import (
    FieldChecker,
    as_tuple,
    checked_constructor,
)


@checked_constructor
@dataclass(frozen=True)
class InstanceFallback:
    """Another instance type (and count) for a group, for when SageMaker has no capacity."""

    instance_type: str
    instance_count: int = 1

    def __post_init__(self) -> None:
        check = FieldChecker("InstanceFallback")
        check.string("instance_type", self.instance_type)
        check.integer("instance_count", self.instance_count)
        check.done()


def _fallbacks(value: Any, count: Any) -> Any:
    """``("ml.p4d.24xlarge", 4)`` pairs and bare types (the group's count) as fallbacks."""
    value = as_tuple(value)
    if not isinstance(value, tuple):
        return value
    items: list[Any] = []
    for item in value:
        if isinstance(item, str):
            item = InstanceFallback(item, count)
        elif isinstance(item, tuple | list) and len(item) == 2:
            item = InstanceFallback(*item)
        items.append(item)
    return tuple(items)


@checked_constructor
@dataclass(frozen=True)
class InstanceGroup:
    """A named set of identical instances in a heterogeneous cluster.

    ``fallbacks`` are tried in order when a job fails for capacity (``CapacityError``, or
    ``ResourceLimitExceeded`` at creation): ``[("ml.p4de.24xlarge", 2), ("ml.p4d.24xlarge", 4)]``.
    Every variant they produce is validated with every rule.
    """

    name: str
    instance_type: str
    instance_count: int = 1
    fallbacks: Sequence[InstanceFallback | tuple[str, int] | str] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "fallbacks", _fallbacks(self.fallbacks, self.instance_count))
        check = FieldChecker("InstanceGroup")
        check.string("name", self.name)
        check.string("instance_type", self.instance_type)
        check.integer("instance_count", self.instance_count)
        check.tuple_of(
            "fallbacks",
            self.fallbacks,
            InstanceFallback,
            "a list of InstanceFallback, (instance type, count) pairs or instance types",
        )
        check.done()


def as_group_names(value: Any) -> Any:
    """Accept InstanceGroup objects where group names are expected, like the SDK does."""
    value = as_tuple(value)
    if isinstance(value, tuple):
        return tuple(v.name if isinstance(v, InstanceGroup) else v for v in value)
    return value


@checked_constructor
@dataclass(frozen=True)
class TrainingChannel:
    """An S3 input channel, optionally delivered only to some instance groups."""

    name: str
    s3_uri: str
    # Group names; InstanceGroup objects are accepted too and stored by name.
    instance_groups: Sequence[str | InstanceGroup] = ()
    s3_data_type: str = "S3Prefix"
    distribution: str = "FullyReplicated"
    input_mode: str | None = None
    content_type: str | None = None
    compression: str | None = None
    record_wrapping: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "instance_groups", as_group_names(self.instance_groups))
        check = FieldChecker("TrainingChannel")
        check.string("name", self.name)
        check.string("s3_uri", self.s3_uri)
        check.string_tuple("instance_groups", self.instance_groups)
        check.string("s3_data_type", self.s3_data_type)
        check.string("distribution", self.distribution)
        for name in ("input_mode", "content_type", "compression", "record_wrapping"):
            check.string(name, getattr(self, name), optional=True)
        check.done()

    @property
    def group_names(self) -> tuple[str, ...]:
        """The instance groups this channel is sent to (empty: every instance)."""
        return tuple(map(str, self.instance_groups))


__all__ = [
    "InstanceFallback",
    "InstanceGroup",
    "TrainingChannel",
    "as_group_names",
]
