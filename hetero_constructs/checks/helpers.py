"""Small pieces several rules share.

The checks run on every spec, so each one tests the value first and builds its path and
message only when there is something to report.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sized
from typing import Any

from hetero_constructs.checks.base import Finding
from hetero_constructs.request.context import RuleContext
from hetero_constructs.service import model as service_model

# The source of every rule that reads a limit of the API from botocore's model.
MODEL_SOURCE = "botocore data/sagemaker/2017-07-24/service-2.json"


def one_of(values: Iterable[str]) -> str:
    listed = sorted(values)
    if len(listed) > 12:
        return f"one of {len(listed)} values, e.g. " + ", ".join(listed[:6]) + ", ..."
    return ", ".join(listed)


def misfits_string(context: RuleContext, value: Any, model_path: str) -> bool:
    """A concrete string that breaks the length or pattern the API model gives ``model_path``."""
    if not isinstance(value, str):
        return False
    fits = service_model.string_fits(model_path)
    return not fits(value) and not context.is_token(value)


def string_finding(path: str, value: Any, model_path: str, what: str) -> Finding:
    """The finding for a string that ``misfits_string``."""
    bounds = service_model.bounds(model_path)
    allowed = bounds.describe_length()
    if bounds.pattern and bounds.pattern not in (".*", ".+"):
        allowed += f" matching /{bounds.pattern}/"
    return Finding(
        path=path,
        problem=f"The {what} does not fit the CreateTrainingJob API ({model_path}).",
        value=value,
        allowed=allowed,
        fix=f"rename it to fit: {allowed}",
    )


def model_string(
    context: RuleContext, path: str, value: Any, model_path: str, what: str
) -> Iterator[Finding]:
    """A string against the length and pattern the API model gives for ``model_path``."""
    if misfits_string(context, value, model_path):
        yield string_finding(path, value, model_path, what)


def misses_enum(context: RuleContext, value: Any, model_path: str) -> bool:
    """A concrete value that is not in the API model's enum for ``model_path``."""
    if value is None:
        return False
    # The enum holds strings only: any other value misses it (and may not be hashable).
    missing = not isinstance(value, str) or value not in service_model.enum_values(model_path)
    return missing and not context.is_token(value)


def enum_finding(path: str, value: Any, model_path: str, what: str) -> Finding:
    """The finding for a value that ``misses_enum``."""
    allowed = service_model.bounds(model_path).enum
    return Finding(
        path=path,
        problem=f"The {what} is not a value the CreateTrainingJob API accepts ({model_path}).",
        value=value,
        allowed=one_of(allowed),
        fix=f"use one of: {one_of(allowed)}",
    )


def model_enum(
    context: RuleContext, path: str, value: Any, model_path: str, what: str
) -> Iterator[Finding]:
    if misses_enum(context, value, model_path):
        yield enum_finding(path, value, model_path, what)


def misfits_count(items: Sized, model_path: str) -> bool:
    """A list or map whose size is outside the bounds the API model gives ``model_path``."""
    bounds = service_model.bounds(model_path)
    size = len(items)
    return size < (bounds.minimum or 0) or (bounds.maximum is not None and size > bounds.maximum)


def count_finding(path: str, items: Sized, model_path: str, what: str) -> Finding:
    """The finding for a list or map that ``misfits_count``."""
    allowed = service_model.bounds(model_path).describe_length(what)
    return Finding(
        path=path,
        problem=f"There are {len(items)} {what}; the CreateTrainingJob API takes {allowed}.",
        value=len(items),
        allowed=allowed,
        fix=f"use {allowed}",
    )


def group_path(context: RuleContext, name: str) -> str:
    for index, group in enumerate(context.spec.instance_groups):
        if group.name == name:
            return f"instance_groups[{index}]"
    return "instance_groups"


def channel_path(name: str, field: str = "") -> str:
    return f"channels.{name}" + (f".{field}" if field else "")


S3_URI = "InputDataConfig[].DataSource.S3DataSource.S3Uri"


__all__ = [
    "MODEL_SOURCE",
    "S3_URI",
    "channel_path",
    "count_finding",
    "enum_finding",
    "group_path",
    "misfits_count",
    "misfits_string",
    "misses_enum",
    "model_enum",
    "model_string",
    "one_of",
    "string_finding",
]
