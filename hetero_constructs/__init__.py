"""hetero-constructs: SageMaker heterogeneous-cluster training as AWS CDK constructs.

The names users write: the constructs, the spec's value objects, ``load_spec_file`` (the spec
reader; ``read_spec_file`` for every violation without raising), ``plan`` (``validate`` for the
violations alone), the errors, the snapshot-test helper, the training-script helper,
``TrainingRun`` (runs from Python), and for apps that add Lambda functions beside the library's
``LAMBDA_RUNTIME`` (the Python runtime its functions use: the newest this aws-cdk-lib knows, as
cdk-nag's AwsSolutions-L1 asks) and ``depend_on_policy_only`` (cfn-lint's W3005).

The public API is these names and the ``__all__`` of the modules in ``_PUBLIC_MODULES``; every
other module is internal, whatever it exports to the library's own modules, and may change in
any release (docs/design.md: Public API).

Every public name is imported on first use (PEP 562) from the module that defines it: the CDK
constructs (aws_cdk takes about a second to import) only when they are used, and importing one
module of the pure-Python layers, as the Lambda handlers do, does not import the rest of the
library (docs/design.md: Layout).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Public name -> the module that defines it.
# The one list of public names: ``__all__`` is its keys, and tests/test_public_api.py checks
# the type checkers' imports below against it.
_LAZY: dict[str, str] = {
    **dict.fromkeys(
        ("Framework", "TrainingMetric", "TrainingSpec"), "hetero_constructs.spec.training"
    ),
    **dict.fromkeys(
        ("InstanceFallback", "InstanceGroup", "TrainingChannel"), "hetero_constructs.spec.cluster"
    ),
    **dict.fromkeys(
        ("DistributedTraining", "Launcher", "LauncherConfig", "SmddpCollective"),
        "hetero_constructs.spec.distribution",
    ),
    "SpecValidationError": "hetero_constructs.spec.violations",
    "Violation": "hetero_constructs.spec.violations",
    "load_spec_file": "hetero_constructs.spec.file.reader",
    "read_spec_file": "hetero_constructs.spec.file.reader",
    "TrainingErrors": "hetero_constructs.contract.lifecycle",
    "Plan": "hetero_constructs.planning",
    "plan": "hetero_constructs.planning",
    "validate": "hetero_constructs.planning",
    # The training-script helper (standard library only; not part of the Lambda package).
    "HostRole": "hetero_constructs.runtime",
    "TrainingEnvironment": "hetero_constructs.runtime",
    "TrainingEnvironmentError": "hetero_constructs.runtime",
    "MetricsReporter": "hetero_constructs.runtime",
    "HeterogeneousTrainingJob": "hetero_constructs.constructs.job",
    "HeterogeneousTrainingTask": "hetero_constructs.constructs.task",
    "TrainingDashboard": "hetero_constructs.constructs.dashboard",
    **dict.fromkeys(
        (
            "HeterogeneousTrainingProps",
            "HeterogeneousTrainingTaskProps",
            "HeterogeneousTrainingJobProps",
        ),
        "hetero_constructs.constructs.props",
    ),
    "CapacityRetry": "hetero_constructs.constructs.retries",
    "enable_deployability_checks": "hetero_constructs.deployability.plugin",
    "TrainingRunner": "hetero_constructs.constructs.runner",
    "bucket_uri": "hetero_constructs.constructs.permissions",
    # For an app's own Lambda functions beside the library's.
    "LAMBDA_RUNTIME": "hetero_constructs.constructs.runner_resources",
    "depend_on_policy_only": "hetero_constructs.constructs.hygiene",
    "normalized_template": "hetero_constructs.constructs.testing",
    # Training runs from Python (the API the hetero-train commands are built on).
    **dict.fromkeys(
        ("TrainingRun", "RunStatus", "RunInputError"), "hetero_constructs.runs.training_run"
    ),
}
# The public modules: the top level, the training-script helper and its data plane, runs from
# Python and the local account. Their ``__all__`` is the API; tests/test_public_api.py checks
# that the docs, the examples, the benchmarks and app.py use nothing else.
_PUBLIC_MODULES = (
    "hetero_constructs",
    "hetero_constructs.local",
    "hetero_constructs.runs",
    "hetero_constructs.runtime",
    "hetero_constructs.runtime.data",
)
# The modules users run with ``python -m``: their command line is the API, not their names.
_PUBLIC_COMMANDS = ("hetero_constructs.cli", "hetero_constructs.deployability.catalogue")

if TYPE_CHECKING:
    from hetero_constructs.constructs.dashboard import TrainingDashboard as TrainingDashboard
    from hetero_constructs.constructs.hygiene import depend_on_policy_only as depend_on_policy_only
    from hetero_constructs.constructs.job import (
        HeterogeneousTrainingJob as HeterogeneousTrainingJob,
    )
    from hetero_constructs.constructs.permissions import bucket_uri as bucket_uri
    from hetero_constructs.constructs.props import (
        HeterogeneousTrainingJobProps as HeterogeneousTrainingJobProps,
    )
    from hetero_constructs.constructs.props import (
        HeterogeneousTrainingProps as HeterogeneousTrainingProps,
    )
    from hetero_constructs.constructs.props import (
        HeterogeneousTrainingTaskProps as HeterogeneousTrainingTaskProps,
    )
    from hetero_constructs.constructs.retries import CapacityRetry as CapacityRetry
    from hetero_constructs.constructs.runner import TrainingRunner as TrainingRunner
    from hetero_constructs.constructs.runner_resources import LAMBDA_RUNTIME as LAMBDA_RUNTIME
    from hetero_constructs.constructs.task import (
        HeterogeneousTrainingTask as HeterogeneousTrainingTask,
    )
    from hetero_constructs.constructs.testing import normalized_template as normalized_template
    from hetero_constructs.contract.lifecycle import TrainingErrors as TrainingErrors
    from hetero_constructs.deployability.plugin import (
        enable_deployability_checks as enable_deployability_checks,
    )
    from hetero_constructs.planning import Plan as Plan
    from hetero_constructs.planning import plan as plan
    from hetero_constructs.planning import validate as validate
    from hetero_constructs.runs.training_run import RunInputError as RunInputError
    from hetero_constructs.runs.training_run import RunStatus as RunStatus
    from hetero_constructs.runs.training_run import TrainingRun as TrainingRun
    from hetero_constructs.runtime import HostRole as HostRole
    from hetero_constructs.runtime import MetricsReporter as MetricsReporter
    from hetero_constructs.runtime import TrainingEnvironment as TrainingEnvironment
    from hetero_constructs.runtime import TrainingEnvironmentError as TrainingEnvironmentError
    from hetero_constructs.spec.cluster import InstanceFallback as InstanceFallback
    from hetero_constructs.spec.cluster import InstanceGroup as InstanceGroup
    from hetero_constructs.spec.cluster import TrainingChannel as TrainingChannel
    from hetero_constructs.spec.distribution import DistributedTraining as DistributedTraining
    from hetero_constructs.spec.distribution import Launcher as Launcher
    from hetero_constructs.spec.distribution import LauncherConfig as LauncherConfig
    from hetero_constructs.spec.distribution import SmddpCollective as SmddpCollective
    from hetero_constructs.spec.file.reader import load_spec_file as load_spec_file
    from hetero_constructs.spec.file.reader import read_spec_file as read_spec_file
    from hetero_constructs.spec.training import Framework as Framework
    from hetero_constructs.spec.training import TrainingMetric as TrainingMetric
    from hetero_constructs.spec.training import TrainingSpec as TrainingSpec
    from hetero_constructs.spec.violations import SpecValidationError as SpecValidationError
    from hetero_constructs.spec.violations import Violation as Violation


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        # Subpackages (``import hetero_constructs.spec``) are found by the import system.
        raise AttributeError(f"module 'hetero_constructs' has no attribute {name!r}")
    if module == "hetero_constructs.spec.training":
        # The spec-file reader installs the reading of the SDK's dict forms into TrainingSpec.
        importlib.import_module("hetero_constructs.spec.file.reader")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = sorted(_LAZY)
