"""The pure-Python core: spec, rules and request builder. No CDK import anywhere below here.

Flow: ``spec`` (value objects) or ``spec_file`` (SDK-style JSON/YAML) -> ``rules`` (every
violation at once) -> ``request`` (the CreateTrainingJob request); ``plan`` runs both.
"""

from hetero_constructs.core.context import Deployment, RuleContext
from hetero_constructs.core.plan import Plan, build_request, plan, validate
from hetero_constructs.core.spec import (
    DistributedTraining,
    Framework,
    InstanceFallback,
    InstanceGroup,
    Launcher,
    LauncherConfig,
    MetricDefinition,
    SmddpCollective,
    TrainingChannel,
    TrainingSpec,
)
from hetero_constructs.core.spec_file import (
    distribution_from_sdk_dict,
    load_spec_file,
    spec_from_dict,
)
from hetero_constructs.core.violations import SpecValidationError, Violation

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
    "RuleContext",
    "SmddpCollective",
    "SpecValidationError",
    "TrainingChannel",
    "TrainingSpec",
    "Violation",
    "build_request",
    "distribution_from_sdk_dict",
    "load_spec_file",
    "plan",
    "spec_from_dict",
    "validate",
]
