"""Each host of a local job as its container sees it: files under ``/opt/ml`` and the toolkit's
environment.

SageMaker numbers a job's hosts ``algo-1..N`` over its instance groups in request order (a
homogeneous job's group is ``homogeneousCluster``). Every host gets a private base directory
laid out as the container's ``/opt/ml``: ``input/config/resourceconfig.json``,
``hyperparameters.json`` (every value a JSON-encoded string, as the request carries them),
``inputdataconfig.json``, ``input/data/<channel>``, ``model``, ``output``, ``output/data``,
``checkpoints`` and ``code``. ``toolkit_environment`` gives the ``SM_*`` variables the
sagemaker-training toolkit exports (``environment.Environment.to_env_vars``), with its names and
its value encoding (strings as they are, everything else compact JSON with sorted keys).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hetero_constructs.runtime.config import (
    HOMOGENEOUS_GROUP,
    TOOLKIT_HYPERPARAMETERS,
    decode_hyperparameters,
)
from hetero_constructs.runtime.environment import TrainingEnvironment

#: The container's base directory, where a private mount namespace puts each host's own.
CONTAINER_BASE = "/opt/ml"
NETWORK_INTERFACE = "eth0"
_FOLDERS = (
    "input/config",
    "input/data",
    "model",
    "output/data",
    "output/intermediate",
    "checkpoints",
    "code",
)


@dataclass(frozen=True)
class Host:
    """One host of a local job: its name, group, instance type, and its base directory."""

    name: str
    group: str
    instance_type: str
    base: Path

    @property
    def number(self) -> int:
        return int(self.name.rpartition("-")[2])


@dataclass(frozen=True)
class Cluster:
    """The job's hosts, in SageMaker's numbering, and its groups in request order."""

    hosts: tuple[Host, ...]
    groups: tuple[tuple[str, str, tuple[str, ...]], ...]  # (name, instance type, hosts)
    heterogeneous: bool

    def host(self, name: str) -> Host:
        return next(host for host in self.hosts if host.name == name)

    def group_hosts(self, group: str) -> list[Host]:
        return [host for host in self.hosts if host.group == group]

    def resource_config(self, host: Host) -> dict[str, Any]:
        """``resourceconfig.json`` of ``host``, as SageMaker writes it."""
        return {
            "current_host": host.name,
            "current_instance_type": host.instance_type,
            "current_group_name": host.group,
            "hosts": [h.name for h in self.hosts],
            "instance_groups": [
                {"instance_group_name": name, "instance_type": kind, "hosts": list(names)}
                for name, kind, names in self.groups
            ],
            "network_interface_name": NETWORK_INTERFACE,
        }


def cluster(request: Mapping[str, Any], root: Path) -> Cluster:
    """The hosts of a CreateTrainingJob request, each with its directory under ``root``."""
    resources = request.get("ResourceConfig") or {}
    declared = resources.get("InstanceGroups") or []
    if declared:
        groups = [
            (str(g["InstanceGroupName"]), str(g["InstanceType"]), int(g.get("InstanceCount", 1)))
            for g in declared
        ]
    else:
        groups = [
            (
                HOMOGENEOUS_GROUP,
                str(resources.get("InstanceType", "local")),
                int(resources.get("InstanceCount", 1)),
            )
        ]
    hosts: list[Host] = []
    named: list[tuple[str, str, tuple[str, ...]]] = []
    for name, kind, count in groups:
        mine = []
        for _ in range(count):
            host = f"algo-{len(hosts) + 1}"
            hosts.append(Host(host, name, kind, root / host))
            mine.append(host)
        named.append((name, kind, tuple(mine)))
    return Cluster(tuple(hosts), tuple(named), heterogeneous=bool(declared))


def lay_out(
    host: Host,
    cluster_: Cluster,
    hyperparameters: Mapping[str, str],
    input_config: Mapping[str, Any],
) -> None:
    """``host``'s base directory with its configuration files and empty folders."""
    for folder in _FOLDERS:
        (host.base / folder).mkdir(parents=True, exist_ok=True)
    config = host.base / "input" / "config"
    files = {
        "resourceconfig.json": cluster_.resource_config(host),
        "hyperparameters.json": dict(hyperparameters),
        "inputdataconfig.json": dict(input_config),
    }
    for name, content in files.items():
        (config / name).write_text(json.dumps(content, indent=2))
    for channel in input_config:
        (host.base / "input" / "data" / channel).mkdir(parents=True, exist_ok=True)


def input_data_config(channels: list[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """``inputdataconfig.json``: per channel, its content type, input mode and distribution.
    Every channel is ``File`` locally (``Pipe`` and ``FastFile`` read as ``File``)."""
    result: dict[str, dict[str, Any]] = {}
    for channel in channels:
        source = (channel.get("DataSource") or {}).get("S3DataSource") or {}
        entry = {
            "TrainingInputMode": "File",
            "S3DistributionType": str(source.get("S3DataDistributionType", "FullyReplicated")),
            "RecordWrapperType": str(channel.get("RecordWrapperType", "None")),
        }
        if channel.get("ContentType"):
            entry["ContentType"] = str(channel["ContentType"])
        result[str(channel["ChannelName"])] = entry
    return result


def toolkit_value(value: Any) -> str:
    """A value as the toolkit writes it into a variable (``mapping.to_env_vars``)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def user_arguments(hyperparameters: Mapping[str, Any]) -> list[str]:
    """The user's hyperparameters as the toolkit passes them (``mapping.to_cmd_args``):
    sorted, ``--name value`` (``-n`` for a one-letter name), mappings as ``k=v,k=v``."""
    arguments: list[str] = []
    for key in sorted(hyperparameters):
        value = hyperparameters[key]
        arguments.append(f"--{key}" if len(str(key)) > 1 else f"-{key}")
        if isinstance(value, Mapping):
            arguments.append(",".join(f"{k}={v}" for k, v in sorted(value.items())))
        else:
            arguments.append("" if value is None else str(value))
    return arguments


def split(hyperparameters: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the user's hyperparameters, the ``sagemaker_*`` framework ones), JSON-decoded."""
    decoded = decode_hyperparameters(dict(hyperparameters))
    user = {
        k: v
        for k, v in decoded.items()
        if not k.startswith("sagemaker_") and k not in TOOLKIT_HYPERPARAMETERS
    }
    framework = {k: v for k, v in decoded.items() if k not in user}
    return user, framework


def toolkit_environment(
    host: Host,
    cluster_: Cluster,
    hyperparameters: Mapping[str, str],
    input_config: Mapping[str, Any],
    base: str,
    num_cpus: int | None = None,
) -> dict[str, str]:
    """The ``SM_*`` variables the sagemaker-training toolkit exports to ``host``'s script;
    ``base``: the base directory as the script sees it (``/opt/ml``, or the host's own)."""
    user, framework = split(hyperparameters)
    resource_config = cluster_.resource_config(host)
    known = TrainingEnvironment(resource_config, decode_hyperparameters(dict(hyperparameters)))
    extra = {k: v for k, v in framework.items() if k not in TOOLKIT_HYPERPARAMETERS}
    channels = {name: f"{base}/input/data/{name}" for name in input_config}
    program = framework.get("sagemaker_program")
    groups_dict = {
        name: {"instance_group_name": name, "instance_type": kind, "hosts": list(names)}
        for name, kind, names in cluster_.groups
    }
    values: dict[str, Any] = {
        "hosts": [h.name for h in cluster_.hosts],
        "network_interface_name": NETWORK_INTERFACE,
        "hps": user,
        "user_entry_point": program,
        "framework_params": extra,
        "resource_config": resource_config,
        "input_data_config": dict(input_config),
        "output_data_dir": f"{base}/output/data",
        "channels": sorted(channels),
        "current_host": host.name,
        "current_instance_type": host.instance_type,
        "current_instance_group": host.group,
        "current_instance_group_hosts": [h.name for h in cluster_.group_hosts(host.group)],
        "instance_groups": [name for name, _, _ in cluster_.groups],
        "instance_groups_dict": groups_dict,
        "distribution_instance_groups": known.distribution_instance_groups,
        "is_hetero": len(cluster_.groups) > 1,
        "module_name": program[:-3]
        if isinstance(program, str) and program.endswith(".py")
        else program,
        "log_level": framework.get("sagemaker_container_log_level", 20),
        "framework_module": None,
        "input_dir": f"{base}/input",
        "input_config_dir": f"{base}/input/config",
        "output_dir": f"{base}/output",
        "num_cpus": num_cpus if num_cpus is not None else os.cpu_count() or 1,
        "num_gpus": 0,
        "num_neurons": 0,
        "model_dir": f"{base}/model",
        "module_dir": str(framework.get("sagemaker_submit_directory", f"{base}/code")),
        "user_args": user_arguments(user),
        "output_intermediate_dir": f"{base}/output/intermediate",
    }
    values["training_env"] = {
        **{k: v for k, v in values.items() if k not in ("hps", "user_args")},
        "hyperparameters": user,
        "additional_framework_parameters": extra,
        "channel_input_dirs": channels,
        "job_name": framework.get("sagemaker_job_name", ""),
        "master_hostname": known.master_hostname,
        "distribution_hosts": known.distribution_hosts,
    }
    for name, path in channels.items():
        values[f"channel_{name}"] = path
    for key, value in user.items():
        values[f"hp_{key}"] = value
    return {f"SM_{key.upper()}": toolkit_value(value) for key, value in values.items()}


__all__ = [
    "CONTAINER_BASE",
    "Cluster",
    "Host",
    "cluster",
    "input_data_config",
    "lay_out",
    "split",
    "toolkit_environment",
    "toolkit_value",
    "user_arguments",
]
