"""The declarative spec file: the SageMaker Python SDK estimator's arguments, as JSON or YAML.

An SDK user moves an estimator config over unchanged: ``instance_groups`` become a list of
``{name, instance_type, instance_count}``, ``fit()`` inputs become ``channels`` and
``distribution`` is exactly the dict the SDK takes, with group names as strings. Unlike the
SDK, unknown keys are violations, not silently ignored.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from hetero_constructs.spec.fields import (
    DEPTH_RULE,
    MAX_INTEGER_LITERAL,
    MAX_NESTING_DEPTH,
    NUMBER_RULE,
    REQUIRED_RULE,
    TYPE_RULE,
    UNKNOWN_KEY_RULE,
    KeyedTwice,
    OversizedInteger,
    as_tuple,
    is_integer,
)
from hetero_constructs.spec.training import (
    DistributedTraining,
    Framework,
    InstanceFallback,
    InstanceGroup,
    Launcher,
    LauncherConfig,
    MetricDefinition,
    SmddpCollective,
    TrainingChannel,
    TrainingSpec,
)
from hetero_constructs.spec.violations import (
    SpecValidationError,
    Violation,
    did_you_mean,
    shorten,
    unknown_key_fix,
)

# Limits on what a spec file may cost to read, whatever its content.
MAX_SPEC_FILE_BYTES = 1024 * 1024
DUPLICATE_KEY_RULE = "SPEC-DUPLICATE-KEY"
# A YAML document expands to at most this many nodes, each alias counted as what it repeats.
MAX_YAML_NODES = 5_000
YAML_SIZE_RULE = "SPEC-YAML-SIZE"

# Rules of the file itself, for the catalogue (the semantic rules live in core.rules).
SPEC_FILE_RULES = (
    (
        "SPEC-FILE",
        f"The file is a regular file of at most {MAX_SPEC_FILE_BYTES:,} bytes and parses as JSON "
        "(or YAML for .yaml/.yml) to a mapping; a syntax error names the file, line and column.",
        "this library",
    ),
    (
        DEPTH_RULE,
        f"Lists and maps nest at most {MAX_NESTING_DEPTH} levels (a spec needs about 6). A file "
        "is checked before it is parsed further, so deep nesting never exhausts Python's "
        "recursion limit.",
        "this library",
    ),
    (
        YAML_SIZE_RULE,
        f"A YAML document has at most {MAX_YAML_NODES:,} nodes, each alias counted as the nodes "
        "it repeats, and no alias inside its own anchor. Refused while the file is read, before "
        "anything is expanded, so an alias bomb costs milliseconds.",
        "this library",
    ),
    (
        DUPLICATE_KEY_RULE,
        "Every key appears once in its map (JSON and YAML parsers would silently keep the last "
        "one; YAML merge keys `<<` are not duplicates).",
        "this library",
    ),
    (
        UNKNOWN_KEY_RULE,
        "Every key, at any depth, is one the library knows (the SDK silently ignores unknown "
        "keys, so a typo like `procesess_per_host` would be lost); the fix names the likely key.",
        "this library",
    ),
    (
        REQUIRED_RULE,
        "Required keys are present: `entry_point`, `framework`.",
        "SDK v2 estimators",
    ),
    (
        TYPE_RULE,
        "Every value has its type: strings, integers, booleans, lists, maps; enum-like strings "
        "(`framework`, `smddp_collective`) exactly as written.",
        "SDK v2 estimators",
    ),
    (
        NUMBER_RULE,
        "Integers, anywhere in the spec, have at most 64 bits (the API's widest). Longer integer "
        f"literals (more than {MAX_INTEGER_LITERAL} characters) are not even converted.",
        "botocore model (integer and long members)",
    ),
    (
        "SPEC-LAUNCHER-ENABLED",
        "Every launcher in `distribution` says `enabled: true` or `false` "
        "(the SDK treats a missing `enabled` as false and silently drops the launcher); "
        "a launcher or `smdistributed.modelparallel` with `enabled: false` carries no other "
        "options (they would be silently ignored).",
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
    "training_plan_arn",
    "keep_alive_period_in_seconds",
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
_TAG_KEYS = frozenset({"Key", "Value"})
_METRIC_KEYS = frozenset({"Name", "Regex"})

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
                TYPE_RULE,
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
        shown = shorten(key, 100)
        self.problem(
            UNKNOWN_KEY_RULE,
            f"{path}.{shown}" if path else shown,
            "Unknown key; the SDK would silently ignore it.",
            key,
            ", ".join(sorted(keys)),
            unknown_key_fix(key, keys),
        )

    def sequence(self, path: str, value: Any) -> list[Any]:
        if not isinstance(value, list | tuple):
            self.problem(
                TYPE_RULE, path, "Expected a list.", value, "a list", f"give '{path}' as a list"
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

    ``base_dir`` anchors a relative local ``source_dir`` (the spec file's folder). Any data
    gives violations, never a Python error: unknown keys at any depth (with the likely key),
    repeated keys, nesting beyond ``MAX_NESTING_DEPTH``, wrong types, oversized integers.
    """
    structure = _structure_violations(data)
    if any(v.rule == DEPTH_RULE for v in structure):
        return SpecReading(None, tuple(structure))
    reader = _Reader()
    reader.violations.extend(structure)
    top = reader.mapping("", data, _TOP_LEVEL)
    fields: dict[str, Any] = {name: top[name] for name in _SCALARS if name in top}
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
        fields["distribution"] = _distribution(
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


def _framework(reader: _Reader, value: Any) -> Framework | None:
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


def _groups(reader: _Reader, value: Any) -> tuple[InstanceGroup, ...]:
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
    reader: _Reader, path: str, value: Any, group_count: Any
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


def _channels(reader: _Reader, value: Any) -> tuple[TrainingChannel, ...]:
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
        _disabled_options(reader, path, options, _LAUNCHER_KEYS, "launcher")
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
    if not enabled:
        _disabled_options(reader, path, options, _MODEL_PARALLEL_KEYS, "model parallelism")
        return None
    return reader.mapping(f"{path}.parameters", options.get("parameters", {}), None)


def _disabled_options(
    reader: _Reader, path: str, options: Mapping[str, Any], keys: frozenset[str], what: str
) -> None:
    """Options under ``enabled: false`` would be silently ignored: each is a violation."""
    for key in options:
        if key in keys - {"enabled"}:  # an unknown key is reported as one already
            reader.problem(
                "SPEC-LAUNCHER-ENABLED",
                f"{path}.{key}",
                f"The {what} is disabled (enabled: false), so this option would be ignored.",
                options[key],
                "options only under enabled: true",
                f'remove {key}, or set "enabled": true under {path}',
            )


def _collectives(reader: _Reader, value: Any) -> tuple[SmddpCollective, ...]:
    if value is None:
        return ()
    items = value if isinstance(value, list) else [value]
    names = [c.value for c in SmddpCollective]
    collectives = []
    for item in items:
        if isinstance(item, str) and item in names:
            collectives.append(SmddpCollective(item))
            continue
        meant = did_you_mean(item, names) if isinstance(item, str) else None
        reader.problem(
            TYPE_RULE,
            "smddp_collective",
            "Unknown SMDDP collective.",
            item,
            "AllReduce or AllGather (exactly as written)",
            f"did you mean '{meant}'?"
            if meant
            else 'set smddp_collective to "AllReduce" or "AllGather"',
        )
    return tuple(collectives)


def _tags(reader: _Reader, value: Any) -> Any:
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


def _metrics(reader: _Reader, value: Any) -> tuple[MetricDefinition, ...]:
    metrics = []
    for index, raw in enumerate(reader.sequence("metric_definitions", value)):
        path = f"metric_definitions[{index}]"
        item = reader.mapping(path, raw, _METRIC_KEYS)
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


# -- Reading files: every limit is enforced while reading, before anything is expanded -------


def _file_violation(
    problem: str, value: Any, allowed: str, fix: str, *, rule: str = "SPEC-FILE"
) -> SpecValidationError:
    return SpecValidationError([Violation(rule, "", problem, value, allowed, fix)])


def _located(
    rule: str, where: str, text: str, line: int, column: int, problem: str, allowed: str
) -> SpecValidationError:
    """A violation at a position of the file (1-based line and column), quoting that line."""
    lines = text.splitlines()
    quoted = shorten(lines[line - 1].strip(), 80) if 0 < line <= len(lines) else ""
    return _file_violation(
        f"{where}, line {line}, column {column}: {problem}",
        quoted,
        allowed,
        f"fix {where} at line {line}, column {column}",
        rule=rule,
    )


def _position(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


# A JSON string (or one left open to the end of the text) or a bracket. Every character is
# matched at most once, so this scan is linear whatever the text.
_JSON_STRUCTURE = re.compile(r'"(?:[^"\\]|\\[\s\S])*+(?:"|\\?\Z)|[\[\]{}]')


def _json_too_deep(text: str) -> int | None:
    """The offset of the first bracket nested beyond ``MAX_NESTING_DEPTH``, if any."""
    depth = 0
    for match in _JSON_STRUCTURE.finditer(text):
        token = match.group()
        if token in ("[", "{"):
            depth += 1
            if depth > MAX_NESTING_DEPTH:
                return match.start()
        elif token in ("]", "}"):
            depth -= 1
    return None


def _json_integer(literal: str) -> int | OversizedInteger:
    if len(literal) > MAX_INTEGER_LITERAL:
        return OversizedInteger(len(literal.lstrip("-")))
    return int(literal)


def _json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = dict(pairs)
    if len(result) == len(pairs):
        return result
    seen: set[str] = set()
    repeated = []
    for key, _ in pairs:
        if key in seen:
            repeated.append((key, None, None))
        seen.add(key)
    keyed_twice = KeyedTwice(result)
    keyed_twice.duplicates = tuple(repeated)
    return keyed_twice


def _parse_json(text: str, where: str) -> Any:
    deep = _json_too_deep(text)
    if deep is not None:
        line, column = _position(text, deep)
        raise _located(
            DEPTH_RULE,
            where,
            text,
            line,
            column,
            f"lists and maps are nested more than {MAX_NESTING_DEPTH} levels deep.",
            f"at most {MAX_NESTING_DEPTH} levels of lists and maps",
        )
    try:
        return json.loads(text, parse_int=_json_integer, object_pairs_hook=_json_object)
    except json.JSONDecodeError as error:
        raise _located(
            "SPEC-FILE",
            where,
            text,
            error.lineno,
            error.colno,
            f"not valid JSON: {error.msg}.",
            "JSON (or YAML for .yaml/.yml files)",
        ) from None
    except (ValueError, RecursionError) as error:
        raise _file_violation(
            f"{where}: not valid JSON.", str(error), "JSON", "fix the file"
        ) from None


def _parse_yaml(text: str, where: str) -> Any:
    import yaml  # only YAML files need it; the submit Lambda reads no files

    from hetero_constructs.spec.file.safe_yaml import YamlLimitError, load

    try:
        return load(text)
    except YamlLimitError as error:
        raise _located(
            error.rule, where, text, error.line, error.column, error.problem, error.allowed
        ) from None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        problem = ", ".join(part for part in (error.context, error.problem) if part)
        if mark is None:
            raise _file_violation(
                f"{where}: not valid YAML: {problem}.", None, "YAML", "fix the file"
            ) from None
        if "nesting depth" in problem:  # libyaml's own limit, met before ours in flow style
            raise _located(
                DEPTH_RULE,
                where,
                text,
                mark.line + 1,
                mark.column + 1,
                f"lists and maps are nested more than {MAX_NESTING_DEPTH} levels deep.",
                f"at most {MAX_NESTING_DEPTH} levels of lists and maps",
            ) from None
        raise _located(
            "SPEC-FILE",
            where,
            text,
            mark.line + 1,
            mark.column + 1,
            f"not valid YAML: {problem}.",
            "YAML (the safe subset: no Python tags)",
        ) from None
    except yaml.YAMLError as error:  # e.g. a character YAML does not allow
        position = getattr(error, "position", None)
        if isinstance(position, int):
            line, column = _position(text, position)
            raise _located(
                "SPEC-FILE", where, text, line, column, f"not valid YAML: {error}.", "YAML"
            ) from None
        raise _file_violation(
            f"{where}: not valid YAML: {error}.", None, "YAML", "fix the file"
        ) from None


def parse_text(text: str, *, yaml_syntax: bool, source: str | None = None) -> Any:
    """Parse spec text; raises ``SpecValidationError`` when it cannot be read safely.

    Syntax errors give ``source`` (the file), line and column. Nesting beyond
    ``MAX_NESTING_DEPTH`` and YAML documents beyond ``MAX_YAML_NODES`` (aliases counted as
    what they repeat) are refused before they are expanded. Repeated keys do not stop parsing:
    ``read_spec`` reports them with their paths.
    """
    where = source or "the spec"
    if len(text) > MAX_SPEC_FILE_BYTES:
        raise _file_violation(
            f"{where} is too large to be a spec.",
            len(text),
            f"at most {MAX_SPEC_FILE_BYTES:,} characters",
            "keep data out of the spec (channels point at it)",
        )
    return _parse_yaml(text, where) if yaml_syntax else _parse_json(text, where)


def read_spec_file(path: str | os.PathLike[str]) -> SpecReading:
    """Read a JSON (or ``.yaml``/``.yml``) spec file; raises only for problems of the file.

    Only a regular file of at most ``MAX_SPEC_FILE_BYTES`` is opened (never a FIFO or device).
    """
    file = Path(path)
    try:
        info = file.stat()
        if not stat.S_ISREG(info.st_mode):
            raise _file_violation(
                "The spec is not a regular file.",
                str(file),
                "a JSON or YAML file",
                "point at the spec file itself",
            )
        if info.st_size > MAX_SPEC_FILE_BYTES:
            raise _file_violation(
                "The spec file is too large to be a spec.",
                info.st_size,
                f"at most {MAX_SPEC_FILE_BYTES:,} bytes",
                "keep data out of the spec (channels point at it)",
            )
        with file.open("rb") as stream:
            text = stream.read(MAX_SPEC_FILE_BYTES + 1).decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise _file_violation(
            "The spec file cannot be read.", str(file), "a readable UTF-8 file", str(error)
        ) from None
    data = parse_text(text, yaml_syntax=file.suffix.lower() in (".yaml", ".yml"), source=str(file))
    return read_spec(data, base_dir=file.parent)


def load_spec_file(path: str | os.PathLike[str]) -> TrainingSpec:
    """Read a spec file; raises ``SpecValidationError`` listing every problem of the file."""
    return read_spec_file(path).spec_or_raise()


def _structure_violations(data: Any) -> list[Violation]:
    """Repeated keys and nesting beyond ``MAX_NESTING_DEPTH``, each with its path.

    Iterative, so data of any depth (even cyclic data given through the Python API) is
    reported, not a RecursionError.
    """
    violations: list[Violation] = []
    pending: list[tuple[Any, str, int]] = [(data, "", 1)]
    while pending:
        node, path, depth = pending.pop()
        if not isinstance(node, Mapping | list | tuple):
            continue
        if depth > MAX_NESTING_DEPTH:
            violations.append(
                Violation(
                    DEPTH_RULE,
                    path,
                    f"Lists and maps are nested more than {MAX_NESTING_DEPTH} levels deep.",
                    node,
                    f"at most {MAX_NESTING_DEPTH} levels of lists and maps",
                    "flatten the value",
                )
            )
            continue
        if isinstance(node, KeyedTwice) and node.duplicates:
            violations.extend(_duplicate_violations(node, path))
        if isinstance(node, Mapping):
            children = [(child, _key_path(path, key)) for key, child in node.items()]
        else:
            children = [(child, f"{path}[{index}]") for index, child in enumerate(node)]
        pending.extend((child, child_path, depth + 1) for child, child_path in reversed(children))
    return violations


def _key_path(path: str, key: Any) -> str:
    shown = shorten(key if isinstance(key, str) else repr(key), 100)
    return f"{path}.{shown}" if path else shown


def _duplicate_violations(node: KeyedTwice, path: str) -> list[Violation]:
    result = []
    for key, line, column in node.duplicates:
        where = f" (line {line}, column {column})" if line is not None else ""
        result.append(
            Violation(
                DUPLICATE_KEY_RULE,
                _key_path(path, key),
                f"The key is given more than once{where}; a parser would silently keep the "
                "last value.",
                key,
                "each key once per map",
                "remove the repeated key, or merge the two values",
            )
        )
    return result


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
