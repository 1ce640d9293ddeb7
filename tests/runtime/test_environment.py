"""``TrainingEnvironment``'s own behaviour: inputs, roles, copies, serialisation."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hetero_constructs.runtime import (
    HostRole,
    TrainingEnvironment,
    decode_hyperparameters,
    split_hyperparameters,
)

WriteConfig = Callable[..., Path]


def hetero_config(current_host: str) -> dict[str, Any]:
    groups = [
        {"instance_group_name": "data", "instance_type": "ml.c5.xlarge", "hosts": ["algo-1"]},
        {
            "instance_group_name": "gpu",
            "instance_type": "ml.g5.xlarge",
            "hosts": ["algo-3", "algo-2"],
        },
        {"instance_group_name": "eval", "instance_type": "ml.m5.large", "hosts": ["algo-4"]},
    ]
    group = next(group for group in groups if current_host in group["hosts"])
    return {
        "current_host": current_host,
        "current_group_name": group["instance_group_name"],
        "current_instance_type": group["instance_type"],
        "hosts": ["algo-1", "algo-2", "algo-3", "algo-4"],
        "instance_groups": groups,
    }


HPS = {
    "sagemaker_torch_distributed_enabled": True,
    "sagemaker_distribution_instance_groups": ["gpu"],
}


@pytest.mark.parametrize(
    ("host", "role", "node_rank", "is_master"),
    [
        ("algo-1", HostRole.DATA, None, False),
        ("algo-3", HostRole.DISTRIBUTED, 0, True),
        ("algo-2", HostRole.DISTRIBUTED, 1, False),
        ("algo-4", HostRole.DATA, None, False),
    ],
)
def test_roles(host: str, role: HostRole, node_rank: int | None, is_master: bool) -> None:
    env = TrainingEnvironment(hetero_config(host), HPS)
    assert env.role is role and env.role == role.value and str(env.role) == role.value
    assert env.runs_distributed_training is (role is HostRole.DISTRIBUTED)
    assert env.node_rank == node_rank
    assert env.is_master is is_master
    assert env.data_instance_groups == ["data", "eval"]
    assert env.data_hosts == ["algo-1", "algo-4"]


def test_standalone_when_nothing_is_distributed() -> None:
    env = TrainingEnvironment(hetero_config("algo-2"), {"epochs": 1})
    assert env.role is HostRole.STANDALONE and not env.runs_distributed_training
    assert env.distribution_hosts == [] and env.node_rank is None
    assert env.master_hostname == "algo-1"  # first of all hosts
    assert env.data_instance_groups == ["data", "gpu", "eval"]


def test_no_instance_groups_distributes_over_all_hosts() -> None:
    """Older local-mode configs have no instance_groups: the toolkit then treats every host as
    a distribution host, even without a launcher (node_rank follows distribution_hosts)."""
    config = {"current_host": "b", "hosts": ["a", "b"]}
    env = TrainingEnvironment(config, {})
    assert env.distribution_hosts == ["a", "b"] and env.node_rank == 1
    assert env.role is HostRole.STANDALONE and env.data_hosts == []
    assert TrainingEnvironment(config, {"sagemaker_mpi_enabled": True}).role is HostRole.DISTRIBUTED


def test_files_and_dicts_and_paths_agree(tmp_path: Path, write_config_files: WriteConfig) -> None:
    raw = {key: json.dumps(value) for key, value in HPS.items()} | {"lr": "0.1", "opt": "sgd"}
    config_dir = write_config_files(tmp_path, hetero_config("algo-2"), raw)
    from_base = TrainingEnvironment(base_dir=tmp_path)
    from_paths = TrainingEnvironment(
        resource_config_path=config_dir / "resourceconfig.json",
        hyperparameters_path=str(config_dir / "hyperparameters.json"),
    )
    from_dicts = TrainingEnvironment(hetero_config("algo-2"), decode_hyperparameters(raw))
    assert from_base.to_dict() == from_paths.to_dict() == from_dicts.to_dict()
    assert from_base.hyperparameters == {"lr": 0.1, "opt": "sgd"}
    # Mixed: a dict for one input, the base directory's file for the other.
    assert TrainingEnvironment(hetero_config("algo-2"), base_dir=tmp_path).to_dict() == (
        from_base.to_dict()
    )


def test_hyperparameter_dicts_are_taken_as_decoded(tmp_path: Path) -> None:
    """As the toolkit's Environment(hyperparameters=...) does; an empty dict does not fall
    back to reading the file (the toolkit's ``or`` would)."""
    env = TrainingEnvironment(
        hetero_config("algo-1"), {"epochs": "3"}, base_dir=tmp_path / "does-not-exist"
    )
    assert env.hyperparameters == {"epochs": "3"}
    assert TrainingEnvironment(hetero_config("algo-1"), {}, base_dir=tmp_path).hyperparameters == {}


def test_split_hyperparameters() -> None:
    user, framework = split_hyperparameters(
        {
            "epochs": 3,
            "sagemaker_program": "train.py",
            "sagemaker_region": "us-west-2",
            "_tuning_objective_metric": "loss",
            "default_user_module_name": "m",
            "sagemaker_mpi_enabled": True,
            "sagemakerish": 1,
        }
    )
    assert user == {"epochs": 3, "sagemakerish": 1}
    assert framework == {"sagemaker_mpi_enabled": True}


def test_snapshot_is_read_only() -> None:
    config = hetero_config("algo-2")
    env = TrainingEnvironment(config, HPS)
    config["hosts"].append("algo-9")
    config["instance_groups"][1]["hosts"].clear()
    env.hosts.append("x")
    env.distribution_hosts.clear()
    env.instance_groups_dict["gpu"]["hosts"].clear()
    env.resource_config["hosts"].clear()
    assert env.hosts == ["algo-1", "algo-2", "algo-3", "algo-4"]
    assert env.distribution_hosts == ["algo-3", "algo-2"]
    assert env.instance_groups_dict["gpu"]["hosts"] == ["algo-3", "algo-2"]


def test_to_dict_is_json_and_repr_is_short() -> None:
    env = TrainingEnvironment(hetero_config("algo-3"), HPS)
    summary = json.loads(json.dumps(env.to_dict()))
    assert summary["role"] == "distributed" and summary["node_rank"] == 0
    assert repr(env) == (
        "TrainingEnvironment(current_host='algo-3', current_instance_group='gpu', "
        "role='distributed', distribution_hosts=['algo-3', 'algo-2'])"
    )
