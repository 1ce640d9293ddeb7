"""Launcher rules: which launcher runs where, on which framework, version and instance type."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from hetero_constructs.checks.base import Finding, rule
from hetero_constructs.request.context import MODEL_PARALLEL, RuleContext
from hetero_constructs.service import catalog
from hetero_constructs.spec.distribution import Launcher
from hetero_constructs.spec.fields import is_integer
from hetero_constructs.spec.training import Framework

_SDK_FW = "SageMaker Python SDK v2 src/sagemaker/fw_utils.py"
_PYTORCH_ONLY = frozenset({Launcher.TORCH_DISTRIBUTED, Launcher.PYTORCH_DDP, Launcher.PYTORCH_XLA})
_TENSORFLOW_ONLY = frozenset({Launcher.MULTI_WORKER_MIRRORED})
_PROCESS_LAUNCHERS = frozenset(
    {
        Launcher.MPI,
        Launcher.TORCH_DISTRIBUTED,
        Launcher.PYTORCH_DDP,
        Launcher.SMDISTRIBUTED_DATA_PARALLEL,
    }
)
_SMDDP = frozenset({Launcher.PYTORCH_DDP, Launcher.SMDISTRIBUTED_DATA_PARALLEL})


def _launcher_path(kind: Launcher, option: str = "") -> str:
    key = (
        "smdistributed.dataparallel" if kind is Launcher.SMDISTRIBUTED_DATA_PARALLEL else kind.value
    )
    return f"distribution.{key}" + (f".{option}" if option else "")


def _distribution_type(context: RuleContext) -> str | None:
    """The distribution instance type, when it is concrete."""
    instance_type = context.distribution_instance_type
    return instance_type if context.known(instance_type) else None


def _checks_versions(context: RuleContext) -> bool:
    """Version lists apply to DLC images; with image_uri the SDK skips them, and so do we."""
    return context.explicit_image_uri is None and context.known(context.spec.framework_version)


@rule(
    "LAU-ONE-LAUNCHER",
    source="Toolkit launcher precedence (sagemaker-pytorch-training-toolkit training.py): "
    "a second launcher is silently ignored",
    example='distribution: {"torch_distributed": {"enabled": true}}',
)
def one_launcher(context: RuleContext) -> Iterator[Finding]:
    """At most one launcher is enabled.

    The toolkit picks one launcher by precedence and ignores the others, so a second launcher
    is always a mistake. (``smdistributed.modelparallel`` is a library, not a launcher: it runs
    under ``mpi`` or ``torch_distributed``.)
    """
    if len(context.launchers) > 1 and {e.kind for e in context.launchers} != _SMDDP:
        # (pytorchddp with smdistributed.dataparallel has its own rule)
        names = [entry.kind.value for entry in context.launchers]
        yield Finding(
            "distribution",
            "More than one launcher is enabled; the toolkit would run only one of them.",
            names,
            "exactly one of torch_distributed, pytorchddp, smdistributed.dataparallel, mpi, "
            "parameter_server, multi_worker_mirrored_strategy",
            "keep the launcher you mean and remove the others",
        )


@rule(
    "LAU-PYTORCHDDP-SMDISTRIBUTED",
    source=f"{_SDK_FW} and pytorch/estimator.py: 'Cannot use both pytorchddp and smdistributed'",
    example='distribution: {"pytorchddp": {"enabled": true}}',
    needs=(Launcher.PYTORCH_DDP,),
)
def pytorchddp_with_smdistributed(context: RuleContext) -> Iterator[Finding]:
    """``pytorchddp`` and ``smdistributed`` are never combined."""
    kinds = {entry.kind for entry in context.launchers}
    if Launcher.PYTORCH_DDP in kinds and (
        Launcher.SMDISTRIBUTED_DATA_PARALLEL in kinds or context.model_parallel
    ):
        yield Finding(
            "distribution",
            "pytorchddp is SMDDP under mpirun already; it cannot be combined with smdistributed.",
            sorted(kind.value for kind in kinds),
            "pytorchddp alone, or smdistributed alone",
            "remove either pytorchddp or smdistributed",
        )


@rule(
    "LAU-FRAMEWORK",
    source="SDK v2 pytorch/estimator.py, estimator.py _validate_mwms_config",
    example='framework: "tensorflow", distribution: {"multi_worker_mirrored_strategy": '
    '{"enabled": true}}',
)
def launcher_framework(context: RuleContext) -> Iterator[Finding]:
    """PyTorch-only launchers run only with PyTorch, TensorFlow-only ones only with TensorFlow.

    PyTorch-only: ``torch_distributed``, ``pytorchddp``, ``pytorchxla``.
    TensorFlow-only: ``multi_worker_mirrored_strategy``.
    """
    framework = context.spec.framework
    for entry in context.launchers:
        needs = None
        if entry.kind in _PYTORCH_ONLY and framework is not Framework.PYTORCH:
            needs = Framework.PYTORCH
        if entry.kind in _TENSORFLOW_ONLY and framework is not Framework.TENSORFLOW:
            needs = Framework.TENSORFLOW
        if needs is not None:
            yield Finding(
                _launcher_path(entry.kind),
                f"The {entry.kind.value} launcher exists only for {needs.value}.",
                framework.value,
                needs.value,
                f"use framework '{needs.value}', or a launcher of {framework.value}",
            )


@rule(
    "LAU-TORCH-DISTRIBUTED-INSTANCE",
    source=f"{_SDK_FW} validate_torch_distributed_distribution",
    example='instance_groups: [{"name": "gpu", "instance_type": "ml.p4d.24xlarge", '
    '"instance_count": 2}]',
    needs=(Launcher.TORCH_DISTRIBUTED,),
)
def torch_distributed_instance(context: RuleContext) -> Iterator[Finding]:
    """``torch_distributed`` runs only on the GPU or Trainium instance types."""
    if context.launcher_kind is not Launcher.TORCH_DISTRIBUTED:
        return
    instance_type = _distribution_type(context)
    if instance_type and not catalog.is_accelerated(instance_type):
        yield Finding(
            context.distribution_path,
            "torch_distributed (torchrun) is supported only on GPU and Trainium instances.",
            instance_type,
            "a GPU (ml.p*, ml.g*) or Trainium (ml.trn*) instance type",
            "run the launcher on a GPU or Trainium group, e.g. ml.p4d.24xlarge",
        )


@rule(
    "LAU-TORCH-DISTRIBUTED-VERSION",
    source=f"{_SDK_FW} TORCH_DISTRIBUTED_GPU_SUPPORTED_FRAMEWORK_VERSIONS and "
    "TRAINIUM_SUPPORTED_TORCH_DISTRIBUTED_FRAMEWORK_VERSIONS",
    example='framework_version: "2.3.0", py_version: "py311"',
    needs=(Launcher.TORCH_DISTRIBUTED,),
)
def torch_distributed_version(context: RuleContext) -> Iterator[Finding]:
    """``torch_distributed`` needs a supported PyTorch version and a ``py3*`` Python.

    GPU: 1.13.1 to 2.8.0 (2.4.0 is not supported); Trainium: 1.11 to 2.0.0. Skipped with
    ``image_uri``.
    """
    if context.launcher_kind is not Launcher.TORCH_DISTRIBUTED or not _checks_versions(context):
        return
    instance_type = _distribution_type(context)
    if instance_type is None or context.spec.framework is not Framework.PYTORCH:
        return
    trainium = catalog.is_trainium(instance_type)
    versions = (
        catalog.TORCH_DISTRIBUTED_TRAINIUM_VERSIONS
        if trainium
        else catalog.TORCH_DISTRIBUTED_GPU_VERSIONS
    )
    if catalog.is_accelerated(instance_type) and not context.version_in(versions):
        kind = "Trainium" if trainium else "GPU"
        yield Finding(
            "framework_version",
            f"torch_distributed on {kind} instances does not support this PyTorch version.",
            context.spec.framework_version,
            ", ".join(sorted(versions, key=catalog.version_key)),
            "pick a listed framework_version, or pass image_uri for a custom image",
        )
    py_version = context.spec.py_version
    if context.known(py_version) and "py3" not in str(py_version):
        yield Finding(
            "py_version",
            "torch_distributed needs a Python 3 image.",
            py_version,
            "a py3* version such as py311",
            "set py_version to the release's Python 3 version",
        )


@rule(
    "LAU-TORCH-DISTRIBUTED-ENTRY-POINT",
    source="SDK v2 fw_utils (entry point must be *.py); training toolkit torch_distributed.py "
    "(no setup.py packages)",
    example='entry_point: "train.py"',
    needs=(Launcher.TORCH_DISTRIBUTED,),
)
def torch_distributed_entry_point(context: RuleContext) -> Iterator[Finding]:
    """``torch_distributed`` runs a ``.py`` entry point, never a package with ``setup.py``."""
    if Launcher.TORCH_DISTRIBUTED not in context.features:  # the launchers' kinds among them
        return
    entry_point = context.spec.entry_point
    if context.known(entry_point) and not entry_point.endswith(".py"):
        yield Finding(
            "entry_point",
            "torch_distributed runs only Python programs.",
            entry_point,
            "a path ending in .py",
            "point entry_point at the training script (*.py)",
        )
    source_dir = context.spec.source_dir
    if (
        source_dir
        and context.known(source_dir)
        and not source_dir.startswith("s3://")
        and context.holds_file(source_dir, "setup.py")
    ):
        yield Finding(
            "source_dir",
            "The source directory is a Python package (it has setup.py); the toolkit refuses "
            "packages under torch_distributed.",
            os.path.join(source_dir, "setup.py"),
            "a source directory without setup.py",
            "remove setup.py (list dependencies in requirements.txt instead)",
        )


@rule(
    "LAU-SMDDP-INSTANCE",
    source="Seed 000 (SMDDP supported instance types); SDK v2 before v2.221.1 "
    "SM_DATAPARALLEL_SUPPORTED_INSTANCE_TYPES",
    example='instance_groups: [{"name": "gpu", "instance_type": "ml.p4d.24xlarge", '
    '"instance_count": 2}]',
    severity="warning",
    needs=_SMDDP,
)
def smddp_instance(context: RuleContext) -> Iterator[Finding]:
    """SMDDP launchers (``pytorchddp``, ``smdistributed.dataparallel``) run on supported types only.

    PyTorch: ml.p4d.24xlarge, ml.p4de.24xlarge. TensorFlow: ml.p3.16xlarge, ml.p3dn.24xlarge,
    ml.p4d.24xlarge. The check is on the distribution group's type; the SDK no longer checks it.
    """
    kind = context.launcher_kind
    if kind not in _SMDDP:
        return
    instance_type = _distribution_type(context)
    allowed = catalog.SMDDP_INSTANCE_TYPES[context.spec.framework]
    if instance_type and instance_type not in allowed:
        yield Finding(
            context.distribution_path,
            f"The SageMaker data parallel library ({kind.value}) does not run on this instance "
            f"type with {context.spec.framework.value}.",
            instance_type,
            ", ".join(allowed),
            f"use {allowed[0]} for the distribution group, or launch with torch_distributed",
        )


@rule(
    "LAU-SMDDP-VERSION",
    source=f"{_SDK_FW} SM_DATAPARALLEL_SUPPORTED_FRAMEWORK_VERSIONS; seed 000 (TensorFlow "
    "support ends at 2.11.0)",
    example='framework_version: "2.2.0", py_version: "py310"',
    needs=_SMDDP,
)
def smddp_version(context: RuleContext) -> Iterator[Finding]:
    """SMDDP launchers need a framework version with the library and a ``py3*`` Python.

    PyTorch 1.6 to 2.2.0; TensorFlow 2.3 to 2.11.0 (the library left later TensorFlow DLCs).
    Skipped with ``image_uri``.
    """
    kind = context.launcher_kind
    if kind not in _SMDDP or not _checks_versions(context):
        return
    versions = catalog.SMDDP_FRAMEWORK_VERSIONS[context.spec.framework]
    if not context.version_in(versions):
        newest = max(versions, key=catalog.version_key)
        yield Finding(
            "framework_version",
            f"The SageMaker data parallel library ({kind.value}) is not in this "
            f"{context.spec.framework.value} version's container.",
            context.spec.framework_version,
            f"{context.spec.framework.value} versions up to {newest} listed by the SDK",
            f"use framework_version {newest}, or torch_distributed for newer PyTorch",
        )
    py_version = context.spec.py_version
    if context.known(py_version) and "py3" not in str(py_version):
        yield Finding(
            "py_version",
            "The SageMaker data parallel library needs a Python 3 image.",
            py_version,
            "a py3* version",
            "set py_version to the release's Python 3 version",
        )


@rule(
    "LAU-MPI-OPTIONS",
    source="SDK v2 estimator.py: custom_mpi_options is read only for mpi and smdistributed",
    example='distribution: {"mpi": {"enabled": true, "custom_mpi_options": "-verbose"}}',
    needs=("custom_mpi_options",),
)
def mpi_options(context: RuleContext) -> Iterator[Finding]:
    """``custom_mpi_options`` goes to mpirun-based launchers: pytorchddp, smdistributed, mpi."""
    for entry in context.launchers:
        if entry.custom_mpi_options is not None and not entry.kind.is_mpirun_based:
            yield Finding(
                _launcher_path(entry.kind, "custom_mpi_options"),
                f"{entry.kind.value} does not run mpirun, so MPI options would be ignored.",
                entry.custom_mpi_options,
                "custom_mpi_options only under pytorchddp, smdistributed or mpi",
                "remove custom_mpi_options, or switch to an mpirun-based launcher",
            )


@rule(
    "LAU-PROCESSES-PER-HOST",
    source="Training toolkit runner.py (sagemaker_mpi_num_of_processes_per_host); "
    "SDK v2 estimator.py",
    example='distribution: {"mpi": {"enabled": true, "processes_per_host": 8}}',
    needs=("processes_per_host",),
)
def processes_per_host(context: RuleContext) -> Iterator[Finding]:
    """``processes_per_host`` is a positive integer, on launchers that start per-host processes."""
    for entry in context.launchers:
        value: Any = entry.processes_per_host
        if value is None or not context.known(value):
            continue
        path = _launcher_path(entry.kind, "processes_per_host")
        if entry.kind not in _PROCESS_LAUNCHERS:
            yield Finding(
                path,
                f"{entry.kind.value} does not start a number of processes per host.",
                value,
                "processes_per_host only under mpi, torch_distributed, pytorchddp, smdistributed",
                "remove processes_per_host",
            )
        elif not is_integer(value) or value < 1:
            yield Finding(
                path,
                "processes_per_host must count at least one process.",
                value,
                "an integer >= 1 (usually the number of GPUs per instance)",
                "set processes_per_host to the GPUs per instance, e.g. 8 on ml.p4d.24xlarge",
            )


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
    source=f"{_SDK_FW} validate_mp_config",
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
    source=f"{_SDK_FW} TRAINIUM_SUPPORTED_DISTRIBUTION_STRATEGIES",
    example='distribution: {"torch_distributed": {"enabled": true}}',
)
def trainium_launcher(context: RuleContext) -> Iterator[Finding]:
    """On Trainium the only launcher is ``torch_distributed``."""
    instance_type = _distribution_type(context)
    if instance_type is None or not catalog.is_trainium(instance_type):
        return
    for entry in context.launchers:
        if entry.kind is not Launcher.TORCH_DISTRIBUTED:
            yield Finding(
                _launcher_path(entry.kind),
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
