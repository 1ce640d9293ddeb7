"""A spec as a spec-file mapping: the inverse of ``reader.read_spec``, defaults left out."""

from __future__ import annotations

from typing import Any

from hetero_constructs.spec.cluster import InstanceFallback, InstanceGroup, TrainingChannel
from hetero_constructs.spec.file.reader import SCALARS
from hetero_constructs.spec.training import Framework, TrainingSpec


def spec_to_dict(spec: TrainingSpec) -> dict[str, Any]:
    """The spec as a spec-file mapping (the inverse of ``read_spec``); defaults are left out."""
    defaults = TrainingSpec(entry_point=spec.entry_point)
    data: dict[str, Any] = {}
    for name in ("framework", *SCALARS):
        value = getattr(spec, name)
        required = name in ("framework", "entry_point")
        if value is not None and (required or value != getattr(defaults, name)):
            data[name] = value.value if isinstance(value, Framework) else value
    if spec.instance_groups:
        data["instance_groups"] = [_group_to_dict(g) for g in spec.instance_groups]
    if spec.channels:
        data["channels"] = {c.name: _channel_to_dict(c) for c in spec.channels}
    if spec.distribution is not None:
        data["distribution"] = spec.distribution.to_sdk_dict()
        collectives = [c.value for c in spec.distribution.smddp_collectives]
        if collectives:
            data["smddp_collective"] = collectives[0] if len(collectives) == 1 else collectives
    for name in ("hyperparameters", "environment", "tags", "acknowledgments"):
        if getattr(spec, name):
            data[name] = dict(getattr(spec, name))
    for name in ("subnets", "security_group_ids"):
        if getattr(spec, name):
            data[name] = list(getattr(spec, name))
    if spec.metric_definitions:
        data["metric_definitions"] = [
            {"Name": m.name, "Regex": m.regex} for m in spec.metric_definitions
        ]
    return data


def _group_to_dict(group: InstanceGroup) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": group.name,
        "instance_type": group.instance_type,
        "instance_count": group.instance_count,
    }
    if group.fallbacks:
        data["fallbacks"] = [
            {"instance_type": f.instance_type, "instance_count": f.instance_count}
            for f in group.fallbacks
            if isinstance(f, InstanceFallback)
        ]
    return data


def _channel_to_dict(channel: TrainingChannel) -> dict[str, Any]:
    defaults = TrainingChannel(name=channel.name, s3_uri=channel.s3_uri)
    data: dict[str, Any] = {"s3_uri": channel.s3_uri}
    if channel.group_names:
        data["instance_groups"] = list(channel.group_names)
    for name in (
        "s3_data_type",
        "distribution",
        "input_mode",
        "content_type",
        "compression",
        "record_wrapping",
    ):
        value = getattr(channel, name)
        if value is not None and value != getattr(defaults, name):
            data[name] = value
    return data


__all__ = [
    "spec_to_dict",
]
