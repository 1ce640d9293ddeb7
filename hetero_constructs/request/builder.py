"""The CreateTrainingJob request for a spec, as the API takes it.

The builder is total over well-typed specs: it never raises, so rules can inspect the request
of an invalid spec. Only a spec without violations should be sent.

A field declared with its API member (``spec_field(api=...)``, ``request.api_fields``) is sent
as it is, from its declaration alone; this module builds the parts the API takes in a shape of
their own (the cluster, channels, hyperparameters, image, VPC, tags, ...).
"""

from __future__ import annotations

from typing import Any

from hetero_constructs.request import hyperparameters as hp
from hetero_constructs.request.api_fields import api_fields
from hetero_constructs.request.context import RuleContext
from hetero_constructs.request.image_uri import image_repository, training_image
from hetero_constructs.service import catalog
from hetero_constructs.spec.cluster import TrainingChannel
from hetero_constructs.spec.distribution import Launcher, SmddpCollective

SMDDP_ALLGATHER_ENV = "SMDATAPARALLEL_OPTIMIZE_SDP"
IMAGE_PLACEHOLDER = "IMAGE-URI-UNRESOLVED"


def job_name(context: RuleContext) -> str:
    """The deployment's job name, the spec's, or the base name (the image repository's)."""
    return (
        context.deployment.job_name
        or context.spec.job_name
        or context.spec.base_job_name
        or image_repository(context)
    )


def request_of(context: RuleContext) -> dict[str, Any]:
    """The context's request, built once per validation (rules about what is sent read it).

    Kept here, not on ``RuleContext``, so that the context never imports the builder.
    """
    cached: dict[str, Any] | None = context.__dict__.get("_request")
    if cached is None:
        cached = context.__dict__["_request"] = build_request(context)
    return cached


def build_request(context: RuleContext) -> dict[str, Any]:
    spec = context.spec
    name = job_name(context)
    # The members in the order the API documents them; those sent as they are fill in below.
    algorithm: dict[str, Any] = {"TrainingImage": training_image(context) or IMAGE_PLACEHOLDER}
    request: dict[str, Any] = {
        "TrainingJobName": name,
        "HyperParameters": hp.encoded_hyperparameters(context, name),
        "AlgorithmSpecification": algorithm,
        "RoleArn": context.role_arn or "",
        "OutputDataConfig": {"S3OutputPath": context.output_path or ""},
        "ResourceConfig": _cluster(context),
        "StoppingCondition": {},
    }
    channels = _channels(context, name)
    if channels:
        request["InputDataConfig"] = channels
    environment = _environment(context)
    if environment:
        request["Environment"] = environment
    if spec.subnets or spec.security_group_ids:
        request["VpcConfig"] = {
            "SecurityGroupIds": list(spec.security_group_ids),
            "Subnets": list(spec.subnets),
        }
    _send_as_they_are(context, request)
    if spec.checkpoint_local_path and "CheckpointConfig" in request:
        # Only beside the S3 location the API requires (API-CHECKPOINT reports it alone).
        request["CheckpointConfig"]["LocalPath"] = spec.checkpoint_local_path
    _algorithm_metrics(context, algorithm)
    if spec.tags:
        request["Tags"] = [{"Key": key, "Value": value} for key, value in spec.tags.items()]
    return request


def _send_as_they_are(context: RuleContext, request: dict[str, Any]) -> None:
    """Each field declared with its API member, under that member, when it is set (``ApiField``:
    a boolean when true, a field with a default of its own always, another when not ``None``
    or ``""``)."""
    spec = context.spec
    for field in api_fields(type(spec)):
        value = getattr(spec, field.name)
        if field.boolean:
            if not value:
                continue
        elif not field.always and (value is None or value == ""):
            continue
        if field.integer:
            value = _integer(context, value)
        *parents, member = field.steps
        target = request
        for step in parents:
            target = target.setdefault(step, {})
        target[member] = value


def _algorithm_metrics(context: RuleContext, algorithm: dict[str, Any]) -> None:
    spec = context.spec
    if catalog.metrics_time_series_supported(spec.framework, context.version):
        algorithm["EnableSageMakerMetricsTimeSeries"] = True
    if spec.metric_definitions:
        algorithm["MetricDefinitions"] = [
            {"Name": metric.name, "Regex": metric.regex} for metric in spec.metric_definitions
        ]


def _cluster(context: RuleContext) -> dict[str, Any]:
    spec = context.spec
    resources: dict[str, Any] = {}
    if spec.instance_groups:
        resources["InstanceGroups"] = [
            {
                "InstanceGroupName": group.name,
                "InstanceType": group.instance_type,
                "InstanceCount": _integer(context, group.instance_count),
            }
            for group in spec.instance_groups
        ]
    else:
        if spec.instance_type is not None:
            resources["InstanceType"] = spec.instance_type
        if spec.instance_count is not None:
            resources["InstanceCount"] = _integer(context, spec.instance_count)
    return resources


def _channel(channel: TrainingChannel, s3_uri: str, groups: tuple[str, ...]) -> dict[str, Any]:
    source: dict[str, Any] = {
        "S3DataType": channel.s3_data_type,
        "S3Uri": s3_uri,
        "S3DataDistributionType": channel.distribution,
    }
    if groups:
        source["InstanceGroupNames"] = list(groups)
    result: dict[str, Any] = {"ChannelName": channel.name, "DataSource": {"S3DataSource": source}}
    if channel.input_mode:
        result["InputMode"] = channel.input_mode
    if channel.content_type:
        result["ContentType"] = channel.content_type
    if channel.compression:
        result["CompressionType"] = channel.compression
    if channel.record_wrapping:
        result["RecordWrapperType"] = channel.record_wrapping
    return result


def _channels(context: RuleContext, name: str) -> list[dict[str, Any]]:
    spec = context.spec
    channels = [_channel(c, c.s3_uri, c.group_names) for c in spec.channels]
    if spec.enable_network_isolation:
        # The code reaches an isolated container only as a channel. When channels are scoped to
        # groups, the service wants every channel scoped (the SDK leaves this one unscoped).
        scoped = any(c.instance_groups for c in spec.channels)
        groups = tuple(g.name for g in spec.instance_groups) if scoped else ()
        code = TrainingChannel(name=hp.CODE_CHANNEL, s3_uri="s3://placeholder")
        channels.append(_channel(code, hp.source_object_uri(context, name), groups))
    return channels


def _environment(context: RuleContext) -> dict[str, str]:
    environment = dict(context.spec.environment)
    kind = context.launcher_kind
    chosen = context.spec.distribution.smddp_collectives if context.spec.distribution else ()
    if (
        kind is not None
        and kind.is_mpirun_based
        and kind is not Launcher.MPI
        and SmddpCollective.ALL_GATHER in chosen
    ):
        # Seed 000: SMDDP AllGather under an mpirun-based launcher needs this variable.
        environment[SMDDP_ALLGATHER_ENV] = "true"
    return environment


def _integer(context: RuleContext, value: Any) -> Any:
    """Integral floats become ints; CDK number tokens stay as they are."""
    if isinstance(value, int) or context.is_token(value):
        return value
    return int(value)


__all__ = [
    "IMAGE_PLACEHOLDER",
    "SMDDP_ALLGATHER_ENV",
    "build_request",
    "job_name",
    "request_of",
]
