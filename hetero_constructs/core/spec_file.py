"""The declarative spec file: the SageMaker Python SDK estimator's arguments, as JSON or YAML.

An SDK user moves an estimator config over unchanged: ``instance_groups`` become a list of
``{name, instance_type, instance_count}``, ``fit()`` inputs become ``channels`` and
``distribution`` is exactly the dict the SDK takes, with group names as strings. Unlike the
SDK, unknown keys are violations, not silently ignored.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from hetero_constructs.core.fieldcheck import as_tuple
from hetero_constructs.core.spec import (
    DistributedTraining,
    Framework,
    InstanceGroup,
    Launcher,
    LauncherConfig,
    MetricDefinition,
    SmddpCollective,
    TrainingChannel,
    TrainingSpec,
)
from hetero_constructs.core.violations import SpecValidationError, Violation

# Rules of the file itself, for the catalogue (the semantic rules live in core.rules).
SPEC_FILE_RULES = (
    (
        "SPEC-FILE",
        "The file exists and parses as JSON (or YAML for .yaml/.yml) to a mapping.",
        "this library",
    ),
    (
        "SPEC-UNKNOWN-KEY",
        "Every key is one the library knows (the SDK silently ignores unknown "
        "keys, so a typo like `procesess_per_host` would be lost).",
        "this library",
    ),
    (
        "SPEC-REQUIRED",
        "Required keys are present: `entry_point`, `framework`.",
        "SDK v2 estimators",
    ),
    (
        "SPEC-TYPE",
        "Every value has its type: strings, integers, booleans, lists, maps.",
        "SDK v2 estimators",
    ),
    (
        "SPEC-LAUNCHER-ENABLED",
        "Every launcher in `distribution` says `enabled: true` or `false` "
        "(the SDK treats a missing `enabled` as false and silently drops the launcher).",
        "SDK v2 estimator.py",
    ),
)

_SCALARS = (
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
)
_TOP_LEVEL = frozenset(
    (
        *_SCALARS,
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
        "metric_definitions",
    )
)
_GROUP_KEYS = frozenset({"name", "instance_type", "instance_count"})
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
_LAUNCHER_KEYS = frozenset({"enabled", "processes_per_host", "custom_mpi_options"})
_DISTRIBUTION_KEYS = frozenset(
    {
        "torch_distributed",
        "pytorchddp",
        "smdistributed",
        "mpi",
        "parameter_server",
        "multi_worker_mirrored_strategy",
        "pytorchxla",
        "instance_groups",
    }
)
_SMDISTRIBUTED_KEYS = frozenset({"dataparallel", "modelparallel"})
_MODEL_PARALLEL_KEYS = frozenset({"enabled", "parameters"})

T = TypeVar("T")


class _Reader:
    """Walks the raw data once, collecting every problem instead of stopping at the first."""

    def __init__(self) -> None:
        self.violations: list[Violation] = []

    def problem(
        self, rule: str, path: str, problem: str, value: Any, allowed: str, fix: str
    ) -> None:
        self.violations.append(Violation(rule, path, problem, value, allowed, fix))

    def mapping(self, path: str, value: Any, keys: frozenset[str] | None) -> Mapping[str, Any]:
        """A mapping with string keys; unknown keys are reported (``keys=None``: any key)."""
        if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
            self.problem(
                "SPEC-TYPE",
                path,
                "Expected a mapping with string keys.",
                value,
                "a mapping",
                f"give '{path}' as a mapping",
            )
            return {}
        if keys is not None:
            for key in value:
                if key not in keys:
                    self._unknown(path, key, keys)
        return value

    def _unknown(self, path: str, key: str, keys: frozenset[str]) -> None:
        close = difflib.get_close_matches(key, sorted(keys), n=1)
        fix = f"did you mean '{close[0]}'?" if close else "remove the key"
        where = f"{path}.{key}" if path else key
        self.problem(
            "SPEC-UNKNOWN-KEY",
            where,
            "Unknown key; the SDK would silently ignore it.",
            key,
            ", ".join(sorted(keys)),
            fix,
        )

    def sequence(self, path: str, value: Any) -> list[Any]:
        if not isinstance(value, list | tuple):
            self.problem(
                "SPEC-TYPE", path, "Expected a list.", value, "a list", f"give '{path}' as a list"
            )
            return []
        return list(value)

    def build(self, path: str, factory: Callable[..., T], **fields: Any) -> T | None:
        """Call a value-object constructor; its type violations get the object's path."""
        try:
            return factory(**fields)
        except SpecValidationError as error:
            for v in error.violations:
                full = f"{path}.{v.path}" if path and v.path else (path or v.path)
                quoted, requoted = f"'{v.path}'", f"'{full}'"
                self.violations.append(
                    Violation(
                        v.rule,
                        full,
                        v.problem.replace(quoted, requoted),
                        v.value,
                        v.allowed,
                        v.fix.replace(quoted, requoted),
                    )
                )
            return None


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

    ``base_dir`` anchors a relative local ``source_dir`` (the spec file's folder).
    """
    reader = _Reader()
    top = reader.mapping("", data, _TOP_LEVEL)
    fields: dict[str, Any] = {name: top[name] for name in _SCALARS if name in top}
    for required in ("entry_point", "framework"):
        if required not in top and isinstance(data, Mapping):
            reader.problem(
                "SPEC-REQUIRED",
                required,
                f"'{required}' is required.",
                None,
                _REQUIRED_HELP[required],
                f"add '{required}'",
            )
    if "framework" in top:
        fields["framework"] = _framework(reader, top["framework"])
    source_dir = fields.get("source_dir")
    if isinstance(source_dir, str) and base_dir is not None and not source_dir.startswith("s3://"):
        fields["source_dir"] = os.path.normpath(os.path.join(base_dir, source_dir))
    fields["instance_groups"] = _groups(reader, top.get("instance_groups", []))
    fields["channels"] = _channels(reader, top.get("channels", {}))
    if "distribution" in top or "smddp_collective" in top:
        fields["distribution"] = _distribution(
            reader, top.get("distribution", {}), top.get("smddp_collective")
        )
    for name in ("hyperparameters", "environment"):
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
    blocked = any(v.rule != "SPEC-UNKNOWN-KEY" for v in reader.violations)
    spec = reader.build("", TrainingSpec, **fields) if "entry_point" in fields else None
    return SpecReading(None if blocked else spec, tuple(reader.violations))


def spec_from_dict(data: Any, *, base_dir: str | os.PathLike[str] | None = None) -> TrainingSpec:
    """Parse a spec-file mapping; raises ``SpecValidationError`` listing every problem."""
    return read_spec(data, base_dir=base_dir).spec_or_raise()


_REQUIRED_HELP = {
    "entry_point": "the training script, relative to source_dir",
    "framework": "'pytorch' or 'tensorflow'",
}


def _framework(reader: _Reader, value: Any) -> Any:
    try:
        return Framework(value)
    except ValueError:
        reader.problem(
            "SPEC-TYPE",
            "framework",
            "Unknown framework.",
            value,
            "'pytorch' or 'tensorflow'",
            "set framework to pytorch or tensorflow",
        )
        return value


def _groups(reader: _Reader, value: Any) -> tuple[InstanceGroup, ...]:
    groups = []
    for index, raw in enumerate(reader.sequence("instance_groups", value)):
        path = f"instance_groups[{index}]"
        item = reader.mapping(path, raw, _GROUP_KEYS)
        missing = [k for k in ("name", "instance_type") if k not in item]
        for key in missing:
            reader.problem(
                "SPEC-REQUIRED",
                f"{path}.{key}",
                f"An instance group needs '{key}'.",
                None,
                "name, instance_type, instance_count",
                f"add '{key}'",
            )
        if isinstance(raw, Mapping) and not missing:
            group = reader.build(path, InstanceGroup, **item)
            if group is not None:
                groups.append(group)
    return tuple(groups)


def _channels(reader: _Reader, value: Any) -> tuple[TrainingChannel, ...]:
    channels = []
    for name, raw in reader.mapping("channels", value, None).items():
        path = f"channels.{name}"
        if isinstance(raw, str):  # the SDK accepts a bare S3 URI as a channel
            raw = {"s3_uri": raw}
        item = dict(reader.mapping(path, raw, _CHANNEL_KEYS))
        if "s3_data" in item:
            if "s3_uri" in item:
                reader.problem(
                    "SPEC-TYPE",
                    f"{path}.s3_data",
                    "Both s3_uri and s3_data are set.",
                    item["s3_data"],
                    "one of s3_uri, s3_data (the SDK's name)",
                    "keep only s3_uri",
                )
            item["s3_uri"] = item.pop("s3_data")
        if "s3_uri" not in item:
            reader.problem(
                "SPEC-REQUIRED",
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


def _launcher(reader: _Reader, path: str, kind: Launcher, raw: Any) -> LauncherConfig | None:
    options = reader.mapping(path, raw, _LAUNCHER_KEYS)
    if not isinstance(raw, Mapping):
        return None
    enabled = options.get("enabled")
    if not isinstance(enabled, bool):
        reader.problem(
            "SPEC-LAUNCHER-ENABLED",
            f"{path}.enabled",
            "The launcher does not say whether it is enabled; the SDK would treat it as disabled.",
            enabled,
            "true or false",
            f'set "enabled": true under {path}',
        )
        return None
    if not enabled:
        return None
    return reader.build(
        path,
        LauncherConfig,
        kind=kind,
        processes_per_host=options.get("processes_per_host"),
        custom_mpi_options=options.get("custom_mpi_options"),
    )


def _distribution(reader: _Reader, value: Any, collective: Any) -> DistributedTraining | None:
    raw = reader.mapping("distribution", value, _DISTRIBUTION_KEYS)
    launchers: list[LauncherConfig] = []
    parameters: Mapping[str, Any] | None = None
    for key in (
        "torch_distributed",
        "pytorchddp",
        "mpi",
        "parameter_server",
        "multi_worker_mirrored_strategy",
        "pytorchxla",
    ):
        if key in raw:
            entry = _launcher(reader, f"distribution.{key}", Launcher(key), raw[key])
            if entry is not None:
                launchers.append(entry)
    if "smdistributed" in raw:
        smdistributed = reader.mapping(
            "distribution.smdistributed", raw["smdistributed"], _SMDISTRIBUTED_KEYS
        )
        if "dataparallel" in smdistributed:
            entry = _launcher(
                reader,
                "distribution.smdistributed.dataparallel",
                Launcher.SMDISTRIBUTED_DATA_PARALLEL,
                smdistributed["dataparallel"],
            )
            if entry is not None:
                launchers.append(entry)
        if "modelparallel" in smdistributed:
            parameters = _model_parallel(reader, smdistributed["modelparallel"])
    groups = reader.sequence("distribution.instance_groups", raw.get("instance_groups", []))
    collectives = _collectives(reader, collective)
    return reader.build(
        "distribution",
        DistributedTraining,
        launchers=tuple(launchers),
        instance_groups=tuple(groups),
        model_parallel_parameters=parameters,
        smddp_collectives=collectives,
    )


def _model_parallel(reader: _Reader, value: Any) -> Mapping[str, Any] | None:
    path = "distribution.smdistributed.modelparallel"
    options = reader.mapping(path, value, _MODEL_PARALLEL_KEYS)
    if not isinstance(value, Mapping):
        return None
    enabled = options.get("enabled")
    if not isinstance(enabled, bool):
        reader.problem(
            "SPEC-LAUNCHER-ENABLED",
            f"{path}.enabled",
            "Model parallelism does not say whether it is enabled.",
            enabled,
            "true or false",
            f'set "enabled": true under {path}',
        )
        return None
    return (
        reader.mapping(f"{path}.parameters", options.get("parameters", {}), None)
        if enabled
        else None
    )


def _collectives(reader: _Reader, value: Any) -> tuple[SmddpCollective, ...]:
    if value is None:
        return ()
    items = value if isinstance(value, list) else [value]
    collectives = []
    for item in items:
        try:
            collectives.append(SmddpCollective(item))
        except ValueError:
            reader.problem(
                "SPEC-TYPE",
                "smddp_collective",
                "Unknown SMDDP collective.",
                item,
                "AllReduce or AllGather",
                'set smddp_collective to "AllReduce" or "AllGather"',
            )
    return tuple(collectives)


def _tags(reader: _Reader, value: Any) -> Any:
    if isinstance(value, list):  # the SDK's form: [{"Key": ..., "Value": ...}]
        tags: dict[str, Any] = {}
        for index, raw in enumerate(value):
            item = reader.mapping(f"tags[{index}]", raw, frozenset({"Key", "Value"}))
            if "Key" in item:
                tags[item["Key"]] = item.get("Value", "")
        return tags
    return reader.mapping("tags", value, None)


def _metrics(reader: _Reader, value: Any) -> tuple[MetricDefinition, ...]:
    metrics = []
    for index, raw in enumerate(reader.sequence("metric_definitions", value)):
        path = f"metric_definitions[{index}]"
        item = reader.mapping(path, raw, frozenset({"Name", "Regex"}))
        metric = reader.build(
            path, MetricDefinition, name=item.get("Name"), regex=item.get("Regex")
        )
        if metric is not None:
            metrics.append(metric)
    return tuple(metrics)


def distribution_from_sdk_dict(
    distribution: Mapping[str, Any], *, smddp_collective: str | list[str] | None = None
) -> DistributedTraining:
    """The SDK's ``distribution`` dict as a ``DistributedTraining``; raises on problems."""
    reader = _Reader()
    result = _distribution(reader, distribution, smddp_collective)
    if result is None or reader.violations:
        raise SpecValidationError(reader.violations)
    return result


def parse_text(text: str, *, yaml_syntax: bool) -> Any:
    """Parse spec text; raises ``SpecValidationError`` (SPEC-FILE) when it does not parse."""
    if yaml_syntax:
        import yaml  # only YAML files need it; the submit Lambda reads no files

        errors: tuple[type[Exception], ...] = (ValueError, yaml.YAMLError)
    else:
        errors = (ValueError,)
    try:
        return yaml.safe_load(text) if yaml_syntax else json.loads(text)
    except errors as error:
        raise SpecValidationError(
            [
                Violation(
                    "SPEC-FILE",
                    "",
                    "The spec does not parse.",
                    str(error).splitlines()[0],
                    "YAML" if yaml_syntax else "JSON",
                    "fix the syntax at the position given",
                )
            ]
        ) from None


def read_spec_file(path: str | os.PathLike[str]) -> SpecReading:
    """Read a JSON (or ``.yaml``/``.yml``) spec file; raises only for SPEC-FILE problems."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise SpecValidationError(
            [
                Violation(
                    "SPEC-FILE",
                    "",
                    "The spec file cannot be read.",
                    str(file),
                    "a readable UTF-8 file",
                    str(error),
                )
            ]
        ) from None
    data = parse_text(text, yaml_syntax=file.suffix.lower() in (".yaml", ".yml"))
    return read_spec(data, base_dir=file.parent)


def load_spec_file(path: str | os.PathLike[str]) -> TrainingSpec:
    """Read a spec file; raises ``SpecValidationError`` listing every problem of the file."""
    return read_spec_file(path).spec_or_raise()


def spec_to_dict(spec: TrainingSpec) -> dict[str, Any]:
    """The spec as a spec-file mapping (the inverse of ``read_spec``); defaults are left out."""
    defaults = TrainingSpec(entry_point=spec.entry_point)
    data: dict[str, Any] = {}
    for name in ("framework", *_SCALARS):
        value = getattr(spec, name)
        required = name in ("framework", "entry_point")
        if value is not None and (required or value != getattr(defaults, name)):
            data[name] = value.value if isinstance(value, Framework) else value
    if spec.instance_groups:
        data["instance_groups"] = [
            {"name": g.name, "instance_type": g.instance_type, "instance_count": g.instance_count}
            for g in spec.instance_groups
        ]
    if spec.channels:
        data["channels"] = {c.name: _channel_to_dict(c) for c in spec.channels}
    if spec.distribution is not None:
        data["distribution"] = spec.distribution.to_sdk_dict()
        collectives = [c.value for c in spec.distribution.smddp_collectives]
        if collectives:
            data["smddp_collective"] = collectives[0] if len(collectives) == 1 else collectives
    for name in ("hyperparameters", "environment", "tags"):
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
