"""The CDK layer: constructs over the core. Importing it imports aws_cdk."""

from hetero_constructs.cdk.permissions import bucket_uri
from hetero_constructs.cdk.runner import TrainingRunner
from hetero_constructs.cdk.task import CapacityRetry, HeterogeneousTrainingTask
from hetero_constructs.cdk.testing import normalized_template
from hetero_constructs.cdk.training_job import HeterogeneousTrainingJob

__all__ = [
    "CapacityRetry",
    "HeterogeneousTrainingJob",
    "HeterogeneousTrainingTask",
    "TrainingRunner",
    "bucket_uri",
    "normalized_template",
]
