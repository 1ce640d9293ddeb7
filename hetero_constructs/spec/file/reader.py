"""The declarative spec file: the SageMaker Python SDK estimator's arguments, as JSON or YAML.

An SDK user moves an estimator config over unchanged: ``instance_groups`` become a list of
``{name, instance_type, instance_count}``, ``fit()`` inputs become ``channels`` and
``distribution`` is exactly the dict the SDK takes, with group names as strings. Unlike the
SDK, unknown keys are violations, not silently ignored.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
from hetero_constructs.spec.training import Framework, TrainingMetric, TrainingSpec
from hetero_constructs.spec.violations import (
    SpecValidationError,
    Violation,
    did_you_mean,
)

SCALARS = (
    "framework_version",
    "py_version",
    "image_uri",
    "entry_point",
    "source_dir",
    "role",
    "region",
    "output_path",
    "job_name",
    "base_job_name",
    "instance_type",
    "instance_count",
    "volume_size",
    "max_run",
    "input_mode",
    "container_log_level",
    "volume_kms_key",
    "output_kms_key",
    "enable_network_isolation",
    "encrypt_inter_container_traffic",
    "use_spot_instances",
    "max_wait",
    "checkpoint_s3_uri",
    "checkpoint_local_path",
    "max_retry_attempts",
    "training_plan_arn",
    "keep_alive_period_in_seconds",
)
_TOP_LEVEL = frozenset(
    (
        *SCALARS,
        "framework",
        "instance_groups",
        "channels",
        "distribution",
        "smddp_collective",
        "hyperparameters",
        "environment",
        "subnets",
        "security_group_ids",
        "tags",
        "acknowledgments",
        "metric_definitions",
    )
)
_GROUP_KEYS = frozenset({"name", "instance_type", "instance_count", "fallbacks"})
_FALLBACK_KEYS = frozenset({"instance_type", "instance_count"})
_CHANNEL_KEYS = frozenset(
    {
        "s3_uri",
        "s3_data",
        "s3_data_type",
        "distribution",
        "input_mode",
        "instance_groups",
        "content_type",
        "compression",
        "record_wrapping",
    }
)
_TAG_KEYS = frozenset({"Key", "Value"})
_METRIC_KEYS = frozenset({"Name", "Regex"})


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
    reader = Reader()
    reader.violations.extend(structure)
    top = reader.mapping("", data, _TOP_LEVEL)
    fields: dict[str, Any] = {name: top[name] for name in SCALARS if name in top}
    for required in ("entry_point", "framework"):
        if required not in top and isinstance(data, Mapping):
            reader.problem(
                REQUIRED_RULE,
                required,
                f"'{required}' is required.",
                None,
                _REQUIRED_HELP[required],
                f"add '{required}'",
            )
    if "framework" in top:
        framework = _framework(reader, top["framework"])
        if framework is not None:
            fields["framework"] = framework
    source_dir = fields.get("source_dir")
    if isinstance(source_dir, str) and base_dir is not None and not source_dir.startswith("s3://"):
        fields["source_dir"] = os.path.normpath(os.path.join(base_dir, source_dir))
    fields["instance_groups"] = _groups(reader, top.get("instance_groups", []))
    fields["channels"] = _channels(reader, top.get("channels", {}))
    if "distribution" in top or "smddp_collective" in top:
        fields["distribution"] = read_distribution(
            reader, top.get("distribution", {}), top.get("smddp_collective")
        )
    for name in ("hyperparameters", "environment", "acknowledgments"):
        if name in top:
            fields[name] = reader.mapping(name, top[name], None)
    for name in ("subnets", "security_group_ids"):
        if name in top:
            fields[name] = as_tuple(top[name]) if isinstance(top[name], list) else top[name]
    if "tags" in top:
        fields["tags"] = _tags(reader, top["tags"])
    if "metric_definitions" in top:
        fields["metric_definitions"] = _metrics(reader, top["metric_definitions"])
    # Built even when parts failed (they are left out), so its own field types are reported
    # too; such a partial spec is never returned.
    blocked = any(v.rule != UNKNOWN_KEY_RULE for v in reader.violations)
    spec = reader.build("", TrainingSpec, **fields) if "entry_point" in fields else None
    return SpecReading(None if blocked else spec, tuple(reader.violations))


def spec_from_dict(data: Any, *, base_dir: str | os.PathLike[str] | None = None) -> TrainingSpec:
    """Parse a spec-file mapping; raises ``SpecValidationError`` listing every problem."""
    return read_spec(data, base_dir=base_dir).spec_or_raise()


_REQUIRED_HELP = {
    "entry_point": "the training script, relative to source_dir",
    "framework": "'pytorch' or 'tensorflow'",
}


def _framework(reader: Reader, value: Any) -> Framework | None:
    if isinstance(value, str) and value in set(Framework):
        return Framework(value)
    names = [f.value for f in Framework]
    meant = did_you_mean(value, names) if isinstance(value, str) else None
    reader.problem(
        TYPE_RULE,
        "framework",
        "Unknown framework.",
        value,
        "'pytorch' or 'tensorflow'",
        f"did you mean '{meant}'?" if meant else "set framework to pytorch or tensorflow",
    )
    return None


def _groups(reader: Reader, value: Any) -> tuple[InstanceGroup, ...]:
    groups = []
    for index, raw in enumerate(reader.sequence("instance_groups", value)):
        path = f"instance_groups[{index}]"
        item = reader.mapping(path, raw, _GROUP_KEYS)
        missing = [k for k in ("name", "instance_type") if k not in item]
        for key in missing:
            reader.problem(
                REQUIRED_RULE,
                f"{path}.{key}",
                f"An instance group needs '{key}'.",
                None,
                "name, instance_type, instance_count",
                f"add '{key}'",
            )
        if isinstance(raw, Mapping) and not missing:
            known = {key: value for key, value in item.items() if key in _GROUP_KEYS}
            if "fallbacks" in known:
                known["fallbacks"] = _fallbacks(
                    reader, f"{path}.fallbacks", known["fallbacks"], known.get("instance_count", 1)
                )
            group = reader.build(path, InstanceGroup, **known)
            if group is not None:
                groups.append(group)
    return tuple(groups)


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
        if "instance_type" not in item:
            reader.problem(
                REQUIRED_RULE,
                f"{item_path}.instance_type",
                "A fallback needs 'instance_type'.",
                None,
                "instance_type, instance_count",
                "add 'instance_type'",
            )
            continue
        known = {key: value for key, value in item.items() if key in _FALLBACK_KEYS}
        if "instance_count" not in known and is_integer(group_count):
            # A group count of the wrong type is reported at the group alone.
            known["instance_count"] = group_count
        fallback = reader.build(item_path, InstanceFallback, **known)
        if fallback is not None:
            fallbacks.append(fallback)
    return tuple(fallbacks)


def _channels(reader: Reader, value: Any) -> tuple[TrainingChannel, ...]:
    channels = []
    for name, raw in reader.mapping("channels", value, None).items():
        path = f"channels.{name}"
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


def _tags(reader: Reader, value: Any) -> Any:
    if not isinstance(value, list):
        return reader.mapping("tags", value, None)
    # The SDK's form: [{"Key": ..., "Value": ...}], both strings (the API's Tag).
    tags: dict[str, str] = {}
    for index, raw in enumerate(value):
        path = f"tags[{index}]"
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


def _metrics(reader: Reader, value: Any) -> tuple[TrainingMetric, ...]:
    metrics = []
    for index, raw in enumerate(reader.sequence("metric_definitions", value)):
        path = f"metric_definitions[{index}]"
        item = reader.mapping(path, raw, _METRIC_KEYS)
        metric = reader.build(path, TrainingMetric, name=item.get("Name"), regex=item.get("Regex"))
        if metric is not None:
            metrics.append(metric)
    return tuple(metrics)


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
    "SCALARS",
    "SpecReading",
    "load_spec_file",
    "read_spec",
    "read_spec_file",
    "spec_from_dict",
]
