"""The training spec: immutable, typed value objects with the SageMaker Python SDK's names.

Nothing here judges whether a spec is *valid*; that is the rules' job (``core.rules``).
The objects only insist on field types, so that every rule can rely on them. Bad arguments
(wrong types, unknown or missing names, enum values in the wrong case) raise
``SpecValidationError`` with every violation, never a bare TypeError or ValueError.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from hetero_constructs.spec.fields import (
    FieldChecker,
    as_tuple,
    checked_arguments,
    checked_constructor,
)


def _frozen_mapping(value: Any) -> Any:
    return MappingProxyType(dict(value)) if isinstance(value, Mapping) else value


class Framework(StrEnum):
    """The Deep Learning Container framework the estimator would be."""

    PYTORCH = "pytorch"
    TENSORFLOW = "tensorflow"


class Launcher(StrEnum):
    """How the training toolkit starts processes on the distribution instance group.

    The values are the SDK's ``distribution`` keys.
    """

    TORCH_DISTRIBUTED = "torch_distributed"
    PYTORCH_DDP = "pytorchddp"
    SMDISTRIBUTED_DATA_PARALLEL = "smdistributed.dataparallel"
    MPI = "mpi"
    PARAMETER_SERVER = "parameter_server"
    MULTI_WORKER_MIRRORED = "multi_worker_mirrored_strategy"
    PYTORCH_XLA = "pytorchxla"

    @property
    def is_mpirun_based(self) -> bool:
        """Launchers the toolkit runs through mpirun."""
        return self in _MPIRUN_LAUNCHERS

    @property
    def is_smddp(self) -> bool:
        """Launchers that activate the SageMaker data parallel (SMDDP) library collectives."""
        return self in _SMDDP_LAUNCHERS


_MPIRUN_LAUNCHERS = frozenset(
    {Launcher.PYTORCH_DDP, Launcher.SMDISTRIBUTED_DATA_PARALLEL, Launcher.MPI}
)
_SMDDP_LAUNCHERS = frozenset(
    {Launcher.PYTORCH_DDP, Launcher.SMDISTRIBUTED_DATA_PARALLEL, Launcher.TORCH_DISTRIBUTED}
)


class SmddpCollective(StrEnum):
    """The SMDDP collective operation that replaces NCCL's (seed: SMDDP collectives)."""

    ALL_REDUCE = "AllReduce"
    ALL_GATHER = "AllGather"


@checked_constructor
@dataclass(frozen=True)
class InstanceFallback:
    """Another instance type (and count) for a group, for when SageMaker has no capacity."""

    instance_type: str
    instance_count: int = 1

    def __post_init__(self) -> None:
        check = FieldChecker("InstanceFallback")
        check.string("instance_type", self.instance_type)
        check.integer("instance_count", self.instance_count)
        check.done()


def _fallbacks(value: Any, count: Any) -> Any:
    """``("ml.p4d.24xlarge", 4)`` pairs and bare types (the group's count) as fallbacks."""
    value = as_tuple(value)
    if not isinstance(value, tuple):
        return value
    items: list[Any] = []
    for item in value:
        if isinstance(item, str):
            item = InstanceFallback(item, count)
        elif isinstance(item, tuple | list) and len(item) == 2:
            item = InstanceFallback(*item)
        items.append(item)
    return tuple(items)


@checked_constructor
@dataclass(frozen=True)
class InstanceGroup:
    """A named set of identical instances in a heterogeneous cluster.

    ``fallbacks`` are tried in order when a job fails for capacity (``CapacityError``, or
    ``ResourceLimitExceeded`` at creation): ``[("ml.p4de.24xlarge", 2), ("ml.p4d.24xlarge", 4)]``.
    Every variant they produce is validated with every rule.
    """

    name: str
    instance_type: str
    instance_count: int = 1
    fallbacks: Sequence[InstanceFallback | tuple[str, int] | str] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "fallbacks", _fallbacks(self.fallbacks, self.instance_count))
        check = FieldChecker("InstanceGroup")
        check.string("name", self.name)
        check.string("instance_type", self.instance_type)
        check.integer("instance_count", self.instance_count)
        check.tuple_of(
            "fallbacks",
            self.fallbacks,
            InstanceFallback,
            "a list of InstanceFallback, (instance type, count) pairs or instance types",
        )
        check.done()


def _group_names(value: Any) -> Any:
    """Accept InstanceGroup objects where group names are expected, like the SDK does."""
    value = as_tuple(value)
    if isinstance(value, tuple):
        return tuple(v.name if isinstance(v, InstanceGroup) else v for v in value)
    return value


@checked_constructor
@dataclass(frozen=True)
class TrainingChannel:
    """An S3 input channel, optionally delivered only to some instance groups."""

    name: str
    s3_uri: str
    # Group names; InstanceGroup objects are accepted too and stored by name.
    instance_groups: Sequence[str | InstanceGroup] = ()
    s3_data_type: str = "S3Prefix"
    distribution: str = "FullyReplicated"
    input_mode: str | None = None
    content_type: str | None = None
    compression: str | None = None
    record_wrapping: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "instance_groups", _group_names(self.instance_groups))
        check = FieldChecker("TrainingChannel")
        check.string("name", self.name)
        check.string("s3_uri", self.s3_uri)
        check.string_tuple("instance_groups", self.instance_groups)
        check.string("s3_data_type", self.s3_data_type)
        check.string("distribution", self.distribution)
        for name in ("input_mode", "content_type", "compression", "record_wrapping"):
            check.string(name, getattr(self, name), optional=True)
        check.done()

    @property
    def group_names(self) -> tuple[str, ...]:
        """The instance groups this channel is sent to (empty: every instance)."""
        return tuple(map(str, self.instance_groups))


@checked_constructor
@dataclass(frozen=True)
class LauncherConfig:
    """One launcher entry of a distribution, with the options the SDK reads for it."""

    kind: Launcher
    processes_per_host: int | None = None
    custom_mpi_options: str | None = None

    def __post_init__(self) -> None:
        check = FieldChecker("LauncherConfig")
        kind = check.enum_member("kind", self.kind, Launcher)
        if kind is not None:
            object.__setattr__(self, "kind", kind)
        check.integer("processes_per_host", self.processes_per_host, optional=True)
        check.string("custom_mpi_options", self.custom_mpi_options, optional=True)
        check.done()


@checked_constructor
@dataclass(frozen=True)
class DistributedTraining:
    """How training is distributed: a launcher, optionally model parallelism, and the group.

    Build it with a static factory (``torch_distributed()``, ``pytorch_ddp()``,
    ``smdistributed_data_parallel()``, ``smdistributed_model_parallel()``, ``mpi()``,
    ``parameter_server()``, ``multi_worker_mirrored()``) or from the SDK's ``distribution``
    dict with ``core.spec_file.distribution_from_sdk_dict``. The constructor takes every
    combination so that the rules can explain the invalid ones.
    """

    launchers: Sequence[LauncherConfig] = ()
    instance_groups: Sequence[str | InstanceGroup] = ()
    model_parallel_parameters: Mapping[str, Any] | None = None
    smddp_collectives: Sequence[SmddpCollective] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "launchers", as_tuple(self.launchers))
        object.__setattr__(self, "instance_groups", _group_names(self.instance_groups))
        object.__setattr__(self, "smddp_collectives", as_tuple(self.smddp_collectives))
        object.__setattr__(
            self, "model_parallel_parameters", _frozen_mapping(self.model_parallel_parameters)
        )
        check = FieldChecker("DistributedTraining")
        check.tuple_of("launchers", self.launchers, LauncherConfig, "a list of LauncherConfig")
        check.string_tuple("instance_groups", self.instance_groups)
        if self.model_parallel_parameters is not None:
            check.json_mapping("model_parallel_parameters", self.model_parallel_parameters)
        if isinstance(self.smddp_collectives, tuple):
            collectives = tuple(
                check.enum_member(f"smddp_collectives[{index}]", value, SmddpCollective)
                for index, value in enumerate(self.smddp_collectives)
            )
            if None not in collectives:
                object.__setattr__(self, "smddp_collectives", collectives)
        else:
            check.tuple_of(
                "smddp_collectives",
                self.smddp_collectives,
                SmddpCollective,
                "a list of SmddpCollective (AllReduce, AllGather)",
            )
        check.done()

    # -- union-like factories, one per launcher ------------------------------------------

    @staticmethod
    def _single(
        kind: Launcher,
        *,
        instance_group: str | InstanceGroup | None = None,
        processes_per_host: int | None = None,
        custom_mpi_options: str | None = None,
        smddp_collective: SmddpCollective | str | None = None,
        model_parallel_parameters: Mapping[str, Any] | None = None,
    ) -> DistributedTraining:
        collectives: tuple[SmddpCollective, ...] = ()
        if smddp_collective is not None:
            check = FieldChecker("DistributedTraining")
            collective = check.enum_member("smddp_collective", smddp_collective, SmddpCollective)
            check.done()
            collectives = (collective,) if collective is not None else ()
        return DistributedTraining(
            launchers=(LauncherConfig(kind, processes_per_host, custom_mpi_options),),
            instance_groups=() if instance_group is None else (instance_group,),
            model_parallel_parameters=model_parallel_parameters,
            smddp_collectives=collectives,
        )

    @staticmethod
    @checked_arguments("DistributedTraining.torch_distributed()")
    def torch_distributed(
        *,
        instance_group: str | InstanceGroup | None = None,
        processes_per_host: int | None = None,
        smddp_collective: SmddpCollective | str | None = None,
    ) -> DistributedTraining:
        """torchrun on every host of the distribution group (PyTorch, GPU or Trainium)."""
        return DistributedTraining._single(
            Launcher.TORCH_DISTRIBUTED,
            instance_group=instance_group,
            processes_per_host=processes_per_host,
            smddp_collective=smddp_collective,
        )

    @staticmethod
    @checked_arguments("DistributedTraining.pytorch_ddp()")
    def pytorch_ddp(
        *,
        instance_group: str | InstanceGroup | None = None,
        custom_mpi_options: str | None = None,
        processes_per_host: int | None = None,
        smddp_collective: SmddpCollective | str | None = None,
    ) -> DistributedTraining:
        """mpirun with SMDDP for PyTorch DDP (the SDK's ``pytorchddp``)."""
        return DistributedTraining._single(
            Launcher.PYTORCH_DDP,
            instance_group=instance_group,
            custom_mpi_options=custom_mpi_options,
            processes_per_host=processes_per_host,
            smddp_collective=smddp_collective,
        )

    @staticmethod
    @checked_arguments("DistributedTraining.smdistributed_data_parallel()")
    def smdistributed_data_parallel(
        *,
        instance_group: str | InstanceGroup | None = None,
        custom_mpi_options: str | None = None,
        processes_per_host: int | None = None,
        smddp_collective: SmddpCollective | str | None = None,
    ) -> DistributedTraining:
        """mpirun with smddprun: the SageMaker data parallel library."""
        return DistributedTraining._single(
            Launcher.SMDISTRIBUTED_DATA_PARALLEL,
            instance_group=instance_group,
            custom_mpi_options=custom_mpi_options,
            processes_per_host=processes_per_host,
            smddp_collective=smddp_collective,
        )

    @staticmethod
    @checked_arguments("DistributedTraining.smdistributed_model_parallel()")
    def smdistributed_model_parallel(
        parameters: Mapping[str, Any],
        *,
        launcher: Launcher = Launcher.MPI,
        instance_group: str | InstanceGroup | None = None,
        processes_per_host: int | None = None,
        custom_mpi_options: str | None = None,
    ) -> DistributedTraining:
        """The SageMaker model parallel library: v1 under ``mpi``, v2 under torch_distributed."""
        return DistributedTraining._single(
            launcher,
            instance_group=instance_group,
            processes_per_host=processes_per_host,
            custom_mpi_options=custom_mpi_options,
            model_parallel_parameters=parameters,
        )

    @staticmethod
    @checked_arguments("DistributedTraining.mpi()")
    def mpi(
        *,
        instance_group: str | InstanceGroup | None = None,
        processes_per_host: int | None = None,
        custom_mpi_options: str | None = None,
    ) -> DistributedTraining:
        """Plain mpirun (Horovod and the like)."""
        return DistributedTraining._single(
            Launcher.MPI,
            instance_group=instance_group,
            processes_per_host=processes_per_host,
            custom_mpi_options=custom_mpi_options,
        )

    @staticmethod
    @checked_arguments("DistributedTraining.parameter_server()")
    def parameter_server(
        *, instance_group: str | InstanceGroup | None = None
    ) -> DistributedTraining:
        """TensorFlow parameter servers (homogeneous clusters only)."""
        return DistributedTraining._single(Launcher.PARAMETER_SERVER, instance_group=instance_group)

    @staticmethod
    @checked_arguments("DistributedTraining.multi_worker_mirrored()")
    def multi_worker_mirrored(
        *, instance_group: str | InstanceGroup | None = None
    ) -> DistributedTraining:
        """TensorFlow MultiWorkerMirroredStrategy (TensorFlow 2.9 and later)."""
        return DistributedTraining._single(
            Launcher.MULTI_WORKER_MIRRORED, instance_group=instance_group
        )

    # -- derived views ---------------------------------------------------------------------

    @property
    def group_names(self) -> tuple[str, ...]:
        """The distribution instance groups, by name."""
        return tuple(map(str, self.instance_groups))

    @property
    def launcher_kinds(self) -> tuple[Launcher, ...]:
        return tuple(entry.kind for entry in self.launchers)

    @property
    def launcher(self) -> LauncherConfig | None:
        """The launcher when exactly one is configured."""
        return self.launchers[0] if len(self.launchers) == 1 else None

    def to_sdk_dict(self) -> dict[str, Any]:
        """The ``distribution`` argument the SDK estimator would take (group names as strings)."""
        result: dict[str, Any] = {}
        for entry in self.launchers:
            options: dict[str, Any] = {"enabled": True}
            if entry.processes_per_host is not None:
                options["processes_per_host"] = entry.processes_per_host
            if entry.custom_mpi_options is not None:
                options["custom_mpi_options"] = entry.custom_mpi_options
            if entry.kind is Launcher.SMDISTRIBUTED_DATA_PARALLEL:
                result.setdefault("smdistributed", {})["dataparallel"] = options
            else:
                result[entry.kind.value] = options
        if self.model_parallel_parameters is not None:
            result.setdefault("smdistributed", {})["modelparallel"] = {
                "enabled": True,
                "parameters": dict(self.model_parallel_parameters),
            }
        if self.instance_groups:
            result["instance_groups"] = list(self.instance_groups)
        return result


@checked_constructor
@dataclass(frozen=True)
class MetricDefinition:
    """A metric SageMaker extracts from the training logs with a regular expression."""

    name: str
    regex: str

    def __post_init__(self) -> None:
        check = FieldChecker("MetricDefinition")
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
    metric_definitions: Sequence[MetricDefinition] = ()
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
            object.__setattr__(self, name, _frozen_mapping(getattr(self, name)))
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
            "metric_definitions", self.metric_definitions, MetricDefinition, "MetricDefinitions"
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
