"""The API's limits on a job's settings: stopping, resources, network, keys, role, tags,
checkpoints, metrics, and the whole request against the model."""

from __future__ import annotations

import re
from collections.abc import Iterator

from hetero_constructs.checks.base import Finding, rule
from hetero_constructs.checks.helpers import (
    MODEL_SOURCE,
    count_finding,
    misfits_count,
    misfits_string,
    string_finding,
)
from hetero_constructs.request.builder import request_of
from hetero_constructs.request.context import RuleContext
from hetero_constructs.service import model as service_model
from hetero_constructs.service.request_validator import validate_request
from hetero_constructs.spec.fields import is_integer

# Documented, not in the model: "maximum 28 days" (StoppingCondition docs).
MAX_RUNTIME_SECONDS = 28 * 24 * 3600
_METRICS = "AlgorithmSpecification.MetricDefinitions"


@rule(
    "API-STOPPING",
    source=f"{MODEL_SOURCE} StoppingCondition; SageMaker docs: MaxRuntimeInSeconds at most 28 "
    "days, MaxWaitTimeInSeconds >= MaxRuntimeInSeconds and only for managed spot training",
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
    source=f"{MODEL_SOURCE} VolumeSizeInGB, RetryStrategy.MaximumRetryAttempts",
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
    source=f"{MODEL_SOURCE} VpcConfig; SDK v2 estimator.py (subnets and security groups together)",
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
    source=f"{MODEL_SOURCE} KmsKeyId",
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
    source=f"{MODEL_SOURCE} RoleArn (required, pattern)",
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
    source=f"{MODEL_SOURCE} TagList; AWS tagging rules (the aws: prefix is reserved)",
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
    source=f"{MODEL_SOURCE} CheckpointConfig (S3Uri required, LocalPath)",
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
    source=f"{MODEL_SOURCE} MetricDefinitions (count, Name, Regex)",
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
    "API-METRIC-REGEX",
    source=(
        "SageMaker developer guide, 'Define metrics': each regex is applied to the job's log "
        "lines and its first group is the metric's value; each name is one metric"
    ),
    example='metric_definitions: [{"Name": "loss", "Regex": "loss=([0-9.]+)"}]',
    needs=("metric_definitions",),
)
def metric_regexes(context: RuleContext) -> Iterator[Finding]:
    """Each metric regex compiles and captures the value in a group; no name is given twice.

    A regex that does not compile, or has no group, never yields a value: the metric stays
    empty for the whole job, and nothing says why. Regexes are compiled as Python's ``re``
    compiles them.
    """
    seen: dict[str, int] = {}
    for index, metric in enumerate(context.spec.metric_definitions):
        path = f"metric_definitions[{index}]"
        if isinstance(metric.name, str) and not context.is_token(metric.name):
            if metric.name in seen:
                yield Finding(
                    f"{path}.Name",
                    f"The metric name is given twice (metric_definitions[{seen[metric.name]}] "
                    "has it too).",
                    metric.name,
                    "each metric name once",
                    "rename one of them, or drop the duplicate",
                )
            seen.setdefault(metric.name, index)
        regex = metric.regex
        if not isinstance(regex, str) or context.is_token(regex):
            continue
        try:
            groups = re.compile(regex).groups
        except re.error as error:
            yield Finding(
                f"{path}.Regex",
                f"The metric regex does not compile: {error}.",
                regex,
                "a regular expression with a group around the value, e.g. loss=([0-9.]+)",
                "fix the expression (escape literal brackets, dots and parentheses with \\)",
            )
            continue
        if groups == 0:
            yield Finding(
                f"{path}.Regex",
                "The metric regex has no group: SageMaker takes the value from the first group.",
                regex,
                "a regular expression with a group around the value, e.g. loss=([0-9.]+)",
                "put parentheses around the part that is the number",
            )


@rule(
    "API-REQUEST",
    source=f"{MODEL_SOURCE} (every constraint) and botocore.validate.ParamValidator",
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


__all__ = [
    "MAX_RUNTIME_SECONDS",
    "checkpoint",
    "kms_keys",
    "metric_regexes",
    "metrics",
    "network",
    "resources",
    "role",
    "stopping",
    "tags",
    "whole_request",
]
