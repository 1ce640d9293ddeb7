"""How training is distributed: launchers, SMDDP collectives, model parallelism, the group.

``DistributedTraining`` takes every combination, so that the rules can explain the invalid ones;
its static factories build the valid ones.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Any

from hetero_constructs.spec.cluster import GROUP_NAMES, InstanceGroup
from hetero_constructs.spec.fields import FieldChecker, as_tuple, checked_arguments
from hetero_constructs.spec.schema import (
    INTEGER,
    JSON_MAP,
    STRING,
    FieldType,
    check_fields,
    enum_type,
    objects_type,
    spec_field,
    spec_object,
)


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


@spec_object
class LauncherConfig:
    """One launcher entry of a distribution, with the options the SDK reads for it."""

    kind: Launcher = spec_field(
        enum_type(Launcher), file_key=None, sdk=None, doc="The launcher (its distribution key)."
    )
    processes_per_host: int | None = spec_field(
        INTEGER, default=None, doc="Processes per host (default: one per GPU)."
    )
    custom_mpi_options: str | None = spec_field(
        STRING, default=None, doc="Extra mpirun options (mpirun-based launchers)."
    )

    def __post_init__(self) -> None:
        check_fields(self)


def _collectives(checker: FieldChecker, path: str, value: Any, optional: bool) -> Any:
    if not isinstance(value, tuple):
        checker.tuple_of(
            path, value, SmddpCollective, "a list of SmddpCollective (AllReduce, AllGather)"
        )
        return value
    members = tuple(
        checker.enum_member(f"{path}[{index}]", item, SmddpCollective)
        for index, item in enumerate(value)
    )
    return value if None in members else members


COLLECTIVES = FieldType("list of AllReduce, AllGather", _collectives, normalize=as_tuple)


@spec_object
class DistributedTraining:
    """How training is distributed: a launcher, optionally model parallelism, and the group.

    Build it with a static factory (``torch_distributed()``, ``pytorch_ddp()``,
    ``smdistributed_data_parallel()``, ``smdistributed_model_parallel()``, ``mpi()``,
    ``parameter_server()``, ``multi_worker_mirrored()``) or from the SDK's ``distribution``
    dict with ``spec.file.distribution.distribution_from_sdk_dict``. The constructor takes every
    combination so that the rules can explain the invalid ones.
    """

    launchers: Sequence[LauncherConfig] = spec_field(
        objects_type(LauncherConfig, "a list of LauncherConfig", shape="launchers"),
        default=(),
        file_key=None,
        sdk=None,
        doc="The launchers (one, for a valid spec).",
    )
    instance_groups: Sequence[str | InstanceGroup] = spec_field(
        GROUP_NAMES, default=(), doc="The group that runs the training (one, for a valid spec)."
    )
    model_parallel_parameters: Mapping[str, Any] | None = spec_field(
        JSON_MAP,
        default=None,
        file_key=None,
        sdk="smdistributed.modelparallel.parameters",
        doc="The SageMaker model parallel library's parameters.",
    )
    smddp_collectives: Sequence[SmddpCollective] = spec_field(
        COLLECTIVES,
        default=(),
        file_key="smddp_collective",
        sdk=None,
        doc="The SMDDP collectives that replace NCCL's: AllReduce, AllGather.",
    )

    def __post_init__(self) -> None:
        check_fields(self)

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


__all__ = [
    "COLLECTIVES",
    "DistributedTraining",
    "Launcher",
    "LauncherConfig",
    "SmddpCollective",
]
