"""The spec file: SDK argument names, JSON and YAML, and every problem reported at once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hetero_constructs.spec.cluster import InstanceGroup
from hetero_constructs.spec.distribution import DistributedTraining, Launcher, SmddpCollective
from hetero_constructs.spec.file.distribution import distribution_from_sdk_dict
from hetero_constructs.spec.file.reader import load_spec_file, read_spec, spec_from_dict
from hetero_constructs.spec.training import TrainingSpec
from hetero_constructs.spec.violations import SpecValidationError
from tests.fixtures.specs import BASE, spec_dict, violations_of

REPO = Path(__file__).parents[2]


def test_example_spec_files_load_and_plan_cleanly() -> None:
    for path in sorted((REPO / "examples" / "specs").glob("*.json")):
        spec = load_spec_file(path)
        assert spec.source_dir is None or Path(spec.source_dir).is_absolute()


def test_yaml_and_json_give_the_same_spec(tmp_path: Path) -> None:
    import yaml

    (tmp_path / "job.json").write_text(json.dumps(BASE))
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(BASE))
    assert load_spec_file(tmp_path / "job.json") == load_spec_file(tmp_path / "job.yaml")


def test_relative_source_dir_starts_at_the_file(tmp_path: Path) -> None:
    (tmp_path / "code").mkdir()
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "job.json").write_text(json.dumps(spec_dict({"source_dir": "../code"})))
    assert load_spec_file(tmp_path / "specs" / "job.json").source_dir == str(tmp_path / "code")


def test_sdk_distribution_dict_round_trips() -> None:
    sdk = {
        "mpi": {"enabled": True, "processes_per_host": 8, "custom_mpi_options": "-v"},
        "instance_groups": ["gpu"],
    }
    distribution = distribution_from_sdk_dict(sdk)
    assert distribution == DistributedTraining.mpi(
        instance_group=InstanceGroup("gpu", "ml.p4d.24xlarge", 2),
        processes_per_host=8,
        custom_mpi_options="-v",
    )
    assert distribution.to_sdk_dict() == sdk
    smddp = distribution_from_sdk_dict(
        {"smdistributed": {"dataparallel": {"enabled": True}}}, smddp_collective="AllGather"
    )
    assert smddp.launcher_kinds == (Launcher.SMDISTRIBUTED_DATA_PARALLEL,)
    assert smddp.smddp_collectives == (SmddpCollective.ALL_GATHER,)


def test_disabled_launchers_are_dropped() -> None:
    spec = spec_from_dict(
        spec_dict(
            {
                "distribution": {
                    "mpi": {"enabled": False},
                    "torch_distributed": {"enabled": True},
                    "instance_groups": ["gpu"],
                }
            }
        )
    )
    assert spec.distribution is not None
    assert spec.distribution.launcher_kinds == (Launcher.TORCH_DISTRIBUTED,)


@pytest.mark.parametrize(
    ("distribution", "path"),
    [
        (
            {"mpi": {"enabled": False, "processes_per_host": 8}},
            "distribution.mpi.processes_per_host",
        ),
        (
            {"smdistributed": {"dataparallel": {"enabled": False, "custom_mpi_options": "-v"}}},
            "distribution.smdistributed.dataparallel.custom_mpi_options",
        ),
        (
            {
                "smdistributed": {
                    "modelparallel": {"enabled": False, "parameters": {"partitions": 2}}
                }
            },
            "distribution.smdistributed.modelparallel.parameters",
        ),
    ],
)
def test_options_under_a_disabled_launcher_are_a_violation(
    distribution: dict[str, Any], path: str
) -> None:
    """They would be silently ignored with the launcher (issue 13: nothing is ignored)."""
    data = spec_dict(
        {
            "distribution": {
                "torch_distributed": {"enabled": True},
                "instance_groups": ["gpu"],
                **distribution,
            }
        }
    )
    reading = read_spec(data)
    assert [(v.rule, v.path) for v in reading.violations] == [("SPEC-LAUNCHER-ENABLED", path)]
    assert reading.spec is None


def test_a_misspelt_option_under_a_disabled_launcher_is_reported_once() -> None:
    distribution = {
        "torch_distributed": {"enabled": True},
        "mpi": {"enabled": False, "procesess_per_host": 8},
        "instance_groups": ["gpu"],
    }
    violations = read_spec(spec_dict({"distribution": distribution})).violations
    assert [(v.rule, v.path) for v in violations] == [
        ("SPEC-UNKNOWN-KEY", "distribution.mpi.procesess_per_host")
    ]


@pytest.mark.parametrize(
    ("data", "rule", "path"),
    [
        ({**BASE, "instance_group": []}, "SPEC-UNKNOWN-KEY", "instance_group"),
        (
            spec_dict(
                {
                    "distribution": {
                        "mpi": {"enabled": True, "procesess_per_host": 8},
                        "instance_groups": ["gpu"],
                    }
                }
            ),
            "SPEC-UNKNOWN-KEY",
            "distribution.mpi.procesess_per_host",
        ),
        (
            spec_dict({"distribution": {"torch_distributed": {}, "instance_groups": ["gpu"]}}),
            "SPEC-LAUNCHER-ENABLED",
            "distribution.torch_distributed.enabled",
        ),
        (
            spec_dict(
                {
                    "instance_groups": [
                        {"name": "gpu", "instance_type": "ml.p4d.24xlarge", "instance_count": "2"}
                    ]
                }
            ),
            "SPEC-TYPE",
            "instance_groups[0].instance_count",
        ),
        (
            spec_dict({"channels": {"train": {"instance_groups": ["data"]}}}),
            "SPEC-REQUIRED",
            "channels.train.s3_uri",
        ),
        ({k: v for k, v in BASE.items() if k != "entry_point"}, "SPEC-REQUIRED", "entry_point"),
        (spec_dict({"framework": "jax"}), "SPEC-TYPE", "framework"),
        (spec_dict({"smddp_collective": "AllToAll"}), "SPEC-TYPE", "smddp_collective"),
        (spec_dict({"use_spot_instances": "yes"}), "SPEC-TYPE", "use_spot_instances"),
        (spec_dict({"hyperparameters": {"lr": float("nan")}}), "SPEC-TYPE", "hyperparameters.lr"),
        (["not", "a", "mapping"], "SPEC-TYPE", ""),
    ],
)
def test_file_problems(data: Any, rule: str, path: str) -> None:
    violations = violations_of(data)
    assert any(v.rule == rule and v.path == path for v in violations), violations


def test_unknown_keys_come_with_the_semantic_violations() -> None:
    data = spec_dict({"procesess": 1, "job_name": "bad_name"})
    rules = [v.rule for v in violations_of(data)]
    assert rules == ["SPEC-UNKNOWN-KEY", "API-JOB-NAME"]
    unknown = violations_of(data)[0]
    assert unknown.fix == "remove the key"
    typo = violations_of(spec_dict({"max_runs": 10}))[0]
    assert typo.fix == "did you mean 'max_run'?"


def test_type_problems_are_all_reported_together() -> None:
    data = spec_dict(
        {
            "instance_groups": [{"name": 1, "instance_type": None, "instance_count": 1.5}],
            "max_run": "1h",
            "subnets": "subnet-1",
        }
    )
    paths = {v.path for v in violations_of(data)}
    assert {
        "instance_groups[0].name",
        "instance_groups[0].instance_type",
        "instance_groups[0].instance_count",
        "max_run",
        "subnets",
    } <= paths


def test_unreadable_and_unparsable_files(tmp_path: Path) -> None:
    with pytest.raises(SpecValidationError, match="SPEC-FILE"):
        load_spec_file(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(SpecValidationError, match="SPEC-FILE"):
        load_spec_file(tmp_path / "bad.json")
    (tmp_path / "bad.yaml").write_text("a: [")
    with pytest.raises(SpecValidationError, match="SPEC-FILE"):
        load_spec_file(tmp_path / "bad.yaml")


def test_value_objects_check_their_types() -> None:
    with pytest.raises(SpecValidationError) as raised:
        InstanceGroup(name=3, instance_type="ml.c5.xlarge", instance_count="2")  # type: ignore[arg-type]
    assert [v.path for v in raised.value.violations] == ["name", "instance_count"]
    with pytest.raises(SpecValidationError):
        TrainingSpec(entry_point="train.py", framework="jax")  # type: ignore[arg-type]
    spec = TrainingSpec(entry_point="train.py", framework="tensorflow")  # type: ignore[arg-type]
    assert spec.framework.value == "tensorflow"


def test_specs_are_immutable() -> None:
    spec = spec_from_dict(BASE)
    with pytest.raises(AttributeError):
        spec.job_name = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        spec.hyperparameters["x"] = 1  # type: ignore[index]
    assert read_spec(BASE).violations == ()


def test_spec_to_dict_round_trips() -> None:
    from hetero_constructs.spec.file.writer import spec_to_dict

    full = spec_dict(
        {
            "smddp_collective": "AllGather",
            "tags": {"team": "ml"},
            "subnets": ["subnet-1"],
            "security_group_ids": ["sg-1"],
            "environment": {"A": "1"},
            "use_spot_instances": True,
            "max_wait": 100000,
            "metric_definitions": [{"Name": "loss", "Regex": "l=(.*)"}],
            "channels": {
                "train": {
                    "s3_uri": "s3://b/t",
                    "instance_groups": ["data"],
                    "distribution": "ShardedByS3Key",
                    "input_mode": "FastFile",
                }
            },
            "distribution": {
                "mpi": {"enabled": True, "processes_per_host": 8},
                "smdistributed": {
                    "modelparallel": {"enabled": True, "parameters": {"partitions": 2}}
                },
                "instance_groups": ["gpu"],
            },
        }
    )
    for data in (BASE, full):
        spec = spec_from_dict(data)
        assert spec_from_dict(spec_to_dict(spec)) == spec
    minimal = spec_to_dict(spec_from_dict({"framework": "pytorch", "entry_point": "t.py"}))
    assert minimal == {"framework": "pytorch", "entry_point": "t.py"}
