"""The CreateTrainingJob request for a spec, as the API takes it.

The builder is total over well-typed specs: it never raises, so rules can inspect the request
of an invalid spec. Only a spec without violations should be sent.
"""

from __future__ import annotations

from typing import Any

from hetero_constructs.request import hyperparameters as hp
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
    request: dict[str, Any] = {
        "TrainingJobName": name,
        "HyperParameters": hp.encoded_hyperparameters(context, name),
        "AlgorithmSpecification": _algorithm(context),
        "RoleArn": context.role_arn or "",
        "OutputDataConfig": _output(context),
        "ResourceConfig": _resources(context),
        "StoppingCondition": _stopping(context),
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
    if spec.enable_network_isolation:
        request["EnableNetworkIsolation"] = True
    if spec.encrypt_inter_container_traffic:
        request["EnableInterContainerTrafficEncryption"] = True
    if spec.use_spot_instances:
        request["EnableManagedSpotTraining"] = True
    if spec.checkpoint_s3_uri:
        checkpoint = {"S3Uri": spec.checkpoint_s3_uri}
        if spec.checkpoint_local_path:
            checkpoint["LocalPath"] = spec.checkpoint_local_path
        request["CheckpointConfig"] = checkpoint
    if spec.max_retry_attempts is not None:
        request["RetryStrategy"] = {"MaximumRetryAttempts": spec.max_retry_attempts}
    if spec.tags:
        request["Tags"] = [{"Key": key, "Value": value} for key, value in spec.tags.items()]
    return request


def _algorithm(context: RuleContext) -> dict[str, Any]:
    spec = context.spec
    algorithm: dict[str, Any] = {
        "TrainingImage": training_image(context) or IMAGE_PLACEHOLDER,
        "TrainingInputMode": spec.input_mode,
    }
    if catalog.metrics_time_series_supported(spec.framework, context.version):
        algorithm["EnableSageMakerMetricsTimeSeries"] = True
    if spec.metric_definitions:
        algorithm["MetricDefinitions"] = [
            {"Name": metric.name, "Regex": metric.regex} for metric in spec.metric_definitions
        ]
    return algorithm


def _output(context: RuleContext) -> dict[str, Any]:
    output: dict[str, Any] = {"S3OutputPath": context.output_path or ""}
    if context.spec.output_kms_key:
        output["KmsKeyId"] = context.spec.output_kms_key
    return output


def _resources(context: RuleContext) -> dict[str, Any]:
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
    resources["VolumeSizeInGB"] = _integer(context, spec.volume_size)
    if spec.volume_kms_key:
        resources["VolumeKmsKeyId"] = spec.volume_kms_key
    if spec.training_plan_arn:
        resources["TrainingPlanArn"] = spec.training_plan_arn
    if spec.keep_alive_period_in_seconds is not None:
        resources["KeepAlivePeriodInSeconds"] = _integer(context, spec.keep_alive_period_in_seconds)
    return resources


def _stopping(context: RuleContext) -> dict[str, Any]:
    spec = context.spec
    stopping: dict[str, Any] = {"MaxRuntimeInSeconds": _integer(context, spec.max_run)}
    if spec.max_wait is not None:
        stopping["MaxWaitTimeInSeconds"] = _integer(context, spec.max_wait)
    return stopping


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
