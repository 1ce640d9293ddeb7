"""The CreateTrainingJob API's own limits, read from botocore's service model.

botocore's validator checks only types, required members and minimums, so without these
rules a job name ``bad_name`` or six instance groups would reach the service.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from hetero_constructs.checks.base import Finding, rule
from hetero_constructs.checks.helpers import (
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
from hetero_constructs.service.request_validator import validate_request
from hetero_constructs.spec.fields import is_integer

_MODEL = "botocore data/sagemaker/2017-07-24/service-2.json"
# Documented, not in the model: "maximum 28 days" (StoppingCondition docs).
MAX_RUNTIME_SECONDS = 28 * 24 * 3600
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
_METRICS = "AlgorithmSpecification.MetricDefinitions"


@rule(
    "API-INSTANCE-TYPE",
    source=f"{_MODEL} TrainingInstanceType enum",
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
    source=f"{_MODEL} TrainingJobName (length and pattern)",
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
    source=f"{_MODEL} InstanceGroupName",
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
    source=f"{_MODEL} InputDataConfig (list bounds), ChannelName; service: names are unique",
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
    source=f"{_MODEL} S3DataType, S3DataDistributionType, TrainingInputMode, CompressionType, "
    "RecordWrapperType enums",
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
    source=f"{_MODEL} S3Uri pattern and length",
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
    source=f"{_MODEL} HyperParameters (map bounds, key and value lengths)",
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
    source=f"{_MODEL} TrainingEnvironmentMap (bounds, key pattern, value length)",
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


@rule(
    "API-STOPPING",
    source=f"{_MODEL} StoppingCondition; SageMaker docs: MaxRuntimeInSeconds at most 28 days, "
    "MaxWaitTimeInSeconds >= MaxRuntimeInSeconds and only for managed spot training",
    example="max_run: 86400, use_spot_instances: true, max_wait: 172800",
)
def stopping(context: RuleContext) -> Iterator[Finding]:
    """``max_run`` is 1 s to 28 days; ``max_wait`` is set exactly with spot, and >= ``max_run``."""
    spec = context.spec
    max_run, max_wait = spec.max_run, spec.max_wait
    if context.known(max_run) and not 1 <= max_run <= MAX_RUNTIME_SECONDS:
        yield Finding(
            "max_run",
            "The maximum runtime is out of range.",
            max_run,
            f"1 to {MAX_RUNTIME_SECONDS} seconds (28 days)",
            "set max_run within 28 days",
        )
    if max_wait is not None and not spec.use_spot_instances:
        yield Finding(
            "max_wait",
            "max_wait applies only to managed spot training.",
            max_wait,
            "max_wait only with use_spot_instances: true",
            "remove max_wait, or set use_spot_instances: true",
        )
    if spec.use_spot_instances and max_wait is None:
        yield Finding(
            "max_wait",
            "Managed spot training needs max_wait.",
            None,
            "max_wait >= max_run",
            f"set max_wait, e.g. {2 * max_run}",
        )
    if (
        max_wait is not None
        and context.known(max_wait)
        and context.known(max_run)
        and max_wait < max_run
    ):
        yield Finding(
            "max_wait",
            "max_wait is shorter than max_run.",
            max_wait,
            f"at least max_run ({max_run})",
            f"set max_wait to {max_run} or more",
        )


@rule(
    "API-RESOURCES",
    source=f"{_MODEL} VolumeSizeInGB, RetryStrategy.MaximumRetryAttempts",
    example="volume_size: 100, max_retry_attempts: 3",
)
def resources(context: RuleContext) -> Iterator[Finding]:
    """Volume size is at least 1 GB; retry attempts are within the API's range."""
    spec = context.spec
    if context.known(spec.volume_size) and spec.volume_size < 1:
        yield Finding(
            "volume_size",
            "The ML storage volume must be at least 1 GB.",
            spec.volume_size,
            "an integer >= 1 (GB)",
            "set volume_size, e.g. 30",
        )
    retries = spec.max_retry_attempts
    bounds = service_model.bounds("RetryStrategy.MaximumRetryAttempts")
    if (
        retries is not None
        and context.known(retries)
        and is_integer(retries)
        and not ((bounds.minimum or 0) <= retries <= (bounds.maximum or retries))
    ):
        allowed = f"{bounds.minimum} to {bounds.maximum}"
        yield Finding(
            "max_retry_attempts",
            "The retry count is out of the API's range.",
            retries,
            allowed,
            f"set max_retry_attempts within {allowed}",
        )


@rule(
    "API-NETWORK",
    source=f"{_MODEL} VpcConfig; SDK v2 estimator.py (subnets and security groups together)",
    example='subnets: ["subnet-0abc1234"], security_group_ids: ["sg-0abc1234"]',
    needs=("subnets", "security_group_ids"),
)
def network(context: RuleContext) -> Iterator[Finding]:
    """Subnets and security groups come together, within the API's counts and patterns."""
    spec = context.spec
    if bool(spec.subnets) != bool(spec.security_group_ids):
        missing = "security_group_ids" if spec.subnets else "subnets"
        yield Finding(
            missing,
            "A VPC configuration needs both subnets and security groups.",
            [],
            "both subnets and security_group_ids, or neither",
            f"set {missing} too",
        )
        return
    if not spec.subnets:
        return
    for field, items, member in (
        ("subnets", spec.subnets, "VpcConfig.Subnets"),
        ("security_group_ids", spec.security_group_ids, "VpcConfig.SecurityGroupIds"),
    ):
        if misfits_count(items, member):
            yield count_finding(field, items, member, field.replace("_", " "))
        item_path = f"{member}[]"
        for index, item in enumerate(items):
            if misfits_string(context, item, item_path):
                yield string_finding(f"{field}[{index}]", item, item_path, "VPC id")


@rule(
    "API-KMS-KEYS",
    source=f"{_MODEL} KmsKeyId",
    example='output_kms_key: "arn:aws:kms:us-west-2:111122223333:key/1234abcd-..."',
    needs=("volume_kms_key", "output_kms_key"),
)
def kms_keys(context: RuleContext) -> Iterator[Finding]:
    """KMS keys for the volume and the output fit the API's pattern."""
    spec = context.spec
    for path, value, model_path in (
        ("volume_kms_key", spec.volume_kms_key, "ResourceConfig.VolumeKmsKeyId"),
        ("output_kms_key", spec.output_kms_key, "OutputDataConfig.KmsKeyId"),
    ):
        if misfits_string(context, value, model_path):
            yield string_finding(path, value, model_path, "KMS key")


@rule(
    "API-ROLE",
    source=f"{_MODEL} RoleArn (required, pattern)",
    example='role: "arn:aws:iam::111122223333:role/SageMakerTraining"',
)
def role(context: RuleContext) -> Iterator[Finding]:
    """An execution role is given as an IAM role ARN."""
    arn = context.role_arn
    if arn is None:
        yield Finding(
            "role",
            "No execution role is given.",
            None,
            "an IAM role ARN",
            "set role (the constructs create one when none is given)",
        )
    elif misfits_string(context, arn, "RoleArn"):
        yield string_finding("role", arn, "RoleArn", "role ARN")


@rule(
    "API-TAGS",
    source=f"{_MODEL} TagList; AWS tagging rules (the aws: prefix is reserved)",
    example='tags: {"team": "ml-platform"}',
    needs=("tags",),
)
def tags(context: RuleContext) -> Iterator[Finding]:
    """Tags fit the API: count, key and value patterns; ``aws:`` keys are reserved."""
    spec_tags = context.spec.tags
    if misfits_count(spec_tags, "Tags"):
        yield count_finding("tags", spec_tags, "Tags", "tags")
    for key, value in spec_tags.items():
        if misfits_string(context, key, "Tags[].Key"):
            yield string_finding(f"tags.{key}", key, "Tags[].Key", "tag key")
        if misfits_string(context, value, "Tags[].Value"):
            yield string_finding(f"tags.{key}", value, "Tags[].Value", "tag value")
        if context.known(key) and key.lower().startswith("aws:"):
            yield Finding(
                f"tags.{key}",
                "Tag keys starting with 'aws:' are reserved.",
                key,
                "keys not starting with aws:",
                "rename the tag",
            )


@rule(
    "API-CHECKPOINT",
    source=f"{_MODEL} CheckpointConfig (S3Uri required, LocalPath)",
    example='checkpoint_s3_uri: "s3://my-bucket/checkpoints", checkpoint_local_path: '
    '"/opt/ml/checkpoints"',
    needs=("checkpoint_local_path",),
)
def checkpoint(context: RuleContext) -> Iterator[Finding]:
    """A checkpoint local path comes with a checkpoint S3 URI and fits the API."""
    spec = context.spec
    if spec.checkpoint_local_path is not None and spec.checkpoint_s3_uri is None:
        yield Finding(
            "checkpoint_local_path",
            "A local checkpoint path needs an S3 location.",
            spec.checkpoint_local_path,
            "checkpoint_local_path with checkpoint_s3_uri",
            "set checkpoint_s3_uri",
        )
    local_path = spec.checkpoint_local_path
    if misfits_string(context, local_path, "CheckpointConfig.LocalPath"):
        yield string_finding(
            "checkpoint_local_path", local_path, "CheckpointConfig.LocalPath", "checkpoint path"
        )


@rule(
    "API-METRICS",
    source=f"{_MODEL} MetricDefinitions (count, Name, Regex)",
    example='metric_definitions: [{"Name": "loss", "Regex": "loss=([0-9.]+)"}]',
    needs=("metric_definitions",),
)
def metrics(context: RuleContext) -> Iterator[Finding]:
    """Metric definitions fit the API: count, name and regex lengths."""
    definitions = context.spec.metric_definitions
    if not definitions:
        return
    if misfits_count(definitions, _METRICS):
        yield count_finding("metric_definitions", definitions, _METRICS, "metric definitions")
    for index, metric in enumerate(definitions):
        for field, value, what in (
            ("Name", metric.name, "metric name"),
            ("Regex", metric.regex, "metric regex"),
        ):
            model_path = f"{_METRICS}[].{field}"
            if misfits_string(context, value, model_path):
                yield string_finding(
                    f"metric_definitions[{index}].{field}", value, model_path, what
                )


@rule(
    "API-REQUEST",
    source=f"{_MODEL} (every constraint) and botocore.validate.ParamValidator",
    example="(a backstop: fires only when no narrower rule explains the problem)",
    backstop=True,
)
def whole_request(context: RuleContext) -> Iterator[Finding]:
    """The whole request passes botocore's validator and every bound, pattern and enum of the model.

    Values that are CDK tokens are skipped; they are checked when the stack deploys.
    """
    request = request_of(context)
    verdict = validate_request(request)
    for problem in verdict.problems:
        if context.is_token(problem.value) or _mentions_token(context, problem.value):
            continue
        yield Finding(
            f"request.{problem.path}",
            f"The request's {problem.path} {problem.problem}.",
            problem.value,
            problem.allowed,
            "fix the spec field that produces this value",
        )
    report = verdict.botocore_report
    if report and not _mentions_token(context, request):
        yield Finding(
            "request",
            "botocore rejects the request.",
            report,
            "a request botocore validates",
            "fix the fields the report names",
        )


def _mentions_token(context: RuleContext, value: object) -> bool:
    if isinstance(value, list | tuple):
        return any(_mentions_token(context, v) for v in value)
    if isinstance(value, dict):
        return any(_mentions_token(context, v) for v in value.values())
    return bool(context.is_token(value))
