"""Small pieces several rules share."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from hetero_constructs.core import service_model
from hetero_constructs.core.context import RuleContext
from hetero_constructs.core.rules.base import Finding


def one_of(values: Iterable[str]) -> str:
    listed = sorted(values)
    if len(listed) > 12:
        return f"one of {len(listed)} values, e.g. " + ", ".join(listed[:6]) + ", ..."
    return ", ".join(listed)


def model_string(
    context: RuleContext, path: str, value: Any, model_path: str, what: str
) -> Iterator[Finding]:
    """A string against the length and pattern the API model gives for ``model_path``."""
    if not context.known(value) or not isinstance(value, str):
        return
    if service_model.matches(model_path, value):
        return
    bounds = service_model.bounds(model_path)
    allowed = bounds.describe_length()
    if bounds.pattern and bounds.pattern not in (".*", ".+"):
        allowed += f" matching /{bounds.pattern}/"
    yield Finding(
        path=path,
        problem=f"The {what} does not fit the CreateTrainingJob API ({model_path}).",
        value=value,
        allowed=allowed,
        fix=f"rename it to fit: {allowed}",
    )


def model_enum(
    context: RuleContext, path: str, value: Any, model_path: str, what: str
) -> Iterator[Finding]:
    if not context.known(value):
        return
    allowed = service_model.bounds(model_path).enum
    if value not in allowed:
        yield Finding(
            path=path,
            problem=f"The {what} is not a value the CreateTrainingJob API accepts ({model_path}).",
            value=value,
            allowed=one_of(allowed),
            fix=f"use one of: {one_of(allowed)}",
        )


def model_count(path: str, items: Any, model_path: str, what: str) -> Iterator[Finding]:
    """A list or map size against the API model's bounds."""
    bounds = service_model.bounds(model_path)
    size = len(items)
    low = bounds.minimum or 0
    if size < low or (bounds.maximum is not None and size > bounds.maximum):
        allowed = bounds.describe_length(what)
        yield Finding(
            path=path,
            problem=f"There are {size} {what}; the CreateTrainingJob API takes {allowed}.",
            value=size,
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


def s3_uri_finding(context: RuleContext, path: str, value: Any, what: str) -> Iterator[Finding]:
    yield from model_string(
        context, path, value, "InputDataConfig[].DataSource.S3DataSource.S3Uri", what
    )
