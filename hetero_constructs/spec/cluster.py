"""The cluster and its data: instance groups, their capacity fallbacks, and input channels.

Value objects with the SageMaker Python SDK's names; like every spec object they only insist
on field types (``SpecValidationError`` with every violation), never on validity.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from hetero_constructs.spec.fields import as_tuple
from hetero_constructs.spec.schema import (
    INTEGER,
    STRING,
    STRING_LIST,
    check_fields,
    objects_type,
    spec_field,
    spec_object,
)

FALLBACKS_SHAPE = "fallbacks"  # file shape: [{"instance_type": ..., "instance_count": ...}]


@spec_object
class InstanceFallback:
    """Another instance type (and count) for a group, for when SageMaker has no capacity."""

    instance_type: str = spec_field(STRING, doc="The instance type to try instead.")
    instance_count: int = spec_field(
        INTEGER, default=1, doc="How many of them (in a spec file: the group's count if unset)."
    )

    def __post_init__(self) -> None:
        check_fields(self)


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


@spec_object
class InstanceGroup:
    """A named set of identical instances in a heterogeneous cluster.

    ``fallbacks`` are tried in order when a job fails for capacity (``CapacityError``, or
    ``ResourceLimitExceeded`` at creation): ``[("ml.p4de.24xlarge", 2), ("ml.p4d.24xlarge", 4)]``.
    Every variant they produce is validated with every rule.
    """

    name: str = spec_field(STRING, sdk="instance_group_name", doc="The group's name.")
    instance_type: str = spec_field(STRING, doc="The instance type of every host of the group.")
    instance_count: int = spec_field(INTEGER, default=1, doc="How many hosts the group has.")
    fallbacks: Sequence[InstanceFallback | tuple[str, int] | str] = spec_field(
        objects_type(
            InstanceFallback,
            "a list of InstanceFallback, (instance type, count) pairs or instance types",
            shape=FALLBACKS_SHAPE,
        ),
        default=(),
        sdk=None,
        doc="Instance types (and counts) tried in order when SageMaker has no capacity.",
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "fallbacks", _fallbacks(self.fallbacks, self.instance_count))
        check_fields(self)


def as_group_names(value: Any) -> Any:
    """Accept InstanceGroup objects where group names are expected, like the SDK does."""
    value = as_tuple(value)
    if isinstance(value, tuple):
        return tuple(v.name if isinstance(v, InstanceGroup) else v for v in value)
    return value


#: Group names; InstanceGroup objects are accepted too and kept by name.
GROUP_NAMES = dataclasses.replace(
    STRING_LIST, name="list of instance group names", normalize=as_group_names
)


@spec_object
class TrainingChannel:
    """An S3 input channel, optionally delivered only to some instance groups."""

    name: str = spec_field(
        STRING, file_key=None, sdk=None, doc="The channel's name (its key in a spec file)."
    )
    s3_uri: str = spec_field(
        STRING,
        sdk="s3_data",
        extra_file_keys=("s3_data",),
        doc="The S3 prefix (or manifest) of the data; s3_data, the SDK's name, is taken too.",
    )
    instance_groups: Sequence[str | InstanceGroup] = spec_field(
        GROUP_NAMES, default=(), doc="The groups that receive it (none: every instance)."
    )
    s3_data_type: str = spec_field(
        STRING, default="S3Prefix", doc="S3Prefix, ManifestFile or AugmentedManifestFile."
    )
    distribution: str = spec_field(
        STRING, default="FullyReplicated", doc="FullyReplicated or ShardedByS3Key."
    )
    input_mode: str | None = spec_field(
        STRING, default=None, doc="The channel's own input mode (File, Pipe, FastFile)."
    )
    content_type: str | None = spec_field(STRING, default=None, doc="The data's MIME type.")
    compression: str | None = spec_field(STRING, default=None, doc="None or Gzip.")
    record_wrapping: str | None = spec_field(STRING, default=None, doc="None or RecordIO.")

    def __post_init__(self) -> None:
        check_fields(self)

    @property
    def group_names(self) -> tuple[str, ...]:
        """The instance groups this channel is sent to (empty: every instance)."""
        return tuple(map(str, self.instance_groups))


__all__ = [
    "FALLBACKS_SHAPE",
    "GROUP_NAMES",
    "InstanceFallback",
    "InstanceGroup",
    "TrainingChannel",
    "as_group_names",
]
