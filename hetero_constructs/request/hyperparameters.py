"""Hyperparameters exactly as the SageMaker training toolkit parses them.

The toolkit ``json.loads`` every value and keeps the raw string when that fails, so every
value is JSON-encoded as the SDK does: strings quoted, ``true``/``false``, bare numbers.
"""

from __future__ import annotations

import json
import math
import posixpath
from json.encoder import encode_basestring_ascii
from typing import Any

from hetero_constructs.request.context import RuleContext
from hetero_constructs.spec.distribution import Launcher
from hetero_constructs.spec.training import Framework

CODE_CHANNEL = "code"
CONTAINER_CODE_PATH = "/opt/ml/input/data/code/sourcedir.tar.gz"


def encode(value: Any) -> str:
    """``json.dumps(value)``, with the common scalars and lists written directly (same text).

    ``json.dumps`` costs microseconds even for a one-item list; a list of group names is in
    every heterogeneous job's hyperparameters.
    """
    kind = type(value)
    if kind is str:
        return encode_basestring_ascii(value)
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return int.__repr__(value)
    if kind is float and math.isfinite(value):
        return float.__repr__(value)
    if value is None:
        return "null"
    if kind is list:  # spec values are acyclic and of bounded depth (fieldcheck)
        return "[" + ", ".join(map(encode, value)) + "]"
    return json.dumps(value)


def program(context: RuleContext) -> str:
    """``sagemaker_program``: the entry point relative to ``source_dir``.

    Without a source directory only the entry point file itself is shipped, at the archive root.
    """
    entry = context.spec.entry_point
    return entry if context.spec.source_dir else posixpath.basename(entry)


def source_object_uri(context: RuleContext, job_name: str) -> str:
    """Where the packaged ``source_dir`` lives in S3.

    The deployment's location when given; a ``source_dir`` that is already an S3 object is used
    verbatim; otherwise the SDK's default, ``s3://{output bucket}/{job}/source/sourcedir.tar.gz``.
    """
    if context.deployment.submit_directory:
        return context.deployment.submit_directory
    source_dir = context.spec.source_dir
    if source_dir and source_dir.startswith("s3://"):
        return source_dir
    output = context.output_path or "s3://sagemaker-output-bucket"
    bucket = output.removeprefix("s3://").split("/", 1)[0]
    return f"s3://{bucket}/{job_name}/source/sourcedir.tar.gz"


def submit_directory(context: RuleContext, job_name: str) -> str:
    if context.spec.enable_network_isolation:
        return CONTAINER_CODE_PATH
    return source_object_uri(context, job_name)


def script_mode(context: RuleContext, job_name: str) -> dict[str, Any]:
    """The keys every script-mode job carries (SDK Framework._script_mode_hyperparam_update)."""
    return {
        "sagemaker_program": program(context),
        "sagemaker_submit_directory": submit_directory(context, job_name),
        "sagemaker_container_log_level": context.spec.container_log_level,
        "sagemaker_job_name": job_name,
        "sagemaker_region": context.region,
    }


def distribution(context: RuleContext) -> dict[str, Any]:
    """The keys the toolkits read to pick and configure the launcher (facts file section 2.3)."""
    values: dict[str, Any] = {}
    instance_type = context.distribution_instance_type
    for entry in context.launchers:
        kind = entry.kind
        if kind is Launcher.MPI:
            values["sagemaker_mpi_enabled"] = True
            values["sagemaker_mpi_custom_mpi_options"] = entry.custom_mpi_options or ""
        elif kind in (Launcher.PYTORCH_DDP, Launcher.SMDISTRIBUTED_DATA_PARALLEL):
            # pytorchddp is rewritten to SMDDP by the SDK since v2.221.1; we emit the same keys.
            values["sagemaker_distributed_dataparallel_enabled"] = True
            values["sagemaker_instance_type"] = instance_type
            values["sagemaker_distributed_dataparallel_custom_mpi_options"] = (
                entry.custom_mpi_options or ""
            )
        elif kind is Launcher.TORCH_DISTRIBUTED:
            values["sagemaker_torch_distributed_enabled"] = True
            values["sagemaker_instance_type"] = instance_type
        elif kind is Launcher.PARAMETER_SERVER:
            values["sagemaker_parameter_server_enabled"] = True
        elif kind is Launcher.MULTI_WORKER_MIRRORED:
            values["sagemaker_multi_worker_mirrored_strategy_enabled"] = True
        elif kind is Launcher.PYTORCH_XLA:
            values["sagemaker_pytorch_xla_multi_worker_enabled"] = True
        if entry.processes_per_host is not None:
            # The toolkit reads this for every runner, torchrun included.
            values["sagemaker_mpi_num_of_processes_per_host"] = entry.processes_per_host
    distribution_spec = context.spec.distribution
    if distribution_spec is not None and distribution_spec.model_parallel_parameters is not None:
        values["mp_parameters"] = dict(distribution_spec.model_parallel_parameters)
        values.setdefault("sagemaker_distributed_dataparallel_enabled", False)
        values["sagemaker_instance_type"] = instance_type
    group = context.distribution_group
    if group is not None:
        # Written for every launcher: without it each group starts its own world (the SDK
        # omits it for torch_distributed).
        values["sagemaker_distribution_instance_groups"] = [group.name]
    return values


def tensorflow_model_dir(context: RuleContext, job_name: str) -> dict[str, Any]:
    if context.spec.framework is not Framework.TENSORFLOW:
        return {}
    if any(entry.kind is Launcher.MPI for entry in context.launchers):
        return {"model_dir": "/opt/ml/model"}
    output = (context.output_path or "").rstrip("/")
    return {"model_dir": f"{output}/{job_name}/model"}


def all_hyperparameters(context: RuleContext, job_name: str) -> dict[str, Any]:
    """User values, then the SDK's keys (which win, as in the SDK), before encoding."""
    values: dict[str, Any] = dict(context.spec.hyperparameters)
    values.update(tensorflow_model_dir(context, job_name))
    values.update(script_mode(context, job_name))
    values.update(distribution(context))
    return values


def encoded_hyperparameters(context: RuleContext, job_name: str) -> dict[str, str]:
    return {
        str(key): encode(value) for key, value in all_hyperparameters(context, job_name).items()
    }


__all__ = [
    "CODE_CHANNEL",
    "CONTAINER_CODE_PATH",
    "all_hyperparameters",
    "distribution",
    "encode",
    "encoded_hyperparameters",
    "program",
    "script_mode",
    "source_object_uri",
    "submit_directory",
    "tensorflow_model_dir",
]
