"""Values the API model's patterns let through: S3 bucket names and 32-bit integers."""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import Any

from hetero_constructs.checks.base import Finding, rule
from hetero_constructs.checks.helpers import MODEL_SOURCE, channel_path
from hetero_constructs.request.api_fields import INTEGER_RANGES, api_fields
from hetero_constructs.request.context import RuleContext
from hetero_constructs.service import model as service_model
from hetero_constructs.spec.fields import is_integer
from hetero_constructs.spec.s3_uri import BUCKET_NAME_RULES, bucket_name_problem, bucket_of


@rule(
    "API-S3-BUCKET",
    source="S3 user guide: general purpose bucket naming rules (the API's S3Uri pattern "
    "takes any name)",
    example='output_path: "s3://my-training-bucket/output"',
)
def bucket_names(context: RuleContext) -> Iterator[Finding]:
    """Every ``s3://`` location names a general purpose bucket S3 allows.

    Channels, output, checkpoints and an S3 ``source_dir``: 3 to 63 lowercase letters, digits,
    dots and hyphens, beginning and ending with a letter or digit, no two adjacent dots, not an
    IP address, none of the prefixes and suffixes S3 reserves (access point aliases, directory
    and table buckets are not buckets the execution role's grants address). Token bucket names
    are skipped.
    """
    spec = context.spec
    # (channel name or None, spec path, URI); a channel's path is written only for a finding.
    locations: list[tuple[str | None, str, Any]] = [
        (c.name, "s3_uri", c.s3_uri) for c in spec.channels
    ]
    locations += [
        (None, "output_path", context.output_path),
        (None, "checkpoint_s3_uri", spec.checkpoint_s3_uri),
        (None, "source_dir", spec.source_dir),
    ]
    for channel, path, uri in locations:
        bucket = bucket_of(uri)
        if bucket is None or not context.known(bucket):
            continue
        problem = bucket_name_problem(bucket)
        if problem is not None:
            yield Finding(
                path if channel is None else channel_path(channel, path),
                f"'{bucket}' is not an S3 bucket name: {problem}.",
                uri,
                BUCKET_NAME_RULES,
                "name the bucket as created in S3 (bucket names are lowercase)",
            )


_GROUP_COUNT = "ResourceConfig.InstanceGroups[].InstanceCount"


@cache
def _member_range(member: str) -> tuple[str, int, int]:
    """The API member's integer kind and range, read from the model once."""
    kind = service_model.shape_at(member).type_name
    low, high = INTEGER_RANGES[kind]
    return kind, low, high


# Members with a narrower maximum the model does not carry, and the rule that checks it.
_DOCUMENTED_MAXIMUM = {"StoppingCondition.MaxRuntimeInSeconds": "API-STOPPING"}


def integer_fields(cls: type) -> tuple[tuple[str, str], ...]:
    """The fields of spec class ``cls`` sent as an API integer with no narrower maximum, each
    with its member: the type is botocore's; a member with a maximum of its own (in the model,
    or documented) is checked against it (API-REQUEST, the field's own rule) instead."""
    return _integer_fields(cls)


# Cached per class behind a plain function: mypy takes no frozen dataclass class as Hashable.
@cache
def _integer_fields(cls: type) -> tuple[tuple[str, str], ...]:
    return tuple(
        (field.name, field.member)
        for field in api_fields(cls)
        if field.integer
        and service_model.bounds(field.member).maximum is None
        and field.member not in _DOCUMENTED_MAXIMUM
    )


@rule(
    "API-INT-RANGE",
    source=f"{MODEL_SOURCE} (integer members are 32-bit, long members 64-bit); botocore does not "
    "check it",
    example="volume_size: 100, instance_count: 2",
)
def integer_ranges(context: RuleContext) -> Iterator[Finding]:
    """Instance counts, ``volume_size`` and ``max_wait`` fit the API's 32-bit integers.

    ``max_run`` and ``max_retry_attempts`` have narrower bounds of their own (API-STOPPING,
    API-RESOURCES). CDK number tokens are skipped.
    """
    spec = context.spec
    # (group index or None, spec field, value, API member); a group's path is written only for
    # a finding.
    fields: list[tuple[int | None, str, Any, str]] = [
        (index, "instance_count", group.instance_count, _GROUP_COUNT)
        for index, group in enumerate(spec.instance_groups)
    ]
    fields.append((None, "instance_count", spec.instance_count, "ResourceConfig.InstanceCount"))
    fields += [
        (None, name, getattr(spec, name), member) for name, member in integer_fields(type(spec))
    ]
    for index, name, value, member in fields:
        if not context.known(value) or not is_integer(value):
            continue
        kind, low, high = _member_range(member)
        if not low <= value <= high:
            path = name if index is None else f"instance_groups[{index}].{name}"
            yield Finding(
                path,
                f"The value does not fit the API's {kind} field {member}.",
                value,
                f"{low} to {high}",
                f"set {path} to a realistic value",
            )


__all__ = [
    "bucket_names",
    "integer_fields",
    "integer_ranges",
]
