"""Launchers beyond data parallelism: model parallelism, Trainium, MultiWorkerMirrored, XLA."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from hetero_constructs.checks.base import Finding, rule
from hetero_constructs.checks.rules.launchers.distribution import (
    SDK_FW,
    distribution_type,
    launcher_path,
)
from hetero_constructs.request.context import MODEL_PARALLEL, RuleContext
from hetero_constructs.service import catalog
from hetero_constructs.spec.distribution import Launcher
from hetero_constructs.spec.fields import is_integer
from hetero_constructs.spec.training import Framework


@rule(
    "LAU-MODEL-PARALLEL-LAUNCHER",
    source="SageMaker model parallel library docs (v1 runs under mpi, v2 under "
    "torch_distributed); SDK v2 'Cannot use more than 1 smdistributed strategy'",
    example='distribution: {"smdistributed": {"modelparallel": {"enabled": true, '
    '"parameters": {"partitions": 2}}}, "mpi": {"enabled": true, "processes_per_host": 8}}',
    needs=(MODEL_PARALLEL,),
)
def model_parallel_launcher(context: RuleContext) -> Iterator[Finding]:
    """``smdistributed.modelparallel`` runs under ``mpi`` (v1) or ``torch_distributed`` (v2) only.

    Without a launcher the toolkit starts plain ``python`` on every host and the library never
    initialises; with ``smdistributed.dataparallel`` it is two smdistributed strategies.
    """
    if not context.model_parallel:
        return
    kinds = {entry.kind for entry in context.launchers}
    if Launcher.SMDISTRIBUTED_DATA_PARALLEL in kinds:
        yield Finding(
            "distribution.smdistributed",
            "smdistributed takes one strategy: dataparallel or modelparallel, not both.",
            ["dataparallel", "modelparallel"],
            "one smdistributed strategy",
            "remove one of the two smdistributed strategies",
        )
    elif not kinds & {Launcher.MPI, Launcher.TORCH_DISTRIBUTED}:
        yield Finding(
            "distribution.smdistributed.modelparallel",
            "Model parallelism needs a launcher; without one the script runs as plain python on "
            "each host.",
            sorted(kind.value for kind in kinds),
            "mpi (model parallel v1) or torch_distributed (model parallel v2)",
            'add "mpi": {"enabled": true, "processes_per_host": 8} to the distribution',
        )


@rule(
    "LAU-MODEL-PARALLEL-PARAMETERS",
    source=f"{SDK_FW} validate_mp_config",
    example='"parameters": {"partitions": 2, "microbatches": 4, "pipeline": "interleaved"}',
    needs=(MODEL_PARALLEL,),
)
def model_parallel_parameters(context: RuleContext) -> Iterator[Finding]:
    """Model-parallel (v1) parameters have the types and ranges the library accepts.

    ``pipeline``, ``placement_strategy``, ``optimize`` from fixed lists; ``microbatches``,
    ``partitions``, ``active_microbatches`` positive integers; flags booleans;
    ``partition_file`` a string; ``auto_partition=false`` needs ``default_partition`` below
    ``partitions``; ``memory_weight`` in [0, 1]; ``ddp_port`` and ``ddp_dist_backend`` need
    ``ddp``; ``horovod`` and ``ddp`` exclude each other.
    """
    distribution = context.spec.distribution
    if distribution is None or distribution.model_parallel_parameters is None:
        return
    params = distribution.model_parallel_parameters
    base = "distribution.smdistributed.modelparallel.parameters"
    for name, allowed in catalog.SMP_ENUM_PARAMETERS.items():
        if name in params and params[name] not in allowed:
            yield _mp(base, name, params[name], ", ".join(allowed))
    for name in catalog.SMP_POSITIVE_INT_PARAMETERS:
        if name in params and not (is_integer(params[name]) and params[name] > 0):
            yield _mp(base, name, params[name], "a positive integer")
    for name in catalog.SMP_BOOL_PARAMETERS:
        if name in params and not isinstance(params[name], bool):
            yield _mp(base, name, params[name], "true or false")
    if "partition_file" in params and not isinstance(params["partition_file"], str):
        yield _mp(base, "partition_file", params["partition_file"], "a string")
    if params.get("auto_partition") is False:
        default: Any = params.get("default_partition")
        partitions: Any = params.get("partitions")
        if not is_integer(default):
            yield _mp(
                base,
                "default_partition",
                default,
                "an integer, required when auto_partition is false",
            )
        elif is_integer(partitions) and not 0 <= default < partitions:
            yield _mp(
                base, "default_partition", default, f"0 to {partitions - 1} (below partitions)"
            )
    weight = params.get("memory_weight")
    if "memory_weight" in params and (
        isinstance(weight, bool) or not isinstance(weight, int | float) or not 0.0 <= weight <= 1.0
    ):
        yield _mp(base, "memory_weight", weight, "a number from 0.0 to 1.0")
    for name in ("ddp_port", "ddp_dist_backend"):
        if name in params and not params.get("ddp"):
            yield _mp(base, name, params[name], f"{name} only together with ddp: true")
    if "ddp_port" in params and not (is_integer(params["ddp_port"]) and params["ddp_port"] >= 0):
        yield _mp(base, "ddp_port", params["ddp_port"], "an integer >= 0")
    if params.get("horovod") is True and params.get("ddp") is True:
        yield _mp(base, "horovod", True, "horovod or ddp, not both")


def _mp(base: str, name: str, value: Any, allowed: str) -> Finding:
    return Finding(
        f"{base}.{name}",
        f"The model parallel parameter '{name}' is out of its domain.",
        value,
        allowed,
        f"set '{name}' to {allowed}",
    )


@rule(
    "LAU-MODEL-PARALLEL-P5",
    source="SDK v2 estimator.py _distribution_configuration: 'SMModelParallel and "
    "SMDataParallel currently do not support p5 instances'",
    example='instance_type: "ml.p4d.24xlarge"',
    severity="warning",
    needs=(MODEL_PARALLEL,),
)
def model_parallel_p5(context: RuleContext) -> Iterator[Finding]:
    """Model parallel v1 (under ``mpi``) does not run on ml.p5.48xlarge, in any group."""
    if not context.model_parallel or context.launcher_kind is Launcher.TORCH_DISTRIBUTED:
        return
    for index, instance_type in enumerate(context.instance_types):
        if context.known(instance_type) and "p5.48xlarge" in instance_type:
            path = (
                f"instance_groups[{index}].instance_type"
                if context.spec.instance_groups
                else "instance_type"
            )
            yield Finding(
                path,
                "The SageMaker model parallel library v1 does not support p5 instances.",
                instance_type,
                "a non-p5 instance type, or model parallel v2 under torch_distributed",
                "use ml.p4d.24xlarge, or move to torch_distributed with model parallel v2",
            )


@rule(
    "LAU-MODEL-PARALLEL-V2-IMAGE",
    source="SDK v2 image_uris.py (SMP v2 selects the smdistributed-modelparallel image)",
    example='image_uri: "658645717510.dkr.ecr.us-west-2.amazonaws.com/'
    'smdistributed-modelparallel:2.2.0-gpu-py310-cu121"',
    needs=(MODEL_PARALLEL,),
)
def model_parallel_v2_image(context: RuleContext) -> Iterator[Finding]:
    """Model parallel v2 (``torch_distributed`` + modelparallel) names its image with ``image_uri``.

    SMP v2 runs only in the separate ``smdistributed-modelparallel`` image, whose regions and
    CUDA suffixes are not part of this library's catalogue.
    """
    if (
        context.model_parallel
        and context.launcher_kind is Launcher.TORCH_DISTRIBUTED
        and context.explicit_image_uri is None
    ):
        yield Finding(
            "image_uri",
            "Model parallel v2 runs only in the smdistributed-modelparallel image.",
            None,
            "an image_uri of the smdistributed-modelparallel repository",
            "set image_uri, e.g. 658645717510.dkr.ecr.<region>.amazonaws.com/"
            "smdistributed-modelparallel:2.2.0-gpu-py310-cu121",
        )


@rule(
    "LAU-TRAINIUM",
    source=f"{SDK_FW} TRAINIUM_SUPPORTED_DISTRIBUTION_STRATEGIES",
    example='distribution: {"torch_distributed": {"enabled": true}}',
)
def trainium_launcher(context: RuleContext) -> Iterator[Finding]:
    """On Trainium the only launcher is ``torch_distributed``."""
    instance_type = distribution_type(context)
    if instance_type is None or not catalog.is_trainium(instance_type):
        return
    for entry in context.launchers:
        if entry.kind is not Launcher.TORCH_DISTRIBUTED:
            yield Finding(
                launcher_path(entry.kind),
                "Trainium instances support only the torch_distributed launcher.",
                entry.kind.value,
                "torch_distributed",
                "launch with torch_distributed on Trainium",
            )


@rule(
    "LAU-MWMS-VERSION",
    source="SDK v2 estimator.py _validate_mwms_config",
    example='framework_version: "2.13.0"',
    needs=(Launcher.MULTI_WORKER_MIRRORED,),
)
def mwms_version(context: RuleContext) -> Iterator[Finding]:
    """``multi_worker_mirrored_strategy`` needs TensorFlow 2.9 or later and no other strategy."""
    kinds = {entry.kind for entry in context.launchers}
    if Launcher.MULTI_WORKER_MIRRORED not in kinds:
        return
    version = context.version
    if (
        context.spec.framework is Framework.TENSORFLOW
        and version is not None
        and version < catalog.MWMS_MIN_TENSORFLOW
    ):
        yield Finding(
            "framework_version",
            "MultiWorkerMirroredStrategy is supported from TensorFlow 2.9.",
            context.spec.framework_version,
            "TensorFlow 2.9 or later",
            "set framework_version to 2.9.2 or later",
        )
    if context.model_parallel:
        yield Finding(
            "distribution",
            "MultiWorkerMirroredStrategy cannot be combined with smdistributed.",
            "smdistributed.modelparallel",
            "multi_worker_mirrored_strategy alone",
            "remove smdistributed from the distribution",
        )


@rule(
    "LAU-PYTORCH-XLA",
    source="SDK v2 pytorch/estimator.py (pytorchxla needs SageMaker Training Compiler); "
    "training_compiler/config.py (homogeneous clusters only)",
    example='distribution: {"torch_distributed": {"enabled": true}}',
    needs=(Launcher.PYTORCH_XLA,),
)
def pytorch_xla(context: RuleContext) -> Iterator[Finding]:
    """``pytorchxla`` is not offered: it needs SageMaker Training Compiler, which has no groups."""
    if any(entry.kind is Launcher.PYTORCH_XLA for entry in context.launchers):
        yield Finding(
            "distribution.pytorchxla",
            "pytorchxla runs only with SageMaker Training Compiler, which this library does not "
            "configure and which refuses heterogeneous clusters.",
            "pytorchxla",
            "torch_distributed, pytorchddp, smdistributed, mpi",
            "use torch_distributed",
        )


__all__ = [
    "model_parallel_launcher",
    "model_parallel_p5",
    "model_parallel_parameters",
    "model_parallel_v2_image",
    "mwms_version",
    "pytorch_xla",
    "trainium_launcher",
]
