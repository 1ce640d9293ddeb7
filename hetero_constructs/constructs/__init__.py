"""The CDK layer: constructs over the core. Importing it imports aws_cdk."""

from hetero_constructs.jsii_node import use_wheel_node

# Before aws_cdk is imported: jsii reads JSII_NODE when it starts its Node process.
use_wheel_node()

from hetero_constructs.cdk.permissions import bucket_uri  # noqa: E402
from hetero_constructs.cdk.runner import TrainingRunner  # noqa: E402
from hetero_constructs.cdk.task import CapacityRetry, HeterogeneousTrainingTask  # noqa: E402
from hetero_constructs.cdk.testing import normalized_template  # noqa: E402
from hetero_constructs.cdk.training_job import HeterogeneousTrainingJob  # noqa: E402

__all__ = [
    "CapacityRetry",
    "HeterogeneousTrainingJob",
    "HeterogeneousTrainingTask",
    "TrainingRunner",
    "bucket_uri",
    "normalized_template",
]
