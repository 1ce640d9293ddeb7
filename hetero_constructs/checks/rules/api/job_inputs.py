"""The API's limits on a job's names and inputs: instance types, job and group names,
channels, S3 URIs, hyperparameters and environment, read from botocore's service model."""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from hetero_constructs.checks.base import Finding, rule
from hetero_constructs.checks.helpers import (
    MODEL_SOURCE,
    S3_URI,
    channel_path,
    count_finding,
    enum_finding,
    misfits_count,
    misfits_string,
    misses_enum,
    one_of,
    string_finding,
)
from hetero_constructs.request import hyperparameters as hp
from hetero_constructs.request.builder import request_of
from hetero_constructs.request.context import RuleContext
from hetero_constructs.service import model as service_model

_HP_KEY, _HP_VALUE = "HyperParameters.{key}", "HyperParameters.{}"
_ENV_KEY, _ENV_VALUE = "Environment.{key}", "Environment.{}"
_CHANNELS = "InputDataConfig"
_S3 = "InputDataConfig[].DataSource.S3DataSource"
_JOB_NAME = "TrainingJobName"
_GROUP_NAME = "ResourceConfig.InstanceGroups[].InstanceGroupName"
_CHANNEL_NAME = f"{_CHANNELS}[].ChannelName"
_CONTENT_TYPE = f"{_CHANNELS}[].ContentType"
_INPUT_MODE = "AlgorithmSpecification.TrainingInputMode"
# (spec field, TrainingChannel attribute, model path, what) of each channel enum option.
_CHANNEL_ENUMS = (
    ("s3_data_type", "s3_data_type", f"{_S3}.S3DataType", "S3 data type"),
    ("distribution", "distribution", f"{_S3}.S3DataDistributionType", "S3 data distribution"),
    ("input_mode", "input_mode", f"{_CHANNELS}[].InputMode", "input mode"),
    ("compression", "compression", f"{_CHANNELS}[].CompressionType", "compression"),
    ("record_wrapping", "record_wrapping", f"{_CHANNELS}[].RecordWrapperType", "record wrapper"),
)


@rule(
    "API-INSTANCE-TYPE",
    source=f"{MODEL_SOURCE} TrainingInstanceType enum",
    example='"instance_type": "ml.p4d.24xlarge"',
)
def instance_type(context: RuleContext) -> Iterator[Finding]:
    """Every instance type is in the API's ``TrainingInstanceType`` enum."""
    allowed = service_model.training_instance_types()
    spec = context.spec
    typed: list[tuple[int | None, str]] = [
        (index, group.instance_type)
        for index, group in enumerate(spec.instance_groups)
        if group.instance_type not in allowed
    ]
    if spec.instance_type is not None and spec.instance_type not in allowed:
        typed.append((None, spec.instance_type))
    for index, value in typed:
        if context.known(value):
            path = "instance_type" if index is None else f"instance_groups[{index}].instance_type"
            close = sorted(t for t in allowed if t.split(".")[:2] == value.split(".")[:2])
            nearest = nearest_instance_type(value, close or sorted(allowed))
            yield Finding(
                path,
                "This is not a SageMaker training instance type.",
                value,
                one_of(close) if close else one_of(allowed),
                f"did you mean {nearest}?" if nearest else "use e.g. ml.p4d.24xlarge",
            )


def nearest_instance_type(value: str, candidates: list[str]) -> str | None:
    """The candidate of the same family closest in size to what was typed (a typo's fix)."""
    family = value.split(".")[:2]
    same_family = [c for c in candidates if c.split(".")[:2] == family] or candidates
    matches = difflib.get_close_matches(value, same_family, n=1, cutoff=0.6)
    return matches[0] if matches else None


@rule(
    "API-JOB-NAME",
    source=f"{MODEL_SOURCE} TrainingJobName (length and pattern)",
    example='job_name: "llama-finetune-2026-11-30"',
)
def training_job_name(context: RuleContext) -> Iterator[Finding]:
    """The job name (or base job name) fits the API's length and pattern."""
    spec = context.spec
    names = [("job_name", spec.job_name), ("base_job_name", spec.base_job_name)]
    deployed = context.deployment.job_name
    if deployed not in (None, spec.job_name):
        names.append(("job_name", deployed))
    for path, value in names:
        if misfits_string(context, value, _JOB_NAME):
            yield string_finding(path, value, _JOB_NAME, "training job name")


@rule(
    "API-GROUP-NAME",
    source=f"{MODEL_SOURCE} InstanceGroupName",
    example='{"name": "gpu", ...}',
)
def instance_group_name(context: RuleContext) -> Iterator[Finding]:
    """Instance group names fit the API's length and pattern."""
    for index, group in enumerate(context.spec.instance_groups):
        if misfits_string(context, group.name, _GROUP_NAME):
            path = f"instance_groups[{index}].name"
            yield string_finding(path, group.name, _GROUP_NAME, "instance group name")


@rule(
    "API-CHANNELS",
    source=f"{MODEL_SOURCE} InputDataConfig (list bounds), ChannelName; service: names are unique",
    example='channels: {"train": {...}, "validation": {...}}',
)
def channels(context: RuleContext) -> Iterator[Finding]:
    """Channel names fit the API, are unique, and there are at most 20 channels in all.

    The count includes the ``code`` channel that network isolation adds, whose name is then
    reserved.
    """
    spec = context.spec
    seen: set[str] = set()
    for channel in spec.channels:
        if misfits_string(context, channel.name, _CHANNEL_NAME):
            yield string_finding(
                channel_path(channel.name), channel.name, _CHANNEL_NAME, "channel name"
            )
        if channel.name in seen:
            yield Finding(
                channel_path(channel.name),
                "Two channels share a name.",
                channel.name,
                "unique channel names",
                "rename one of the channels",
            )
        seen.add(channel.name)
        if spec.enable_network_isolation and channel.name == hp.CODE_CHANNEL:
            yield Finding(
                channel_path(channel.name),
                "With network isolation the 'code' channel carries the training code.",
                channel.name,
                "any other channel name",
                "rename the channel",
            )
    total = list(spec.channels) + ([None] if spec.enable_network_isolation else [])
    if total and misfits_count(total, _CHANNELS):
        yield count_finding("channels", total, _CHANNELS, "channels")


@rule(
    "API-CHANNEL-OPTIONS",
    source=f"{MODEL_SOURCE} S3DataType, S3DataDistributionType, TrainingInputMode, "
    "CompressionType, RecordWrapperType enums",
    example='"distribution": "ShardedByS3Key", "input_mode": "FastFile"',
)
def channel_options(context: RuleContext) -> Iterator[Finding]:
    """Channel and job options take the API's enum values."""
    input_mode = context.spec.input_mode
    if misses_enum(context, input_mode, _INPUT_MODE):
        yield enum_finding("input_mode", input_mode, _INPUT_MODE, "input mode")
    for channel in context.spec.channels:
        for field, attribute, model_path, what in _CHANNEL_ENUMS:
            value = getattr(channel, attribute)
            if misses_enum(context, value, model_path):
                yield enum_finding(channel_path(channel.name, field), value, model_path, what)
        if misfits_string(context, channel.content_type, _CONTENT_TYPE):
            path = channel_path(channel.name, "content_type")
            yield string_finding(path, channel.content_type, _CONTENT_TYPE, "content type")


@rule(
    "API-S3-URI",
    source=f"{MODEL_SOURCE} S3Uri pattern and length",
    example='"s3_uri": "s3://my-bucket/datasets/train/"',
)
def s3_uris(context: RuleContext) -> Iterator[Finding]:
    """Channel, output and checkpoint locations are S3 URIs the API accepts."""
    spec = context.spec
    for channel in spec.channels:
        if misfits_string(context, channel.s3_uri, S3_URI):
            path = channel_path(channel.name, "s3_uri")
            yield string_finding(path, channel.s3_uri, S3_URI, "channel S3 URI")
    if misfits_string(context, spec.checkpoint_s3_uri, S3_URI):
        yield string_finding("checkpoint_s3_uri", spec.checkpoint_s3_uri, S3_URI, "checkpoint URI")
    output = context.output_path
    if output is None:
        yield Finding(
            "output_path",
            "No output location is given for the model artifacts.",
            None,
            "an s3:// URI",
            'set output_path, e.g. "s3://my-bucket/training-output"',
        )
    elif misfits_string(context, output, S3_URI):
        yield string_finding("output_path", output, S3_URI, "output path")


@rule(
    "API-HYPERPARAMETERS",
    source=f"{MODEL_SOURCE} HyperParameters (map bounds, key and value lengths)",
    example='hyperparameters: {"epochs": 10, "lr": 0.001}',
)
def hyperparameters(context: RuleContext) -> Iterator[Finding]:
    """Hyperparameters, counting the ``sagemaker_*`` keys the job needs, fit the API's bounds.

    User keys cannot start with ``sagemaker_``: those keys drive the training toolkit.
    """
    user = context.spec.hyperparameters
    for key in user:
        if key.startswith("sagemaker_"):
            yield Finding(
                f"hyperparameters.{key}",
                "Keys starting with 'sagemaker_' are reserved for the training toolkit.",
                key,
                "keys not starting with sagemaker_",
                "rename the hyperparameter",
            )
    encoded = request_of(context)["HyperParameters"]
    if misfits_count(encoded, "HyperParameters"):
        added = len(encoded) - len(user)
        room = (service_model.bounds("HyperParameters").maximum or 0) - added
        finding = count_finding("hyperparameters", encoded, "HyperParameters", "hyperparameters")
        yield Finding(
            finding.path,
            f"{finding.problem} ({added} of them are the toolkit's own keys.)",
            finding.value,
            finding.allowed,
            f"remove hyperparameters: at most {room} of your own fit",
        )
    for key, value in encoded.items():
        if key in user and context.known(user[key]):
            if misfits_string(context, key, _HP_KEY):
                yield string_finding(f"hyperparameters.{key}", key, _HP_KEY, "hyperparameter key")
            if misfits_string(context, value, _HP_VALUE):
                yield string_finding(
                    f"hyperparameters.{key}", value, _HP_VALUE, "JSON-encoded hyperparameter value"
                )


@rule(
    "API-ENVIRONMENT",
    source=f"{MODEL_SOURCE} TrainingEnvironmentMap (bounds, key pattern, value length)",
    example='environment: {"NCCL_DEBUG": "WARN"}',
)
def environment(context: RuleContext) -> Iterator[Finding]:
    """Environment variables fit the API: count, name pattern, value length."""
    env = request_of(context).get("Environment", {})
    if misfits_count(env, "Environment"):
        yield count_finding("environment", env, "Environment", "variables")
    for key, value in context.spec.environment.items():
        if misfits_string(context, key, _ENV_KEY):
            yield string_finding(f"environment.{key}", key, _ENV_KEY, "environment variable name")
        if misfits_string(context, value, _ENV_VALUE):
            yield string_finding(f"environment.{key}", value, _ENV_VALUE, "environment value")


__all__ = [
    "channel_options",
    "channels",
    "environment",
    "hyperparameters",
    "instance_group_name",
    "instance_type",
    "nearest_instance_type",
    "s3_uris",
    "training_job_name",
]
