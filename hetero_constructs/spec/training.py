"""The training spec: immutable, typed value objects with the SageMaker Python SDK's names.

Nothing here judges whether a spec is *valid*; that is the rules' job (``checks``).
The objects only insist on field types, so that every rule can rely on them. Bad arguments
(wrong types, unknown or missing names, enum values in the wrong case) raise
``SpecValidationError`` with every violation, never a bare TypeError or ValueError.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from hetero_constructs.spec.cluster import InstanceGroup, TrainingChannel
from hetero_constructs.spec.distribution import DistributedTraining
from hetero_constructs.spec.fields import (
    FieldChecker,
    as_tuple,
    checked_constructor,
    frozen_mapping,
)


class Framework(StrEnum):
    """The Deep Learning Container framework the estimator would be."""

    PYTORCH = "pytorch"
    TENSORFLOW = "tensorflow"


@checked_constructor
@dataclass(frozen=True)
class TrainingMetric:
    """A metric SageMaker extracts from the training logs with a regular expression.

    One of the spec's ``metric_definitions`` (the SDK's name for the list); the class is named
    apart from aws-cdk-lib's ``aws_stepfunctions_tasks.MetricDefinition``.
    """

    name: str
    regex: str

    def __post_init__(self) -> None:
        check = FieldChecker("TrainingMetric")
        check.string("name", self.name)
        check.string("regex", self.regex)
        check.done()


@checked_constructor
@dataclass(frozen=True)
class TrainingSpec:
    """Everything a SageMaker PyTorch/TensorFlow estimator takes, for one training job.

    Either ``instance_groups`` (heterogeneous cluster) or ``instance_type`` and
    ``instance_count`` (homogeneous). ``framework_version`` and ``py_version`` select the
    Deep Learning Container, unless ``image_uri`` names an image.
    """

    entry_point: str
    framework: Framework = Framework.PYTORCH
    framework_version: str | None = None
    py_version: str | None = None
    image_uri: str | None = None
    source_dir: str | None = None
    instance_groups: Sequence[InstanceGroup] = ()
    instance_type: str | None = None
    instance_count: int | None = None
    channels: Sequence[TrainingChannel] = ()
    distribution: DistributedTraining | None = None
    hyperparameters: Mapping[str, Any] = field(default_factory=dict)
    environment: Mapping[str, str] = field(default_factory=dict)
    output_path: str | None = None
    role: str | None = None
    region: str | None = None
    job_name: str | None = None
    base_job_name: str | None = None
    volume_size: int = 30
    max_run: int = 86400
    input_mode: str = "File"
    container_log_level: int = 20
    metric_definitions: Sequence[TrainingMetric] = ()
    # Options a production job needs.
    subnets: Sequence[str] = ()
    security_group_ids: Sequence[str] = ()
    volume_kms_key: str | None = None
    output_kms_key: str | None = None
    enable_network_isolation: bool = False
    encrypt_inter_container_traffic: bool = False
    use_spot_instances: bool = False
    max_wait: int | None = None
    checkpoint_s3_uri: str | None = None
    checkpoint_local_path: str | None = None
    max_retry_attempts: int | None = None
    tags: Mapping[str, str] = field(default_factory=dict)
    #: Warning rules acknowledged for this job: rule id -> the reason (errors cannot be).
    acknowledgments: Mapping[str, str] = field(default_factory=dict)
    #: Reserved capacity (ResourceConfig.TrainingPlanArn).
    training_plan_arn: str | None = None
    #: Warm pool (ResourceConfig.KeepAlivePeriodInSeconds); homogeneous, on-demand jobs only.
    keep_alive_period_in_seconds: int | None = None

    def __post_init__(self) -> None:
        for name in ("instance_groups", "channels", "metric_definitions", "subnets"):
            object.__setattr__(self, name, as_tuple(getattr(self, name)))
        object.__setattr__(self, "security_group_ids", as_tuple(self.security_group_ids))
        for name in ("hyperparameters", "environment", "tags", "acknowledgments"):
            object.__setattr__(self, name, frozen_mapping(getattr(self, name)))
        self._check_types()

    def _check_types(self) -> None:
        check = FieldChecker("TrainingSpec")
        check.string("entry_point", self.entry_point)
        framework = check.enum_member("framework", self.framework, Framework)
        if framework is not None:
            object.__setattr__(self, "framework", framework)
        for name in (
            "framework_version",
            "py_version",
            "image_uri",
            "source_dir",
            "instance_type",
            "output_path",
            "role",
            "region",
            "job_name",
            "base_job_name",
            "volume_kms_key",
            "output_kms_key",
            "checkpoint_s3_uri",
            "checkpoint_local_path",
            "training_plan_arn",
        ):
            check.string(name, getattr(self, name), optional=True)
        check.string("input_mode", self.input_mode)
        for name in (
            "instance_count",
            "max_wait",
            "max_retry_attempts",
            "keep_alive_period_in_seconds",
        ):
            check.integer(name, getattr(self, name), optional=True)
        for name in ("volume_size", "max_run", "container_log_level"):
            check.integer(name, getattr(self, name))
        for name in (
            "enable_network_isolation",
            "encrypt_inter_container_traffic",
            "use_spot_instances",
        ):
            check.boolean(name, getattr(self, name))
        check.tuple_of("instance_groups", self.instance_groups, InstanceGroup, "InstanceGroups")
        check.tuple_of("channels", self.channels, TrainingChannel, "TrainingChannels")
        check.tuple_of(
            "metric_definitions", self.metric_definitions, TrainingMetric, "MetricDefinitions"
        )
        if self.distribution is not None:
            check.one_of(
                "distribution", self.distribution, DistributedTraining, "DistributedTraining"
            )
        check.string_tuple("subnets", self.subnets)
        check.string_tuple("security_group_ids", self.security_group_ids)
        check.json_mapping("hyperparameters", self.hyperparameters)
        check.string_mapping("environment", self.environment)
        check.string_mapping("tags", self.tags)
        check.string_mapping("acknowledgments", self.acknowledgments)
        check.done()

    # -- derived views used by rules and the request builder --------------------------------

    def group(self, name: str) -> InstanceGroup | None:
        for group in self.instance_groups:
            if group.name == name:
                return group
        return None


__all__ = [
    "Framework",
    "TrainingMetric",
    "TrainingSpec",
]
