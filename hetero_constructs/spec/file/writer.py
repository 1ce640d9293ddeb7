"""A spec as a spec-file mapping: the inverse of ``reader.read_spec``, defaults left out.

The keys and their order come from the schema (``spec.schema``): each field under its file
key, in declaration order, when it differs from its default (or the file requires it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from enum import Enum
from typing import Any

from hetero_constructs.spec.cluster import FALLBACKS_SHAPE
from hetero_constructs.spec.distribution import DistributedTraining
from hetero_constructs.spec.schema import MAPPING, STRINGS, VALUE, SpecField, schema_of
from hetero_constructs.spec.training import (
    CHANNELS_SHAPE,
    DISTRIBUTION_SHAPE,
    GROUPS_SHAPE,
    METRICS_SHAPE,
    TAGS_SHAPE,
    TrainingSpec,
)


def spec_to_dict(spec: TrainingSpec) -> dict[str, Any]:
    """The spec as a spec-file mapping (the inverse of ``read_spec``); defaults are left out."""
    data: dict[str, Any] = {}
    for declared in schema_of(type(spec)):
        value = getattr(spec, declared.name)
        if _written(declared, value):
            _WRITERS[declared.type.file_shape](data, declared, value)
    return data


def _written(declared: SpecField, value: Any, always: Iterable[str] = ()) -> bool:
    if value is None:
        return False
    return declared.required_in_file or declared.name in always or value != declared.default


def _object_to_dict(item: Any, always: Iterable[str] = ()) -> dict[str, Any]:
    """A spec object's mapping: its keyed fields that differ from their defaults."""
    data: dict[str, Any] = {}
    for declared in schema_of(type(item)):
        value = getattr(item, declared.name)
        if declared.file_key is not None and _written(declared, value, always):
            _WRITERS[declared.type.file_shape](data, declared, value)
    return data


def _value(data: dict[str, Any], declared: SpecField, value: Any) -> None:
    data[declared.key] = value.value if isinstance(value, Enum) else value


def _strings(data: dict[str, Any], declared: SpecField, value: Any) -> None:
    data[declared.key] = list(value)


def _mapping(data: dict[str, Any], declared: SpecField, value: Any) -> None:
    data[declared.key] = dict(value)


def _groups(data: dict[str, Any], declared: SpecField, groups: Any) -> None:
    # The count is written even where it is the default: a group reads as it is sized.
    data[declared.key] = [_object_to_dict(g, always=("instance_count",)) for g in groups]


def _fallbacks(data: dict[str, Any], declared: SpecField, fallbacks: Any) -> None:
    data[declared.key] = [_object_to_dict(f, always=("instance_count",)) for f in fallbacks]


def _channels(data: dict[str, Any], declared: SpecField, channels: Any) -> None:
    data[declared.key] = {c.name: _object_to_dict(c) for c in channels}


def _metrics(data: dict[str, Any], declared: SpecField, metrics: Any) -> None:
    data[declared.key] = [_object_to_dict(m) for m in metrics]


def _distribution(data: dict[str, Any], declared: SpecField, value: DistributedTraining) -> None:
    data[declared.key] = value.to_sdk_dict()
    collectives = [c.value for c in value.smddp_collectives]
    if collectives:
        data["smddp_collective"] = collectives[0] if len(collectives) == 1 else collectives


# Each file shape of the schema's fields (``FieldType.file_shape``) and its writer.
_WRITERS: dict[str, Callable[[dict[str, Any], SpecField, Any], None]] = {
    VALUE: _value,
    STRINGS: _strings,
    MAPPING: _mapping,
    TAGS_SHAPE: _mapping,
    GROUPS_SHAPE: _groups,
    FALLBACKS_SHAPE: _fallbacks,
    CHANNELS_SHAPE: _channels,
    METRICS_SHAPE: _metrics,
    DISTRIBUTION_SHAPE: _distribution,
}

__all__ = [
    "spec_to_dict",
]
