"""hetero-constructs: SageMaker heterogeneous-cluster training as AWS CDK constructs.

The core (spec, rules, request builder) is imported eagerly and never imports the CDK, so the
submit Lambda can use it. The CDK constructs and the training-script helper are loaded on first
use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from hetero_constructs.core import (
    Deployment,
    DistributedTraining,
    Framework,
    InstanceFallback,
    InstanceGroup,
    Launcher,
    LauncherConfig,
    MetricDefinition,
    Plan,
    SmddpCollective,
    SpecValidationError,
    TrainingChannel,
    TrainingSpec,
    Violation,
    build_request,
    distribution_from_sdk_dict,
    load_spec_file,
    plan,
    spec_from_dict,
    validate,
)
from hetero_constructs.core.lifecycle import Errors as TrainingErrors

# Names imported on first access: the CDK layer (aws_cdk takes about a second to import) and
# the training-script helper.
_LAZY: dict[str, str] = {
    # The training-script helper (standard library only; not part of the Lambda package).
    "Role": "hetero_constructs.runtime",
    "TrainingEnvironment": "hetero_constructs.runtime",
    "TrainingEnvironmentError": "hetero_constructs.runtime",
    "HeterogeneousTrainingJob": "hetero_constructs.cdk.training_job",
    "HeterogeneousTrainingTask": "hetero_constructs.cdk.task",
    "CapacityRetry": "hetero_constructs.cdk.task",
    "enable_deployability_checks": "hetero_constructs.cdk.deployability",
    "TrainingRunner": "hetero_constructs.cdk.runner",
    "bucket_uri": "hetero_constructs.cdk.permissions",
    "normalized_template": "hetero_constructs.cdk.testing",
}

if TYPE_CHECKING:
    from hetero_constructs.cdk.deployability import (
        enable_deployability_checks as enable_deployability_checks,
    )
    from hetero_constructs.cdk.permissions import bucket_uri as bucket_uri
    from hetero_constructs.cdk.runner import TrainingRunner as TrainingRunner
    from hetero_constructs.cdk.task import CapacityRetry as CapacityRetry
    from hetero_constructs.cdk.task import HeterogeneousTrainingTask as HeterogeneousTrainingTask
    from hetero_constructs.cdk.testing import normalized_template as normalized_template
    from hetero_constructs.cdk.training_job import (
        HeterogeneousTrainingJob as HeterogeneousTrainingJob,
    )
    from hetero_constructs.runtime import Role as Role
    from hetero_constructs.runtime import TrainingEnvironment as TrainingEnvironment
    from hetero_constructs.runtime import TrainingEnvironmentError as TrainingEnvironmentError


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'hetero_constructs' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "Deployment",
    "DistributedTraining",
    "Framework",
    "InstanceFallback",
    "InstanceGroup",
    "Launcher",
    "LauncherConfig",
    "MetricDefinition",
    "Plan",
    "SmddpCollective",
    "SpecValidationError",
    "TrainingChannel",
    "TrainingErrors",
    "TrainingSpec",
    "Violation",
    "build_request",
    "distribution_from_sdk_dict",
    "load_spec_file",
    "plan",
    "spec_from_dict",
    "validate",
    *_LAZY,
]
