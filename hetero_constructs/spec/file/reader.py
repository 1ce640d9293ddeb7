"""The declarative spec file: the SageMaker Python SDK estimator's arguments, as JSON or YAML.

An SDK user moves an estimator config over unchanged: ``instance_groups`` become a list of
``{name, instance_type, instance_count}``, ``fit()`` inputs become ``channels`` and
``distribution`` is exactly the dict the SDK takes, with group names as strings. Unlike the
SDK, unknown keys are violations, not silently ignored.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hetero_constructs.spec import training
from hetero_constructs.spec.cluster import InstanceFallback, InstanceGroup, TrainingChannel
from hetero_constructs.spec.fields import (
    DEPTH_RULE,
    REQUIRED_RULE,
    TYPE_RULE,
    UNKNOWN_KEY_RULE,
    as_tuple,
    is_integer,
)
from hetero_constructs.spec.file.distribution import read_distribution
from hetero_constructs.spec.file.rules import DUPLICATE_KEY_RULE, MAX_SPEC_FILE_BYTES
from hetero_constructs.spec.file.text import file_violation, parse_text, structure_violations
from hetero_constructs.spec.file.walk import Reader
from hetero_constructs.spec.schema import (
    MAPPING,
    STRINGS,
    VALUE,
    SpecField,
    file_keys,
    schema_of,
)
from hetero_constructs.spec.training import (
    CHANNELS_SHAPE,
    DISTRIBUTION_SHAPE,
    GROUPS_SHAPE,
    METRICS_SHAPE,
    TAGS_SHAPE,
    TrainingMetric,
    TrainingSpec,
)
from hetero_constructs.spec.violations import SpecValidationError, Violation

# The keys of each mapping of a spec file, from the schema (``spec.schema``); the top level's
# are the spec class's (``training.TrainingSpec``, looked up on each read: a test may extend
# its fields).
_GROUP_KEYS = file_keys(InstanceGroup)
_FALLBACK_KEYS = file_keys(InstanceFallback)
_CHANNEL_KEYS = file_keys(TrainingChannel)
_METRIC_KEYS = file_keys(TrainingMetric)
_TAG_KEYS = frozenset({"Key", "Value"})  # the API's Tag


@dataclass(frozen=True)
class SpecReading:
    """A parsed spec file: the spec (when its types allow building it) and the file's problems.

    Unknown keys do not stop the spec from being built, so their violations come together
    with the semantic rules' ones; type and required-key problems do.
    """

    spec: TrainingSpec | None
    violations: tuple[Violation, ...]

    def spec_or_raise(self) -> TrainingSpec:
        if self.spec is None or self.violations:
            raise SpecValidationError(self.violations)
        return self.spec


def read_spec(data: Any, *, base_dir: str | os.PathLike[str] | None = None) -> SpecReading:
    """Parse a spec-file mapping, collecting every problem of the file itself.

    ``base_dir`` anchors a relative local ``source_dir`` (the spec file's folder). Any data
    gives violations, never a Python error: unknown keys at any depth (with the likely key),
    repeated keys, nesting beyond ``MAX_NESTING_DEPTH``, wrong types, oversized integers.
    """
    structure = structure_violations(data)
    if any(v.rule == DEPTH_RULE for v in structure):
        return SpecReading(None, tuple(structure))
    spec_class = training.TrainingSpec
    spec_fields = schema_of(spec_class)
    reader = Reader()
    reader.violations.extend(structure)
    top = reader.mapping("", data, file_keys(spec_class))
    if isinstance(data, Mapping):
        for declared in spec_fields:
            if declared.required_in_file and declared.file_key not in top:
                reader.problem(
                    REQUIRED_RULE,
                    declared.name,
                    f"'{declared.key}' is required.",
                    None,
                    declared.doc,
                    f"add '{declared.key}'",
                )
    fields: dict[str, Any] = {}
    for declared in spec_fields:
        keys = (declared.file_key, *declared.extra_file_keys)
        if any(key in top for key in keys):
            fields[declared.name] = _READERS[declared.type.file_shape](reader, declared, top)
    source_dir = fields.get("source_dir")
    if isinstance(source_dir, str) and base_dir is not None and not source_dir.startswith("s3://"):
        fields["source_dir"] = os.path.normpath(os.path.join(base_dir, source_dir))
    # Built even when parts failed (they are left out), so its own field types are reported
    # too; such a partial spec is never returned.
    blocked = any(v.rule != UNKNOWN_KEY_RULE for v in reader.violations)
    spec = reader.build("", spec_class, **fields) if "entry_point" in fields else None
    return SpecReading(None if blocked else spec, tuple(reader.violations))


def spec_from_dict(data: Any, *, base_dir: str | os.PathLike[str] | None = None) -> TrainingSpec:
    """Parse a spec-file mapping; raises ``SpecValidationError`` listing every problem."""
    return read_spec(data, base_dir=base_dir).spec_or_raise()


def _groups(reader: Reader, declared: SpecField, top: Mapping[str, Any]) -> Any:
    groups = []
    for index, raw in enumerate(reader.sequence(declared.name, top[declared.key])):
        path = f"{declared.name}[{index}]"
        item = reader.mapping(path, raw, _GROUP_KEYS)
        missing = _missing(InstanceGroup, item)
        for key in missing:
            reader.problem(
                REQUIRED_RULE,
                f"{path}.{key}",
                f"An instance group needs '{key}'.",
                None,
                _listed(InstanceGroup),
                f"add '{key}'",
            )
        if isinstance(raw, Mapping) and not missing:
            known = _given(InstanceGroup, item)
            if "fallbacks" in known:
                known["fallbacks"] = _fallbacks(
                    reader, f"{path}.fallbacks", known["fallbacks"], known.get("instance_count", 1)
                )
            group = reader.build(path, InstanceGroup, **known)
            if group is not None:
                groups.append(group)
    return tuple(groups)


def _given(cls: type, item: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of ``cls`` a file mapping gives, by field name."""
    return {
        d.name: item[d.file_key]
        for d in schema_of(cls)
        if d.file_key is not None and d.file_key in item
    }


def _missing(cls: type, item: Mapping[str, Any]) -> list[str]:
    """The keys a file mapping for ``cls`` needs and lacks."""
    return [
        d.file_key
        for d in schema_of(cls)
        if d.required_in_file and d.file_key is not None and d.file_key not in item
    ]


def _listed(cls: type) -> str:
    return ", ".join(d.file_key for d in schema_of(cls) if d.file_key is not None)


def _fallbacks(
    reader: Reader, path: str, value: Any, group_count: Any
) -> tuple[InstanceFallback, ...]:
    """``[{"instance_type": ..., "instance_count": ...}, ...]``: tried in order on capacity.

    A fallback without ``instance_count`` keeps its group's count, as a bare type does in the
    Python API.
    """
    fallbacks = []
    for index, raw in enumerate(reader.sequence(path, value)):
        item_path = f"{path}[{index}]"
        item = reader.mapping(item_path, raw, _FALLBACK_KEYS)
        missing = _missing(InstanceFallback, item)
        for key in missing:
            reader.problem(
                REQUIRED_RULE,
                f"{item_path}.{key}",
                f"A fallback needs '{key}'.",
                None,
                _listed(InstanceFallback),
                f"add '{key}'",
            )
        if missing:
            continue
        known = _given(InstanceFallback, item)
        if "instance_count" not in known and is_integer(group_count):
            # A group count of the wrong type is reported at the group alone.
            known["instance_count"] = group_count
        fallback = reader.build(item_path, InstanceFallback, **known)
        if fallback is not None:
            fallbacks.append(fallback)
    return tuple(fallbacks)


def _channels(reader: Reader, declared: SpecField, top: Mapping[str, Any]) -> Any:
    channels = []
    for name, raw in reader.mapping(declared.name, top[declared.key], None).items():
        path = f"{declared.name}.{name}"
        if isinstance(raw, str):  # the SDK accepts a bare S3 URI as a channel
            raw = {"s3_uri": raw}
        item = {
            key: value
            for key, value in reader.mapping(path, raw, _CHANNEL_KEYS).items()
            if key in _CHANNEL_KEYS
        }
        if "s3_data" in item:
            if "s3_uri" in item:
                reader.problem(
                    TYPE_RULE,
                    f"{path}.s3_data",
                    "Both s3_uri and s3_data are set.",
                    item["s3_data"],
                    "one of s3_uri, s3_data (the SDK's name)",
                    "keep only s3_uri",
                )
            item["s3_uri"] = item.pop("s3_data")
        if "s3_uri" not in item:
            reader.problem(
                REQUIRED_RULE,
                f"{path}.s3_uri",
                "A channel needs its S3 location.",
                None,
                "an s3:// URI",
                "add s3_uri",
            )
            continue
        channel = reader.build(path, TrainingChannel, name=name, **item)
        if channel is not None:
            channels.append(channel)
    return tuple(channels)


def _tags(reader: Reader, declared: SpecField, top: Mapping[str, Any]) -> Any:
    value = top[declared.key]
    if not isinstance(value, list):
        return reader.mapping(declared.name, value, None)
    # The SDK's form: [{"Key": ..., "Value": ...}], both strings (the API's Tag).
    tags: dict[str, str] = {}
    for index, raw in enumerate(value):
        path = f"{declared.name}[{index}]"
        item = reader.mapping(path, raw, _TAG_KEYS)
        if not isinstance(raw, Mapping):
            continue
        complete = True
        for field in sorted(_TAG_KEYS):
            if field not in item:
                complete = False
                reader.problem(
                    REQUIRED_RULE,
                    f"{path}.{field}",
                    f"A tag needs its {field}.",
                    None,
                    '{"Key": "team", "Value": "ml"}',
                    f"add {field}",
                )
            elif not isinstance(item[field], str):
                complete = False
                reader.problem(
                    TYPE_RULE,
                    f"{path}.{field}",
                    f"A tag's {field} is a string.",
                    item[field],
                    "a string",
                    f"give {field} as a string",
                )
        if not complete:
            continue
        key = item["Key"]
        if key in tags:
            reader.problem(
                DUPLICATE_KEY_RULE,
                f"{path}.Key",
                "Another tag has the same Key; the API would reject the request.",
                key,
                "each tag key once",
                "remove one of the tags",
            )
        tags[key] = item["Value"]
    return tags


def _metrics(reader: Reader, declared: SpecField, top: Mapping[str, Any]) -> Any:
    metrics = []
    for index, raw in enumerate(reader.sequence(declared.name, top[declared.key])):
        path = f"{declared.name}[{index}]"
        item = reader.mapping(path, raw, _METRIC_KEYS)
        given = {d.name: item.get(d.file_key) for d in schema_of(TrainingMetric) if d.file_key}
        metric = reader.build(path, TrainingMetric, **given)
        if metric is not None:
            metrics.append(metric)
    return tuple(metrics)


def _value(reader: Reader, declared: SpecField, top: Mapping[str, Any]) -> Any:
    return top[declared.key]  # checked when the spec is built


def _strings(reader: Reader, declared: SpecField, top: Mapping[str, Any]) -> Any:
    value = top[declared.key]
    return as_tuple(value) if isinstance(value, list) else value


def _mapping(reader: Reader, declared: SpecField, top: Mapping[str, Any]) -> Any:
    return reader.mapping(declared.name, top[declared.key], None)


def _distribution(reader: Reader, declared: SpecField, top: Mapping[str, Any]) -> Any:
    return read_distribution(reader, top.get("distribution", {}), top.get("smddp_collective"))


# Each file shape of the schema's fields (``FieldType.file_shape``) and its reader.
_READERS: dict[str, Callable[[Reader, SpecField, Mapping[str, Any]], Any]] = {
    VALUE: _value,
    STRINGS: _strings,
    MAPPING: _mapping,
    GROUPS_SHAPE: _groups,
    CHANNELS_SHAPE: _channels,
    DISTRIBUTION_SHAPE: _distribution,
    TAGS_SHAPE: _tags,
    METRICS_SHAPE: _metrics,
}


def from_sdk_form(declared: SpecField, value: Any) -> tuple[Any, list[Violation]]:
    """A ``TrainingSpec`` field given as the SageMaker Python SDK (and a spec file) writes it
    (``metric_definitions=[{"Name": ..., "Regex": ...}]``, ``distribution={"torch_distributed":
    {"enabled": True}}``, ``channels={"train": "s3://..."}``, ``tags=[{"Key": ..., "Value":
    ...}]``, instance groups as dicts): its value objects, and what is wrong with it."""
    reader = Reader()
    converted = _READERS[declared.type.file_shape](reader, declared, {declared.key: value})
    return converted, reader.violations


training.install_sdk_form_reader(from_sdk_form)


# -- Reading files: every limit is enforced while reading, before anything is expanded -------


def read_spec_file(path: str | os.PathLike[str]) -> SpecReading:
    """Read a JSON (or ``.yaml``/``.yml``) spec file; raises only for problems of the file.

    Only a regular file of at most ``MAX_SPEC_FILE_BYTES`` is opened (never a FIFO or device).
    """
    file = Path(path)
    try:
        info = file.stat()
        if not stat.S_ISREG(info.st_mode):
            raise file_violation(
                "The spec is not a regular file.",
                str(file),
                "a JSON or YAML file",
                "point at the spec file itself",
            )
        if info.st_size > MAX_SPEC_FILE_BYTES:
            raise file_violation(
                "The spec file is too large to be a spec.",
                info.st_size,
                f"at most {MAX_SPEC_FILE_BYTES:,} bytes",
                "keep data out of the spec (channels point at it)",
            )
        with file.open("rb") as stream:
            text = stream.read(MAX_SPEC_FILE_BYTES + 1).decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise file_violation(
            "The spec file cannot be read.", str(file), "a readable UTF-8 file", str(error)
        ) from None
    data = parse_text(text, yaml_syntax=file.suffix.lower() in (".yaml", ".yml"), source=str(file))
    return read_spec(data, base_dir=file.parent)


def load_spec_file(path: str | os.PathLike[str]) -> TrainingSpec:
    """Read a spec file; raises ``SpecValidationError`` listing every problem of the file."""
    return read_spec_file(path).spec_or_raise()


__all__ = [
    "SpecReading",
    "from_sdk_form",
    "load_spec_file",
    "read_spec",
    "read_spec_file",
    "spec_from_dict",
]
