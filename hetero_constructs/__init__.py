"""hetero-constructs: SageMaker heterogeneous-cluster training as AWS CDK constructs.

Every public name is imported on first use (PEP 562): the core's names from
``hetero_constructs.core``, the CDK constructs (aws_cdk takes about a second to import) and the
training-script helper from their own packages. Importing one core module, as the Lambda
handlers do, does not import the rest of the library.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_CORE = "hetero_constructs.core"
# Public name -> the module that defines it, or ``module:name`` when it is defined as another.
_LAZY: dict[str, str] = {
    **dict.fromkeys(
        (
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
            "TrainingSpec",
            "Violation",
            "build_request",
            "distribution_from_sdk_dict",
            "load_spec_file",
            "plan",
            "read_spec_file",
            "spec_from_dict",
            "validate",
        ),
        _CORE,
    ),
    "TrainingErrors": "hetero_constructs.core.lifecycle:Errors",
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
    from hetero_constructs.core import Deployment as Deployment
    from hetero_constructs.core import DistributedTraining as DistributedTraining
    from hetero_constructs.core import Framework as Framework
    from hetero_constructs.core import InstanceFallback as InstanceFallback
    from hetero_constructs.core import InstanceGroup as InstanceGroup
    from hetero_constructs.core import Launcher as Launcher
    from hetero_constructs.core import LauncherConfig as LauncherConfig
    from hetero_constructs.core import MetricDefinition as MetricDefinition
    from hetero_constructs.core import Plan as Plan
    from hetero_constructs.core import SmddpCollective as SmddpCollective
    from hetero_constructs.core import SpecValidationError as SpecValidationError
    from hetero_constructs.core import TrainingChannel as TrainingChannel
    from hetero_constructs.core import TrainingSpec as TrainingSpec
    from hetero_constructs.core import Violation as Violation
    from hetero_constructs.core import build_request as build_request
    from hetero_constructs.core import distribution_from_sdk_dict as distribution_from_sdk_dict
    from hetero_constructs.core import load_spec_file as load_spec_file
    from hetero_constructs.core import plan as plan
    from hetero_constructs.core import read_spec_file as read_spec_file
    from hetero_constructs.core import spec_from_dict as spec_from_dict
    from hetero_constructs.core import validate as validate
    from hetero_constructs.core.lifecycle import Errors as TrainingErrors  # noqa: F401 (__all__)
    from hetero_constructs.runtime import Role as Role
    from hetero_constructs.runtime import TrainingEnvironment as TrainingEnvironment
    from hetero_constructs.runtime import TrainingEnvironmentError as TrainingEnvironmentError


def __getattr__(name: str) -> Any:
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module 'hetero_constructs' has no attribute {name!r}")
    module, _, defined_as = where.partition(":")
    value = getattr(importlib.import_module(module), defined_as or name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = sorted(_LAZY)
