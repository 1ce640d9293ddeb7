#!/usr/bin/env python3
"""Example app: a heterogeneous training job, a CPU group feeding a torch_distributed GPU group.

`make synth` synthesizes it with the CDK CLI; cdk-nag (AwsSolutions) checks it on every synth.
"""

from __future__ import annotations

from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_s3 as s3
from cdk_nag import AwsSolutionsChecks
from constructs import Construct

from hetero_constructs import (
    DistributedTraining,
    Framework,
    HeterogeneousTrainingJob,
    InstanceGroup,
    TrainingChannel,
    TrainingSpec,
    bucket_uri,
)

EXAMPLE_CODE = Path(__file__).parent / "examples" / "hetero_training"


class HeteroTrainingStack(cdk.Stack):
    """One training job: 2 x ml.c5.18xlarge preprocess, 2 x ml.p4d.24xlarge train with torchrun."""

    def __init__(self, scope: Construct, construct_id: str, **kwargs: object) -> None:
        super().__init__(scope, construct_id, **kwargs)  # type: ignore[arg-type]
        data = s3.Bucket.from_bucket_name(
            self, "Data", self.node.try_get_context("data_bucket") or "example-training-data"
        )
        data_group = InstanceGroup("data", "ml.c5.18xlarge", 2)
        gpu_group = InstanceGroup("gpu", "ml.p4d.24xlarge", 2)
        self.job = HeterogeneousTrainingJob(
            self,
            "Training",
            job_name_prefix="hetero-example",
            spec=TrainingSpec(
                framework=Framework.PYTORCH,
                framework_version="2.3.0",
                py_version="py311",
                entry_point="train.py",
                source_dir=str(EXAMPLE_CODE),
                instance_groups=[data_group, gpu_group],
                channels=[
                    TrainingChannel(
                        "train",
                        bucket_uri(data, "datasets/train/"),
                        instance_groups=[data_group],
                    )
                ],
                distribution=DistributedTraining.torch_distributed(instance_group=gpu_group),
                hyperparameters={"epochs": 3, "batch_size": 256, "learning_rate": 0.01},
                output_path=bucket_uri(data, "training-output/"),
                max_run=4 * 3600,
                tags={"project": "hetero-example"},
            ),
        )


def build_app(app: cdk.App | None = None) -> tuple[cdk.App, HeteroTrainingStack]:
    """The example app with cdk-nag's AwsSolutions checks attached."""
    app = app or cdk.App()
    stack = HeteroTrainingStack(
        app,
        "HeteroTrainingExample",
        env=cdk.Environment(region=app.node.try_get_context("region") or "us-west-2"),
    )
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return app, stack


if __name__ == "__main__":
    build_app()[0].synth()
