"""The CreateTrainingJob request: shape, hyperparameters as the toolkit parses them, images."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hetero_constructs.planning import plan
from hetero_constructs.request.context import Deployment
from hetero_constructs.service.request_validator import botocore_validation_errors
from hetero_constructs.spec.cluster import InstanceGroup, TrainingChannel
from hetero_constructs.spec.distribution import DistributedTraining
from hetero_constructs.spec.file.reader import spec_from_dict
from hetero_constructs.spec.training import TrainingSpec
from hetero_constructs.spec.violations import SpecValidationError
from tests.fixtures.specs import HOMOGENEOUS, ROLE, spec_dict, with_gpu_group

ON = {"enabled": True}


def request_for(*overrides: dict[str, Any], deployment: Deployment | None = None) -> dict[str, Any]:
    return plan(spec_from_dict(spec_dict(*overrides)), deployment).request_or_raise()


def decoded(request: dict[str, Any]) -> dict[str, Any]:
    """Hyperparameters as the training toolkit reads them (json.loads, raw string on failure)."""
    result = {}
    for key, value in request["HyperParameters"].items():
        try:
            result[key] = json.loads(value)
        except ValueError:
            result[key] = value
    return result


def test_heterogeneous_torch_distributed_request() -> None:
    request = request_for(
        {
            "hyperparameters": {
                "epochs": 3,
                "lr": 0.001,
                "tag": "v1",
                "debug": False,
                "layers": [64, 32],
            }
        }
    )
    assert request["TrainingJobName"] == "hetero-test"
    assert request["ResourceConfig"] == {
        "InstanceGroups": [
            {"InstanceGroupName": "data", "InstanceType": "ml.c5.18xlarge", "InstanceCount": 2},
            {"InstanceGroupName": "gpu", "InstanceType": "ml.p4d.24xlarge", "InstanceCount": 2},
        ],
        "VolumeSizeInGB": 30,
    }
    assert "InstanceType" not in request["ResourceConfig"]
    assert request["InputDataConfig"] == [
        {
            "ChannelName": "train",
            "DataSource": {
                "S3DataSource": {
                    "S3DataType": "S3Prefix",
                    "S3Uri": "s3://bucket/train",
                    "S3DataDistributionType": "FullyReplicated",
                    "InstanceGroupNames": ["data"],
                }
            },
        }
    ]
    hyperparameters = request["HyperParameters"]
    # Encoded exactly as the SDK encodes them: strings quoted, lowercase booleans, bare numbers.
    assert hyperparameters["epochs"] == "3"
    assert hyperparameters["lr"] == "0.001"
    assert hyperparameters["tag"] == '"v1"'
    assert hyperparameters["debug"] == "false"
    assert hyperparameters["layers"] == "[64, 32]"
    assert hyperparameters["sagemaker_program"] == '"train.py"'
    assert hyperparameters["sagemaker_container_log_level"] == "20"
    assert hyperparameters["sagemaker_job_name"] == '"hetero-test"'
    assert hyperparameters["sagemaker_region"] == '"us-west-2"'
    assert hyperparameters["sagemaker_torch_distributed_enabled"] == "true"
    # Better than the SDK: group scoping for torch_distributed and the real instance type.
    assert hyperparameters["sagemaker_distribution_instance_groups"] == '["gpu"]'
    assert hyperparameters["sagemaker_instance_type"] == '"ml.p4d.24xlarge"'
    assert request["AlgorithmSpecification"] == {
        "TrainingImage": "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:"
        "2.3.0-gpu-py311",
        "TrainingInputMode": "File",
        "EnableSageMakerMetricsTimeSeries": True,
    }
    assert request["StoppingCondition"] == {"MaxRuntimeInSeconds": 86400}
    assert request["OutputDataConfig"] == {"S3OutputPath": "s3://bucket/output"}
    assert request["RoleArn"] == ROLE
    assert botocore_validation_errors(request) is None


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        (
            {
                "distribution": {
                    "mpi": {
                        "enabled": True,
                        "processes_per_host": 8,
                        "custom_mpi_options": "-verbose",
                    },
                    "instance_groups": ["gpu"],
                }
            },
            {
                "sagemaker_mpi_enabled": True,
                "sagemaker_mpi_num_of_processes_per_host": 8,
                "sagemaker_mpi_custom_mpi_options": "-verbose",
                "sagemaker_distribution_instance_groups": ["gpu"],
            },
        ),
        (
            {
                "framework_version": "2.2.0",
                "py_version": "py310",
                "distribution": {"pytorchddp": ON, "instance_groups": ["gpu"]},
            },
            {
                "sagemaker_distributed_dataparallel_enabled": True,
                "sagemaker_instance_type": "ml.p4d.24xlarge",
                "sagemaker_distributed_dataparallel_custom_mpi_options": "",
                "sagemaker_distribution_instance_groups": ["gpu"],
            },
        ),
        (
            {
                "framework_version": "2.2.0",
                "py_version": "py310",
                "distribution": {
                    "smdistributed": {
                        "dataparallel": {"enabled": True, "custom_mpi_options": "-v"}
                    },
                    "instance_groups": ["gpu"],
                },
            },
            {
                "sagemaker_distributed_dataparallel_enabled": True,
                "sagemaker_distributed_dataparallel_custom_mpi_options": "-v",
            },
        ),
        (
            {
                "distribution": {
                    "mpi": {"enabled": True, "processes_per_host": 8},
                    "smdistributed": {
                        "modelparallel": {"enabled": True, "parameters": {"partitions": 2}}
                    },
                    "instance_groups": ["gpu"],
                }
            },
            {
                "mp_parameters": {"partitions": 2},
                "sagemaker_distributed_dataparallel_enabled": False,
                "sagemaker_instance_type": "ml.p4d.24xlarge",
                "sagemaker_mpi_enabled": True,
            },
        ),
        (
            {
                "distribution": {
                    "torch_distributed": {"enabled": True, "processes_per_host": 4},
                    "instance_groups": ["gpu"],
                }
            },
            {
                "sagemaker_torch_distributed_enabled": True,
                "sagemaker_mpi_num_of_processes_per_host": 4,
            },
        ),
    ],
)
def test_launcher_hyperparameters(override: dict[str, Any], expected: dict[str, Any]) -> None:
    request = request_for(override)
    values = decoded(request)
    for key, value in expected.items():
        assert values[key] == value, key
    # Counts must reach the toolkit as JSON numbers and flags as JSON booleans.
    for key, value in request["HyperParameters"].items():
        if key.endswith("_enabled"):
            assert value in ("true", "false"), key
    assert botocore_validation_errors(request) is None


def test_tensorflow_parameter_server_and_model_dir() -> None:
    request = request_for(
        HOMOGENEOUS,
        {
            "framework": "tensorflow",
            "framework_version": "2.13.0",
            "py_version": "py310",
            "instance_type": "ml.p3.16xlarge",
            "distribution": {"parameter_server": ON},
        },
    )
    values = decoded(request)
    assert values["sagemaker_parameter_server_enabled"] is True
    assert values["model_dir"] == "s3://bucket/output/hetero-test/model"
    assert "sagemaker_distribution_instance_groups" not in values
    assert request["ResourceConfig"]["InstanceType"] == "ml.p3.16xlarge"
    assert request["ResourceConfig"]["InstanceCount"] == 2
    assert request["AlgorithmSpecification"]["TrainingImage"].endswith(
        "/tensorflow-training:2.13.0-gpu-py310"
    )


def test_tensorflow_mpi_model_dir_is_local() -> None:
    request = request_for(
        {
            "framework": "tensorflow",
            "framework_version": "2.11.0",
            "py_version": "py39",
            "distribution": {"mpi": ON, "instance_groups": ["gpu"]},
        },
    )
    assert decoded(request)["model_dir"] == "/opt/ml/model"


def test_allgather_under_mpirun_sets_environment() -> None:
    request = request_for(
        {
            "framework_version": "2.2.0",
            "py_version": "py310",
            "smddp_collective": "AllGather",
            "distribution": {"pytorchddp": ON, "instance_groups": ["gpu"]},
        },
    )
    assert request["Environment"] == {"SMDATAPARALLEL_OPTIMIZE_SDP": "true"}
    allreduce = request_for(
        {
            "framework_version": "2.2.0",
            "py_version": "py310",
            "smddp_collective": "AllReduce",
            "distribution": {"pytorchddp": ON, "instance_groups": ["gpu"]},
        },
    )
    assert "Environment" not in allreduce
    torchrun = request_for({"smddp_collective": "AllGather"})
    assert "Environment" not in torchrun  # torchrun activates AllGather by itself


@pytest.mark.parametrize(
    ("region", "prefix"),
    [
        ("us-east-1", "763104351884.dkr.ecr.us-east-1.amazonaws.com/"),
        ("cn-north-1", "727897471807.dkr.ecr.cn-north-1.amazonaws.com.cn/"),
        ("us-gov-west-1", "442386744353.dkr.ecr.us-gov-west-1.amazonaws.com/"),
        ("us-iso-east-1", "886529160074.dkr.ecr.us-iso-east-1.c2s.ic.gov/"),
        ("af-south-1", "626614931356.dkr.ecr.af-south-1.amazonaws.com/"),
    ],
)
def test_image_uri_per_region(region: str, prefix: str) -> None:
    request = request_for({"region": region})
    assert request["AlgorithmSpecification"]["TrainingImage"] == (
        prefix + "pytorch-training:2.3.0-gpu-py311"
    )


def test_cpu_image_without_gpu_groups_and_alias_kept_in_tag() -> None:
    request = request_for(
        {"framework_version": "2.3", "distribution": {"mpi": ON, "instance_groups": ["gpu"]}},
        with_gpu_group("ml.m5.xlarge"),
    )
    assert request["AlgorithmSpecification"]["TrainingImage"].endswith("2.3-cpu-py311")


def test_gpu_image_follows_the_distribution_group() -> None:
    # The distribution group is the CPU one: the shared image is the CPU image.
    request = request_for({"distribution": {"mpi": ON, "instance_groups": ["data"]}})
    assert request["AlgorithmSpecification"]["TrainingImage"].endswith("-cpu-py311")
    # Without a launcher, any GPU group makes it the GPU image.
    request = request_for({"distribution": {}})
    assert request["AlgorithmSpecification"]["TrainingImage"].endswith("-gpu-py311")


def test_network_isolation_adds_scoped_code_channel() -> None:
    request = request_for({"enable_network_isolation": True})
    code = request["InputDataConfig"][-1]
    assert code["ChannelName"] == "code"
    assert code["DataSource"]["S3DataSource"]["S3Uri"] == (
        "s3://bucket/hetero-test/source/sourcedir.tar.gz"
    )
    # Every channel is scoped, the added one too (the SDK leaves it unscoped).
    assert code["DataSource"]["S3DataSource"]["InstanceGroupNames"] == ["data", "gpu"]
    assert request["HyperParameters"]["sagemaker_submit_directory"] == (
        '"/opt/ml/input/data/code/sourcedir.tar.gz"'
    )
    assert request["EnableNetworkIsolation"] is True


def test_every_option_reaches_the_request() -> None:
    request = request_for(
        {
            "subnets": ["subnet-0abc"],
            "security_group_ids": ["sg-0abc"],
            "volume_kms_key": "alias/volume",
            "output_kms_key": "alias/output",
            "encrypt_inter_container_traffic": True,
            "use_spot_instances": True,
            "max_run": 3600,
            "max_wait": 7200,
            "checkpoint_s3_uri": "s3://bucket/ckpt",
            "checkpoint_local_path": "/opt/ml/checkpoints",
            "max_retry_attempts": 3,
            "tags": {"team": "ml"},
            "volume_size": 100,
            "environment": {"NCCL_DEBUG": "WARN"},
            "metric_definitions": [{"Name": "loss", "Regex": "loss=([0-9.]+)"}],
        },
        deployment=Deployment(submit_directory="s3://assets/abc.tar.gz"),
    )
    assert request["VpcConfig"] == {"SecurityGroupIds": ["sg-0abc"], "Subnets": ["subnet-0abc"]}
    assert request["ResourceConfig"]["VolumeKmsKeyId"] == "alias/volume"
    assert request["ResourceConfig"]["VolumeSizeInGB"] == 100
    assert request["OutputDataConfig"]["KmsKeyId"] == "alias/output"
    assert request["EnableInterContainerTrafficEncryption"] is True
    assert request["EnableManagedSpotTraining"] is True
    assert request["StoppingCondition"] == {
        "MaxRuntimeInSeconds": 3600,
        "MaxWaitTimeInSeconds": 7200,
    }
    assert request["CheckpointConfig"] == {
        "S3Uri": "s3://bucket/ckpt",
        "LocalPath": "/opt/ml/checkpoints",
    }
    assert request["RetryStrategy"] == {"MaximumRetryAttempts": 3}
    assert request["Tags"] == [{"Key": "team", "Value": "ml"}]
    assert request["Environment"] == {"NCCL_DEBUG": "WARN"}
    assert request["AlgorithmSpecification"]["MetricDefinitions"] == [
        {"Name": "loss", "Regex": "loss=([0-9.]+)"}
    ]
    assert request["HyperParameters"]["sagemaker_submit_directory"] == '"s3://assets/abc.tar.gz"'
    assert botocore_validation_errors(request) is None


def test_python_api_matches_spec_file() -> None:
    spec = TrainingSpec(
        entry_point="train.py",
        framework_version="2.3.0",
        py_version="py311",
        instance_groups=[
            InstanceGroup("data", "ml.c5.18xlarge", 2),
            InstanceGroup("gpu", "ml.p4d.24xlarge", 2),
        ],
        channels=[
            TrainingChannel(
                "train",
                "s3://bucket/train",
                instance_groups=[InstanceGroup("data", "ml.c5.18xlarge", 2)],
            )
        ],
        distribution=DistributedTraining.torch_distributed(instance_group="gpu"),
        output_path="s3://bucket/output",
        role=ROLE,
        region="us-west-2",
        job_name="hetero-test",
    )
    assert plan(spec).request_or_raise() == request_for()
    assert spec.distribution is not None
    assert spec.distribution.to_sdk_dict() == {
        "torch_distributed": {"enabled": True},
        "instance_groups": ["gpu"],
    }


def test_a_plan_with_violations_raises_every_one_for_its_request() -> None:
    spec = spec_from_dict(spec_dict({"job_name": "bad_name", "max_run": 0}))
    with pytest.raises(SpecValidationError) as raised:
        plan(spec).request_or_raise()
    assert {v.rule for v in raised.value.violations} == {"API-JOB-NAME", "API-STOPPING"}
    assert "2 training-spec violations" in str(raised.value)


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ({}, "AllGather"),  # torch_distributed
        (
            {
                "framework_version": "2.2.0",
                "py_version": "py310",
                "distribution": {"pytorchddp": ON, "instance_groups": ["gpu"]},
            },
            "AllReduce",
        ),
        (
            {
                "framework_version": "2.2.0",
                "py_version": "py310",
                "smddp_collective": "AllGather",
                "distribution": {"pytorchddp": ON, "instance_groups": ["gpu"]},
            },
            "AllGather",
        ),
        ({"distribution": {"mpi": ON, "instance_groups": ["gpu"]}}, None),
    ],
)
def test_collective_in_effect_follows_the_seed(
    override: dict[str, Any], expected: str | None
) -> None:
    from hetero_constructs.planning import plan

    result = plan(spec_from_dict(spec_dict(override)))
    assert result.ok
    assert (result.smddp_collective.value if result.smddp_collective else None) == expected
