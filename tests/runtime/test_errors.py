"""Missing, unreadable and malformed inputs give a ``TrainingEnvironmentError`` that names the
source, the problem and the fix."""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hetero_constructs.runtime import TrainingEnvironment, TrainingEnvironmentError
from hetero_constructs.runtime.config import config_file_path

WriteConfig = Callable[..., Path]

GOOD_CONFIG: dict[str, Any] = {
    "current_host": "algo-1",
    "hosts": ["algo-1", "algo-2"],
    "current_group_name": "gpu",
    "current_instance_type": "ml.p4d.24xlarge",
    "instance_groups": [
        {"instance_group_name": "gpu", "instance_type": "ml.p4d.24xlarge", "hosts": ["algo-1"]},
        {"instance_group_name": "data", "instance_type": "ml.c5.xlarge", "hosts": ["algo-2"]},
    ],
}
GOOD_HPS = {"sagemaker_torch_distributed_enabled": "true", "epochs": "2"}


def error_from(**kwargs: Any) -> TrainingEnvironmentError:
    with pytest.raises(TrainingEnvironmentError) as caught:
        TrainingEnvironment(**kwargs)
    return caught.value


def test_missing_resource_config_names_file_and_fix(
    base_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SAGEMAKER_BASE_DIR", str(base_dir))
    error = error_from()
    path = str(base_dir / "input" / "config" / "resourceconfig.json")
    assert error.source == path
    assert error.problem == "the file does not exist"
    assert "SAGEMAKER_BASE_DIR" in error.fix and "resource_config=" in error.fix
    assert str(error).startswith(f"{path}: the file does not exist. To fix: ")
    assert isinstance(error, ValueError)


def test_missing_hyperparameters(base_dir: Path, write_config_files: WriteConfig) -> None:
    write_config_files(base_dir, GOOD_CONFIG, None)
    error = error_from(base_dir=base_dir)
    assert error.source.endswith("input/config/hyperparameters.json")
    assert "does not exist" in str(error) and "hyperparameters_path=" in str(error)


def test_default_base_dir_is_opt_ml(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SAGEMAKER_BASE_DIR", raising=False)
    assert config_file_path("resourceconfig.json") == "/opt/ml/input/config/resourceconfig.json"
    monkeypatch.setenv("SAGEMAKER_BASE_DIR", "")
    assert config_file_path("hyperparameters.json") == "/opt/ml/input/config/hyperparameters.json"
    monkeypatch.setenv("SAGEMAKER_BASE_DIR", "/x")
    assert config_file_path("hyperparameters.json") == "/x/input/config/hyperparameters.json"


@pytest.mark.parametrize("which", ["resourceconfig.json", "hyperparameters.json"])
def test_invalid_json_reports_position(
    which: str, base_dir: Path, write_config_files: WriteConfig
) -> None:
    config_dir = write_config_files(base_dir, GOOD_CONFIG, GOOD_HPS)
    (config_dir / which).write_text('{\n  "current_host": "algo-1",\n  "hosts": [}\n')
    error = error_from(base_dir=base_dir)
    assert error.source == str(config_dir / which)
    assert "not valid JSON" in error.problem and "line 3, column" in error.problem
    assert "fix the JSON syntax" in error.fix


@pytest.mark.parametrize("which", ["resourceconfig.json", "hyperparameters.json"])
def test_top_level_must_be_an_object(
    which: str, base_dir: Path, write_config_files: WriteConfig
) -> None:
    config_dir = write_config_files(base_dir, GOOD_CONFIG, GOOD_HPS)
    (config_dir / which).write_text('["algo-1"]')
    error = error_from(base_dir=base_dir)
    assert "must hold a JSON object" in error.problem and "JSON array" in error.problem


def test_not_utf8(base_dir: Path, write_config_files: WriteConfig) -> None:
    config_dir = write_config_files(base_dir, GOOD_CONFIG, GOOD_HPS)
    (config_dir / "resourceconfig.json").write_bytes(b'{"current_host": "\xff"}')
    assert "not UTF-8" in error_from(base_dir=base_dir).problem


def test_directory_instead_of_file(base_dir: Path, write_config_files: WriteConfig) -> None:
    config_dir = write_config_files(base_dir, GOOD_CONFIG, None)
    (config_dir / "hyperparameters.json").mkdir()
    assert "directory" in error_from(base_dir=base_dir).problem


def broken(**changes: Any) -> dict[str, Any]:
    config: dict[str, Any] = json.loads(json.dumps(GOOD_CONFIG))
    for key, value in changes.items():
        if value is KeyError:
            del config[key]
        else:
            config[key] = value
    return config


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (broken(hosts=KeyError), "required key 'hosts' is missing"),
        (broken(current_host=KeyError), "required key 'current_host' is missing"),
        (broken(hosts="algo-1"), "'hosts' must be an array of host names"),
        (broken(hosts=[]), "'hosts' is empty"),
        (broken(hosts=["algo-1", 2]), "'hosts' must be an array of host names"),
        (broken(hosts=["algo-1", "algo-1"]), "lists host 'algo-1' more than once"),
        (broken(current_host=1), "'current_host' must be a string"),
        (broken(current_host="algo-9"), "'current_host' 'algo-9' is not one of 'hosts'"),
        (broken(current_group_name=["gpu"]), "'current_group_name' must be a string"),
        (broken(current_instance_type=None), "'current_instance_type' must be a string"),
        (broken(instance_groups={"gpu": {}}), "'instance_groups' must be an array"),
        (broken(instance_groups=None), "'instance_groups' must be an array"),
        (broken(instance_groups=["gpu"]), "instance_groups[0] must be an object"),
        (broken(instance_groups=[{"hosts": []}]), "needs a string 'instance_group_name'"),
        (broken(instance_groups=[{"instance_group_name": "g"}]), "has no 'hosts' array"),
        (
            broken(instance_groups=[{"instance_group_name": "g", "hosts": "algo-1"}]),
            "instance_groups[0].hosts ('g') must be an array",
        ),
        (
            broken(
                instance_groups=[
                    {"instance_group_name": "g", "hosts": ["algo-1"]},
                    {"instance_group_name": "g", "hosts": ["algo-2"]},
                ]
            ),
            "the instance group name 'g' appears twice",
        ),
        (
            broken(instance_groups=[{"instance_group_name": "g", "instance_type": 5, "hosts": []}]),
            "instance_type ('g') must be a string",
        ),
    ],
)
def test_wrong_resource_config_shape(
    config: dict[str, Any], expected: str, base_dir: Path, write_config_files: WriteConfig
) -> None:
    config_dir = write_config_files(base_dir, config, GOOD_HPS)
    error = error_from(base_dir=base_dir)
    assert error.source == str(config_dir / "resourceconfig.json")
    assert expected in error.problem
    assert "give the resource config the shape SageMaker writes" in error.fix
    # The same check applies to a dict argument, which the message names instead of a file.
    error = error_from(resource_config=config, hyperparameters={})
    assert error.source == "the resource_config argument" and expected in error.problem


@pytest.mark.parametrize("value", ['"gpu"', "gpu", "null", "[1]", '{"gpu": 1}'])
def test_malformed_distribution_instance_groups(
    value: str, base_dir: Path, write_config_files: WriteConfig
) -> None:
    config_dir = write_config_files(
        base_dir, GOOD_CONFIG, {**GOOD_HPS, "sagemaker_distribution_instance_groups": value}
    )
    error = error_from(base_dir=base_dir)
    assert error.source == str(config_dir / "hyperparameters.json")
    assert "'sagemaker_distribution_instance_groups' must be a list" in error.problem
    assert '"[\\"gpu\\"]"' in error.fix


def test_dict_arguments_are_checked() -> None:
    error = error_from(resource_config=["algo-1"], hyperparameters={})
    assert error.source == "the resource_config argument"
    assert "must be a JSON object" in error.problem
    error = error_from(resource_config=GOOD_CONFIG, hyperparameters=[1])
    assert error.source == "the hyperparameters argument"
    error = error_from(resource_config=GOOD_CONFIG, hyperparameters={1: "x"})
    assert "names must be strings" in error.problem


def test_dict_and_path_for_the_same_input_is_a_type_error(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="resource_config or resource_config_path"):
        TrainingEnvironment(GOOD_CONFIG, {}, resource_config_path=tmp_path / "rc.json")
    with pytest.raises(TypeError, match="hyperparameters or hyperparameters_path"):
        TrainingEnvironment(GOOD_CONFIG, {}, hyperparameters_path=tmp_path / "hp.json")


def test_error_pickles() -> None:
    error = TrainingEnvironmentError("file.json", "it is broken", "mend it")
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.source, copy.problem, copy.fix, str(copy)) == (
        "file.json",
        "it is broken",
        "mend it",
        str(error),
    )
