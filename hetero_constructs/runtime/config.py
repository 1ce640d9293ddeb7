"""Locating, reading and checking the SageMaker training configuration files.

SageMaker writes two JSON files into every training container, and the SageMaker training
toolkit (``sagemaker-training``, preinstalled in the framework containers) reads them:

``<base>/input/config/resourceconfig.json``
    This host's name, all hosts, and, for every instance group, its name, instance type and
    hosts.
``<base>/input/config/hyperparameters.json``
    The job's ``HyperParameters``: a JSON object whose values are strings. The SageMaker SDKs
    JSON-encode each value (``"3"``, ``"true"``, ``"\\"adam\\""``, ``"[\\"gpu\\"]"``). The
    toolkit JSON-decodes each string and keeps the raw string when it is not valid JSON.

``<base>`` is ``/opt/ml``, or ``$SAGEMAKER_BASE_DIR`` when that is set (the toolkit's rule).

This module only uses the standard library and relative imports. It runs in any training
container, including a copy of this folder shipped as a top-level ``hetero_runtime`` package.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
from collections.abc import Mapping
from typing import Any

from .errors import TrainingEnvironmentError

DEFAULT_BASE_DIR = "/opt/ml"
"""The base directory SageMaker mounts into training containers."""

BASE_DIR_ENV = "SAGEMAKER_BASE_DIR"
"""Environment variable that moves the base directory (for local runs and tests)."""

RESOURCE_CONFIG_FILE = "resourceconfig.json"
HYPERPARAMETERS_FILE = "hyperparameters.json"

HOMOGENEOUS_GROUP = "homogeneousCluster"
"""Group name the toolkit assumes when ``current_group_name`` is absent."""

DEFAULT_INSTANCE_TYPE = "local"
"""Instance type the toolkit assumes when ``current_instance_type`` is absent."""

DEFAULT_NETWORK_INTERFACE = "eth0"
"""Network interface the toolkit assumes when ``network_interface_name`` is absent."""

SAGEMAKER_PREFIX = "sagemaker_"
"""Hyperparameters with this prefix are framework parameters, not user hyperparameters."""

TOOLKIT_HYPERPARAMETERS = frozenset(
    {
        "sagemaker_program",
        "sagemaker_submit_directory",
        "sagemaker_enable_cloudwatch_metrics",
        "sagemaker_region",
        "sagemaker_container_log_level",
        "sagemaker_job_name",
        "default_user_module_name",
        "_tuning_objective_metric",
        "sagemaker_s3_output",
    }
)
"""Keys the toolkit consumes itself: neither user hyperparameters nor framework parameters."""

DISTRIBUTION_GROUPS_KEY = "sagemaker_distribution_instance_groups"
"""Hyperparameter naming the instance groups the distributed launcher runs on."""

LAUNCHER_FLAGS = (
    "sagemaker_mpi_enabled",
    "sagemaker_parameter_server_enabled",
    "sagemaker_distributed_dataparallel_enabled",
    "sagemaker_pytorch_ddp_enabled",
    "sagemaker_pytorch_xla_multi_worker_enabled",
    "sagemaker_multi_worker_mirrored_strategy_enabled",
    "sagemaker_torch_distributed_enabled",
)
"""Launcher flags. When ``sagemaker_distribution_instance_groups`` is absent and any of these is
truthy, the toolkit makes the current group the (only) distribution group."""

_RESOURCE_CONFIG_EXAMPLE = (
    '{"current_host": "algo-1", "hosts": ["algo-1", "algo-2"], "current_group_name": "gpu", '
    '"current_instance_type": "ml.p4d.24xlarge", "instance_groups": [{"instance_group_name": '
    '"gpu", "instance_type": "ml.p4d.24xlarge", "hosts": ["algo-1"]}, {"instance_group_name": '
    '"data", "instance_type": "ml.c5.18xlarge", "hosts": ["algo-2"]}]}'
)


def resolve_base_dir(base_dir: str | os.PathLike[str] | None = None) -> str:
    """Return the SageMaker base directory.

    That is ``base_dir`` when given, else ``$SAGEMAKER_BASE_DIR`` when set and non-empty, else
    ``/opt/ml``. The toolkit would turn an empty ``SAGEMAKER_BASE_DIR`` into relative paths;
    here an empty value counts as unset.
    """
    if base_dir is not None:
        return os.fspath(base_dir)
    return os.environ.get(BASE_DIR_ENV) or DEFAULT_BASE_DIR


def config_file_path(file_name: str, base_dir: str | os.PathLike[str] | None = None) -> str:
    """Return ``<base>/input/config/<file_name>`` (see :func:`resolve_base_dir`)."""
    return os.path.join(resolve_base_dir(base_dir), "input", "config", file_name)


def json_type_name(value: object) -> str:
    """Name a Python value by its JSON type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def _how_to_supply(file_name: str) -> str:
    argument = "resource_config" if file_name == RESOURCE_CONFIG_FILE else "hyperparameters"
    return (
        f"SageMaker writes input/config/{file_name} into every training container. Outside "
        f"SageMaker, set {BASE_DIR_ENV} to a directory that holds input/config/{file_name}, or "
        f"pass {argument}=<dict> or {argument}_path=<file> to TrainingEnvironment"
    )


def read_json_object(path: str, file_name: str) -> dict[str, Any]:
    """Read ``path`` and return the JSON object it holds.

    Args:
        path: The file to read.
        file_name: Which SageMaker file this is (``RESOURCE_CONFIG_FILE`` or
            ``HYPERPARAMETERS_FILE``), used to word the fix in error messages.

    Raises:
        TrainingEnvironmentError: The file is missing, unreadable, not UTF-8, not valid JSON,
            or holds something other than a JSON object.
    """
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        raise TrainingEnvironmentError(
            path, "the file does not exist", _how_to_supply(file_name)
        ) from None
    except IsADirectoryError:
        raise TrainingEnvironmentError(
            path, "this is a directory, not a file", _how_to_supply(file_name)
        ) from None
    except UnicodeDecodeError as exc:
        raise TrainingEnvironmentError(
            path,
            f"the file is not UTF-8 text ({exc.reason} at byte {exc.start})",
            f"write {file_name} as UTF-8 encoded JSON",
        ) from None
    except OSError as exc:
        raise TrainingEnvironmentError(
            path,
            f"the file cannot be read ({exc.strerror or exc})",
            "check the file's permissions and that the process may read it",
        ) from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TrainingEnvironmentError(
            path,
            f"the file is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})",
            f"fix the JSON syntax of {file_name}; it must hold one JSON object",
        ) from None
    if not isinstance(value, dict):
        example = _RESOURCE_CONFIG_EXAMPLE
        if file_name != RESOURCE_CONFIG_FILE:
            example = '{"epochs": "3", "sagemaker_torch_distributed_enabled": "true"}'
        raise TrainingEnvironmentError(
            path,
            f"the file must hold a JSON object ({{...}}) but holds a JSON {json_type_name(value)}",
            f"write {file_name} as one JSON object, e.g. {example}",
        )
    return value


def _shape_error(source: str, problem: str) -> TrainingEnvironmentError:
    return TrainingEnvironmentError(
        source,
        problem,
        "give the resource config the shape SageMaker writes, e.g. " + _RESOURCE_CONFIG_EXAMPLE,
    )


def _check_host_list(value: object, where: str, source: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(host, str) for host in value):
        raise _shape_error(
            source,
            f"{where} must be an array of host names (strings), "
            f"got a JSON {json_type_name(value)}: {value!r}",
        )
    seen: set[str] = set()
    for host in value:
        if host in seen:
            raise _shape_error(source, f"{where} lists host {host!r} more than once")
        seen.add(host)
    return list(value)


def _check_optional_string(config: Mapping[str, Any], key: str, source: str) -> None:
    if key in config and not isinstance(config[key], str):
        raise _shape_error(
            source,
            f"'{key}' must be a string, got a JSON {json_type_name(config[key])}: {config[key]!r}",
        )


def check_resource_config(config: object, source: str) -> dict[str, Any]:
    """Check that ``config`` has the shape of ``resourceconfig.json``; return a deep copy.

    Required: ``current_host`` (a string listed in ``hosts``) and ``hosts`` (a non-empty array of
    distinct strings). Optional, but typed when present: ``current_instance_type``,
    ``current_group_name`` and ``network_interface_name`` (strings) and ``instance_groups`` (an
    array of objects with a string ``instance_group_name``, an array ``hosts`` and, if present,
    a string ``instance_type``; group names distinct). Unknown keys are kept.

    Raises:
        TrainingEnvironmentError: Something required is missing or has the wrong type.
    """
    if not isinstance(config, Mapping):
        raise _shape_error(
            source, f"the resource config must be a JSON object, got {json_type_name(config)}"
        )
    for key in ("current_host", "hosts"):
        if key not in config:
            raise _shape_error(source, f"the required key '{key}' is missing")
    hosts = _check_host_list(config["hosts"], "'hosts'", source)
    if not hosts:
        raise _shape_error(source, "'hosts' is empty; it must list every host of the job")
    current_host = config["current_host"]
    if not isinstance(current_host, str):
        raise _shape_error(
            source,
            f"'current_host' must be a string, got a JSON {json_type_name(current_host)}: "
            f"{current_host!r}",
        )
    if current_host not in hosts:
        raise _shape_error(
            source, f"'current_host' {current_host!r} is not one of 'hosts' {hosts!r}"
        )
    for key in ("current_instance_type", "current_group_name", "network_interface_name"):
        _check_optional_string(config, key, source)
    groups = config.get("instance_groups", [])
    if not isinstance(groups, list):
        raise _shape_error(
            source,
            f"'instance_groups' must be an array of group objects, "
            f"got a JSON {json_type_name(groups)}",
        )
    names: set[str] = set()
    for index, group in enumerate(groups):
        where = f"instance_groups[{index}]"
        if not isinstance(group, Mapping):
            raise _shape_error(
                source, f"{where} must be an object, got a JSON {json_type_name(group)}"
            )
        name = group.get("instance_group_name")
        if not isinstance(name, str):
            raise _shape_error(
                source,
                f"{where} needs a string 'instance_group_name', "
                f"got a JSON {json_type_name(name)}: {name!r}",
            )
        if name in names:
            raise _shape_error(source, f"the instance group name {name!r} appears twice")
        names.add(name)
        if "hosts" not in group:
            raise _shape_error(source, f"{where} ({name!r}) has no 'hosts' array")
        _check_host_list(group["hosts"], f"{where}.hosts ({name!r})", source)
        if "instance_type" in group and not isinstance(group["instance_type"], str):
            raise _shape_error(
                source,
                f"{where}.instance_type ({name!r}) must be a string, "
                f"got a JSON {json_type_name(group['instance_type'])}",
            )
    return copy.deepcopy(dict(config))


def decode_hyperparameters(raw: Mapping[str, Any]) -> dict[str, Any]:
    """JSON-decode every string value of ``raw`` as the toolkit does.

    A string that is not valid JSON is kept as is (``"adam"`` stays ``"adam"``, ``"\\"adam\\""``
    becomes ``"adam"``, ``"3"`` becomes ``3``, ``"true"`` becomes ``True``). Values that are not
    strings are kept unchanged. Use this on the raw content of ``hyperparameters.json`` before
    passing it to ``TrainingEnvironment(hyperparameters=...)``, which expects decoded values.
    """
    decoded: dict[str, Any] = {}
    for key, value in raw.items():
        if isinstance(value, str):
            with contextlib.suppress(ValueError):
                value = json.loads(value)
        decoded[key] = value
    return decoded


def check_hyperparameters(hyperparameters: object, source: str) -> dict[str, Any]:
    """Check that ``hyperparameters`` is a mapping with string keys; return a deep copy.

    Also checks ``sagemaker_distribution_instance_groups``, when present, is a list of strings
    (the toolkit would otherwise test group membership against whatever value it holds).

    Raises:
        TrainingEnvironmentError: The value has the wrong shape.
    """
    if not isinstance(hyperparameters, Mapping):
        raise TrainingEnvironmentError(
            source,
            f"hyperparameters must be a JSON object, got {json_type_name(hyperparameters)}",
            'write the hyperparameters as one JSON object, e.g. {"epochs": "3"}',
        )
    for key in hyperparameters:
        if not isinstance(key, str):
            raise TrainingEnvironmentError(
                source,
                f"hyperparameter names must be strings, got {key!r}",
                "use string keys, as in hyperparameters.json",
            )
    groups = hyperparameters.get(DISTRIBUTION_GROUPS_KEY)
    if DISTRIBUTION_GROUPS_KEY in hyperparameters and not (
        isinstance(groups, list) and all(isinstance(name, str) for name in groups)
    ):
        raise TrainingEnvironmentError(
            source,
            f"'{DISTRIBUTION_GROUPS_KEY}' must be a list of instance group names, got {groups!r}",
            'in hyperparameters.json its value must be a JSON-encoded array, e.g. "[\\"gpu\\"]"; '
            "the SageMaker SDK writes it from distribution={'instance_groups': [...]}",
        )
    return copy.deepcopy(dict(hyperparameters))


def split_hyperparameters(
    hyperparameters: Mapping[str, Any],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split decoded hyperparameters as the toolkit does.

    Returns:
        ``(user, framework)``: ``user`` holds the keys that neither start with ``sagemaker_``
        nor are one of :data:`TOOLKIT_HYPERPARAMETERS`; ``framework`` (the toolkit's
        ``additional_framework_parameters``) holds the ``sagemaker_`` keys that are not in
        :data:`TOOLKIT_HYPERPARAMETERS`. The toolkit's own keys are in neither.
    """
    user: dict[str, Any] = {}
    framework: dict[str, Any] = {}
    for key, value in hyperparameters.items():
        if key in TOOLKIT_HYPERPARAMETERS:
            continue
        if key.startswith(SAGEMAKER_PREFIX):
            framework[key] = value
        else:
            user[key] = value
    return user, framework


__all__ = [
    "BASE_DIR_ENV",
    "DEFAULT_BASE_DIR",
    "DEFAULT_INSTANCE_TYPE",
    "DEFAULT_NETWORK_INTERFACE",
    "DISTRIBUTION_GROUPS_KEY",
    "HOMOGENEOUS_GROUP",
    "HYPERPARAMETERS_FILE",
    "LAUNCHER_FLAGS",
    "RESOURCE_CONFIG_FILE",
    "SAGEMAKER_PREFIX",
    "TOOLKIT_HYPERPARAMETERS",
    "check_hyperparameters",
    "check_resource_config",
    "config_file_path",
    "decode_hyperparameters",
    "json_type_name",
    "read_json_object",
    "resolve_base_dir",
    "split_hyperparameters",
]
