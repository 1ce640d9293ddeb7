"""Which launcher runs where: one launcher, its framework, torch_distributed, SMDDP and MPI."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from hetero_constructs.checks.base import Finding, rule
from hetero_constructs.request.context import SMDDP_COLLECTIVE, RuleContext
from hetero_constructs.service import catalog
from hetero_constructs.spec.distribution import Launcher
from hetero_constructs.spec.fields import is_integer
from hetero_constructs.spec.training import Framework

SDK_FW = "SageMaker Python SDK v2 src/sagemaker/fw_utils.py"
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


def launcher_path(kind: Launcher, option: str = "") -> str:
    key = (
        "smdistributed.dataparallel" if kind is Launcher.SMDISTRIBUTED_DATA_PARALLEL else kind.value
    )
    return f"distribution.{key}" + (f".{option}" if option else "")


def distribution_type(context: RuleContext) -> str | None:
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
    source=f"{SDK_FW} and pytorch/estimator.py: 'Cannot use both pytorchddp and smdistributed'",
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
                launcher_path(entry.kind),
                f"The {entry.kind.value} launcher exists only for {needs.value}.",
                framework.value,
                needs.value,
                f"use framework '{needs.value}', or a launcher of {framework.value}",
            )


@rule(
    "LAU-TORCH-DISTRIBUTED-INSTANCE",
    source=f"{SDK_FW} validate_torch_distributed_distribution",
    example='instance_groups: [{"name": "gpu", "instance_type": "ml.p4d.24xlarge", '
    '"instance_count": 2}]',
    needs=(Launcher.TORCH_DISTRIBUTED,),
)
def torch_distributed_instance(context: RuleContext) -> Iterator[Finding]:
    """``torch_distributed`` runs only on the GPU or Trainium instance types."""
    if context.launcher_kind is not Launcher.TORCH_DISTRIBUTED:
        return
    instance_type = distribution_type(context)
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
    source=f"{SDK_FW} TORCH_DISTRIBUTED_GPU_SUPPORTED_FRAMEWORK_VERSIONS and "
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
    instance_type = distribution_type(context)
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


def smddp_user(context: RuleContext) -> str | None:
    """What runs SMDDP on the distribution group: an SMDDP launcher, or an SMDDP collective
    chosen under ``torch_distributed``; None when nothing does."""
    kind = context.launcher_kind
    if kind is not None and kind in _SMDDP:
        return kind.value
    distribution = context.spec.distribution
    if kind is Launcher.TORCH_DISTRIBUTED and distribution and distribution.smddp_collectives:
        return "an SMDDP collective"
    return None


@rule(
    "LAU-SMDDP-INSTANCE-UNLISTED",
    source="Seed 000 (SMDDP supported instance types, per framework); SDK v2 before v2.221.1 "
    "SM_DATAPARALLEL_SUPPORTED_INSTANCE_TYPES: no source lists any other type",
    example='instance_groups: [{"name": "gpu", "instance_type": "ml.p4d.24xlarge", '
    '"instance_count": 2}]',
    needs=(*_SMDDP, SMDDP_COLLECTIVE),
)
def smddp_instance_unlisted(context: RuleContext) -> Iterator[Finding]:
    """SMDDP (a launcher, or a collective under ``torch_distributed``) runs on a listed type.

    ml.p3.16xlarge, ml.p3dn.24xlarge, ml.p4d.24xlarge and ml.p4de.24xlarge are the types a source
    lists; on any other (ml.g5.*, ml.p5.48xlarge, ...) it is an error, not a warning.
    """
    user = smddp_user(context)
    instance_type = distribution_type(context) if user else None
    if instance_type and instance_type not in catalog.SMDDP_LISTED_INSTANCE_TYPES:
        allowed = catalog.SMDDP_INSTANCE_TYPES[context.spec.framework]
        yield Finding(
            context.distribution_path,
            f"The SageMaker data parallel library ({user}) is not listed for this instance "
            "type by any source.",
            instance_type,
            ", ".join(allowed),
            f"use {allowed[0]} for the distribution group, or torch_distributed with NCCL "
            "(no SMDDP)",
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
    A warning where sources disagree (the SDK's old list has the type); a type no source lists
    is LAU-SMDDP-INSTANCE-UNLISTED.
    """
    kind = context.launcher_kind
    if kind not in _SMDDP:
        return
    instance_type = distribution_type(context)
    allowed = catalog.SMDDP_INSTANCE_TYPES[context.spec.framework]
    if (
        instance_type
        and instance_type not in allowed
        and instance_type in catalog.SMDDP_LISTED_INSTANCE_TYPES
    ):
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
    source=f"{SDK_FW} SM_DATAPARALLEL_SUPPORTED_FRAMEWORK_VERSIONS; seed 000 (TensorFlow "
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
                launcher_path(entry.kind, "custom_mpi_options"),
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
        path = launcher_path(entry.kind, "processes_per_host")
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


__all__ = [
    "SDK_FW",
    "distribution_type",
    "launcher_framework",
    "launcher_path",
    "mpi_options",
    "one_launcher",
    "processes_per_host",
    "pytorchddp_with_smdistributed",
    "smddp_instance",
    "smddp_instance_unlisted",
    "smddp_user",
    "smddp_version",
    "torch_distributed_entry_point",
    "torch_distributed_instance",
    "torch_distributed_version",
]
