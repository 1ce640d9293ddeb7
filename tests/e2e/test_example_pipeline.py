"""The example app's pipeline (preprocess -> train -> model -> register), run in moto."""

from __future__ import annotations

import json
from collections.abc import Iterator

import boto3
import pytest

from hetero_constructs import TrainingErrors
from hetero_constructs.local import LocalCloud
from tests.fixtures.example_app import Synthesized


@pytest.fixture
def cloud(example: Synthesized) -> Iterator[tuple[LocalCloud, str]]:
    with LocalCloud(simulate="Completed") as local:
        local.deploy(example.outdir / "HeteroTrainingPipeline.template.json")
        yield local, local.state_machine()


def test_the_pipeline_registers_the_trained_model(cloud: tuple[LocalCloud, str]) -> None:
    local, machine = cloud
    result = local.run(machine, {"dataset_version": "v7", "rows": 2_000_000}, name="pipeline")
    assert result.status == "SUCCEEDED", result.cause
    (request,) = result.submitted_requests
    # The preprocessing Lambda ran from its asset and chose this run's overrides.
    assert request["HyperParameters"]["epochs"] == "4"
    (train,) = [c for c in request["InputDataConfig"] if c["ChannelName"] == "train"]
    assert train["DataSource"]["S3DataSource"]["S3Uri"].endswith("/datasets/train/v7/")
    assert train["DataSource"]["S3DataSource"]["InstanceGroupNames"] == ["data"]
    output = result.output
    name = request["TrainingJobName"]
    assert output["training"]["TrainingJobName"] == name
    sagemaker = boto3.client("sagemaker")
    model = sagemaker.describe_model(ModelName=name)
    assert (
        model["PrimaryContainer"]["ModelDataUrl"]
        == (output["training"]["ModelArtifacts"]["S3ModelArtifacts"])
    )
    packages = sagemaker.list_model_packages(ModelPackageGroupName="hetero-example-models")
    (package,) = packages["ModelPackageSummaryList"]
    assert package["ModelPackageArn"] == output["registered"]["ModelPackageArn"]


def test_a_training_failure_is_notified(cloud: tuple[LocalCloud, str]) -> None:
    local, machine = cloud
    result = local.run(
        machine, {}, name="pipeline-fails", outcomes=["Failed:AlgorithmError: exit code 1"]
    )
    assert result.status == "FAILED"
    assert result.error == TrainingErrors.TRAINING_FAILED
    sagemaker = boto3.client("sagemaker")
    assert sagemaker.list_models()["Models"] == []
    published = [e for e in local.history(result.execution_arn) if e["type"] == "TaskSucceeded"]
    assert any("sns" in json.dumps(e, default=str) for e in published)
