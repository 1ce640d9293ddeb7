"""The training spec: immutable, typed value objects with the SageMaker Python SDK's names.

Nothing here judges whether a spec is *valid*; that is the rules' job (``checks``).
The objects only insist on field types, so that every rule can rely on them. Bad arguments
(wrong types, unknown or missing names, enum values in the wrong case) raise
``SpecValidationError`` with every violation, never a bare TypeError or ValueError.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from enum import StrEnum
from typing import Any

from hetero_constructs.spec.cluster import InstanceGroup, TrainingChannel
from hetero_constructs.spec.distribution import DistributedTraining
from hetero_constructs.spec.schema import (
    BOOLEAN,
    INTEGER,
    JSON_MAP,
    STRING,
    STRING_LIST,
    STRING_MAP,
    SpecField,
    check_fields,
    enum_type,
    object_type,
    objects_type,
    schema_of,
    spec_field,
    spec_object,
)
from hetero_constructs.spec.violations import Violation, raise_if_any


class Framework(StrEnum):
    """The Deep Learning Container framework the estimator would be."""

    PYTORCH = "pytorch"
    TENSORFLOW = "tensorflow"


METRICS_SHAPE = "metrics"  # file shape: [{"Name": ..., "Regex": ...}]
GROUPS_SHAPE = "groups"  # file shape: [{"name": ..., "instance_type": ..., ...}]
CHANNELS_SHAPE = "channels"  # file shape: {name: {"s3_uri": ...} or "s3://..."}
DISTRIBUTION_SHAPE = "distribution"  # file shape: the SDK's dict (and smddp_collective)
TAGS_SHAPE = "tags"  # file shape: a mapping, or the API's [{"Key": ..., "Value": ...}]


@spec_object
class TrainingMetric:
    """A metric SageMaker extracts from the training logs with a regular expression.

    One of the spec's ``metric_definitions`` (the SDK's name for the list); the class is named
    apart from aws-cdk-lib's ``aws_stepfunctions_tasks.MetricDefinition``.
    """

    name: str = spec_field(STRING, file_key="Name", sdk="Name", doc="The metric's name.")
    regex: str = spec_field(
        STRING,
        file_key="Regex",
        sdk="Regex",
        doc="A regular expression whose first group is the value, matched on each log line.",
    )

    def __post_init__(self) -> None:
        check_fields(self)


@spec_object
class TrainingSpec:
    """Everything a SageMaker PyTorch/TensorFlow estimator takes, for one training job.

    Either ``instance_groups`` (heterogeneous cluster) or ``instance_type`` and
    ``instance_count`` (homogeneous). ``framework_version`` and ``py_version`` select the
    Deep Learning Container, unless ``image_uri`` names an image.
    """

    entry_point: str = spec_field(STRING, doc="The training script, relative to source_dir.")
    framework: Framework = spec_field(
        enum_type(Framework),
        default=Framework.PYTORCH,
        file_required=True,
        sdk=None,
        doc="'pytorch' or 'tensorflow': which estimator (and Deep Learning Container) it is.",
    )
    framework_version: str | None = spec_field(
        STRING, default=None, doc="The framework version of the Deep Learning Container."
    )
    py_version: str | None = spec_field(
        STRING, default=None, doc="The Python version of the Deep Learning Container (py310)."
    )
    image_uri: str | None = spec_field(
        STRING, default=None, doc="A training image of your own instead of the container."
    )
    source_dir: str | None = spec_field(
        STRING,
        default=None,
        doc="The code: a local folder (relative to the spec file) or an s3:// tar.gz.",
    )
    instance_groups: Sequence[InstanceGroup] = spec_field(
        objects_type(
            InstanceGroup,
            "a list of InstanceGroup (from hetero_constructs import InstanceGroup), or a spec "
            'file\'s dicts [{"name": ..., "instance_type": ..., "instance_count": ...}]',
            shape=GROUPS_SHAPE,
        ),
        default=(),
        doc="The heterogeneous cluster's groups (ResourceConfig.InstanceGroups).",
    )
    instance_type: str | None = spec_field(
        STRING, default=None, doc="The instance type of a homogeneous cluster."
    )
    instance_count: int | None = spec_field(
        INTEGER, default=None, doc="The instance count of a homogeneous cluster."
    )
    channels: Sequence[TrainingChannel] = spec_field(
        objects_type(
            TrainingChannel,
            "a list of TrainingChannel (from hetero_constructs import TrainingChannel), or the "
            'SDK\'s fit(inputs=...) dict {"train": "s3://..."}',
            shape=CHANNELS_SHAPE,
        ),
        default=(),
        sdk="fit(inputs=...)",
        doc="Input channels by name, each an S3 location and the groups that receive it.",
    )
    distribution: DistributedTraining | None = spec_field(
        object_type(
            DistributedTraining,
            "a DistributedTraining (from hetero_constructs import DistributedTraining), or the "
            'SDK\'s distribution dict, e.g. {"torch_distributed": {"enabled": True}}',
            shape=DISTRIBUTION_SHAPE,
        ),
        default=None,
        extra_file_keys=("smddp_collective",),
        doc="The SDK's distribution dict: launcher, model parallelism, the group that runs it; "
        "smddp_collective: AllReduce or AllGather.",
    )
    hyperparameters: Mapping[str, Any] = spec_field(
        JSON_MAP, default_factory=dict, doc="Passed to the script (JSON-encoded by the API)."
    )
    environment: Mapping[str, str] = spec_field(
        STRING_MAP, default_factory=dict, doc="Environment variables of the training container."
    )
    output_path: str | None = spec_field(
        STRING, default=None, doc="Where the model artifacts go (OutputDataConfig.S3OutputPath)."
    )
    role: str | None = spec_field(
        STRING, default=None, doc="The execution role's ARN (the construct makes one if unset)."
    )
    region: str | None = spec_field(
        STRING, default=None, sdk=None, doc="The job's region; the stack's region when unset."
    )
    job_name: str | None = spec_field(
        STRING,
        default=None,
        sdk="fit(job_name=...)",
        doc="A fixed training job name (the constructs name each run's job instead).",
    )
    base_job_name: str | None = spec_field(
        STRING, default=None, doc="The prefix of each job's name."
    )
    volume_size: int = spec_field(
        INTEGER,
        default=30,
        api="ResourceConfig.VolumeSizeInGB",
        doc="GB of storage per instance.",
    )
    max_run: int = spec_field(
        INTEGER,
        default=86400,
        api="StoppingCondition.MaxRuntimeInSeconds",
        doc="Seconds the job may run.",
    )
    input_mode: str = spec_field(
        STRING,
        default="File",
        api="AlgorithmSpecification.TrainingInputMode",
        doc="How channels reach the container: File, Pipe, FastFile.",
    )
    container_log_level: int = spec_field(
        INTEGER, default=20, doc="The training toolkit's log level (logging's numbers)."
    )
    metric_definitions: Sequence[TrainingMetric] = spec_field(
        objects_type(
            TrainingMetric,
            "a list of TrainingMetric (from hetero_constructs import TrainingMetric), or the "
            'SDK\'s [{"Name": ..., "Regex": ...}]',
            shape=METRICS_SHAPE,
        ),
        default=(),
        doc='Metrics from the logs: [{"Name": ..., "Regex": ...}].',
    )
    # Options a production job needs.
    subnets: Sequence[str] = spec_field(
        STRING_LIST, default=(), doc="VPC subnet ids (with security_group_ids)."
    )
    security_group_ids: Sequence[str] = spec_field(
        STRING_LIST, default=(), doc="VPC security group ids (with subnets)."
    )
    volume_kms_key: str | None = spec_field(
        STRING,
        default=None,
        api="ResourceConfig.VolumeKmsKeyId",
        doc="The KMS key of the instances' storage volumes.",
    )
    output_kms_key: str | None = spec_field(
        STRING,
        default=None,
        api="OutputDataConfig.KmsKeyId",
        doc="The KMS key of the model artifacts.",
    )
    enable_network_isolation: bool = spec_field(
        BOOLEAN,
        default=False,
        api="EnableNetworkIsolation",
        doc="No network access from the training container.",
    )
    encrypt_inter_container_traffic: bool = spec_field(
        BOOLEAN,
        default=False,
        api="EnableInterContainerTrafficEncryption",
        doc="Encrypt the traffic between the training instances.",
    )
    use_spot_instances: bool = spec_field(
        BOOLEAN,
        default=False,
        api="EnableManagedSpotTraining",
        doc="Managed spot training (needs max_wait).",
    )
    max_wait: int | None = spec_field(
        INTEGER,
        default=None,
        api="StoppingCondition.MaxWaitTimeInSeconds",
        doc="Seconds to wait for spot capacity and to run.",
    )
    checkpoint_s3_uri: str | None = spec_field(
        STRING,
        default=None,
        api="CheckpointConfig.S3Uri",
        doc="Where checkpoints are copied to and restored from.",
    )
    checkpoint_local_path: str | None = spec_field(
        STRING, default=None, doc="The checkpoint folder in the container (/opt/ml/checkpoints)."
    )
    max_retry_attempts: int | None = spec_field(
        INTEGER,
        default=None,
        api="RetryStrategy.MaximumRetryAttempts",
        doc="SageMaker's own retries of the job.",
    )
    tags: Mapping[str, str] = spec_field(
        dataclasses.replace(STRING_MAP, file_shape=TAGS_SHAPE),
        default_factory=dict,
        doc='Tags of the job: a mapping, or the API\'s [{"Key": ..., "Value": ...}].',
    )
    acknowledgments: Mapping[str, str] = spec_field(
        STRING_MAP,
        default_factory=dict,
        sdk=None,
        doc="Warning rules acknowledged for this job: rule id -> the reason (errors cannot be).",
    )
    training_plan_arn: str | None = spec_field(
        STRING,
        default=None,
        sdk="training_plan",
        api="ResourceConfig.TrainingPlanArn",
        doc="Reserved capacity.",
    )
    keep_alive_period_in_seconds: int | None = spec_field(
        INTEGER,
        default=None,
        api="ResourceConfig.KeepAlivePeriodInSeconds",
        doc="Warm pool: seconds the instances wait for the next job; homogeneous, on-demand jobs.",
    )

    def __post_init__(self) -> None:
        _read_sdk_forms(self)
        check_fields(self)

    # -- derived views used by rules and the request builder --------------------------------

    def group(self, name: str) -> InstanceGroup | None:
        """The instance group named ``name``, or None."""
        for group in self.instance_groups:
            if group.name == name:
                return group
        return None


def _in_sdk_form(shape: str, value: Any) -> bool:
    """Whether a field's value is written as the SDK writes it, not as this API's objects."""
    if shape in (CHANNELS_SHAPE, DISTRIBUTION_SHAPE):
        return isinstance(value, Mapping)
    if not isinstance(value, list | tuple):
        return False
    return any(isinstance(item, Mapping) for item in value)


#: How a field given in the SDK's dict form is read: the spec-file reader's own code, which
#: installs it when imported (``spec.file.reader``; the reader is built on this module).
SdkFormReader = Callable[[SpecField, Any], tuple[Any, list[Violation]]]
_SDK_FORM_READERS: list[SdkFormReader] = []


def install_sdk_form_reader(reader: SdkFormReader) -> None:
    """Read the SDK's dict forms with ``reader`` (``spec.file.reader.from_sdk_form``)."""
    _SDK_FORM_READERS[:] = [reader]


def _read_sdk_forms(spec: TrainingSpec) -> None:
    """The fields given in the SDK's dict forms, read as a spec file's (every problem at once,
    each with its path). Without the reader installed, they are left to the type checks."""
    if not _SDK_FORM_READERS:
        return
    problems: list[Violation] = []
    for declared in schema_of(type(spec)):  # the spec's own class: a subclass may add fields
        value = getattr(spec, declared.name)
        if declared.type.file_shape in _SDK_FORM_SHAPES and _in_sdk_form(
            declared.type.file_shape, value
        ):
            converted, found = _SDK_FORM_READERS[0](declared, value)
            problems += found
            object.__setattr__(spec, declared.name, converted)
    raise_if_any(problems)


#: The shapes a Python caller may give in the SDK's (a spec file's) dict form.
_SDK_FORM_SHAPES = (GROUPS_SHAPE, CHANNELS_SHAPE, DISTRIBUTION_SHAPE, TAGS_SHAPE, METRICS_SHAPE)


__all__ = [
    "CHANNELS_SHAPE",
    "DISTRIBUTION_SHAPE",
    "GROUPS_SHAPE",
    "METRICS_SHAPE",
    "TAGS_SHAPE",
    "Framework",
    "TrainingMetric",
    "TrainingSpec",
    "install_sdk_form_reader",
]
