"""The pure-Python core: spec, rules and request builder. No CDK import anywhere below here.

Flow: ``spec`` (value objects) or ``spec_file`` (SDK-style JSON/YAML) -> ``rules`` (every
violation at once) -> ``request`` (the CreateTrainingJob request); ``plan`` runs both.

The names below are imported on first use (PEP 562), so that importing one module of the
core (``from hetero_constructs.core import lifecycle``) does not import the rest of it.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

# Public name -> the module that defines it.
_LAZY: dict[str, str] = {
    "Deployment": "hetero_constructs.core.context",
    "RuleContext": "hetero_constructs.core.context",
    "Plan": "hetero_constructs.core.plan",
    "build_request": "hetero_constructs.core.plan",
    "plan": "hetero_constructs.core.plan",
    "validate": "hetero_constructs.core.plan",
    "DistributedTraining": "hetero_constructs.core.spec",
    "Framework": "hetero_constructs.core.spec",
    "InstanceFallback": "hetero_constructs.core.spec",
    "InstanceGroup": "hetero_constructs.core.spec",
    "Launcher": "hetero_constructs.core.spec",
    "LauncherConfig": "hetero_constructs.core.spec",
    "MetricDefinition": "hetero_constructs.core.spec",
    "SmddpCollective": "hetero_constructs.core.spec",
    "TrainingChannel": "hetero_constructs.core.spec",
    "TrainingSpec": "hetero_constructs.core.spec",
    "distribution_from_sdk_dict": "hetero_constructs.core.spec_file",
    "load_spec_file": "hetero_constructs.core.spec_file",
    "read_spec_file": "hetero_constructs.core.spec_file",
    "spec_from_dict": "hetero_constructs.core.spec_file",
    "SpecValidationError": "hetero_constructs.core.violations",
    "Violation": "hetero_constructs.core.violations",
}

if TYPE_CHECKING:
    from hetero_constructs.core.context import Deployment as Deployment
    from hetero_constructs.core.context import RuleContext as RuleContext
    from hetero_constructs.core.plan import Plan as Plan
    from hetero_constructs.core.plan import build_request as build_request
    from hetero_constructs.core.plan import plan as plan
    from hetero_constructs.core.plan import validate as validate
    from hetero_constructs.core.spec import DistributedTraining as DistributedTraining
    from hetero_constructs.core.spec import Framework as Framework
    from hetero_constructs.core.spec import InstanceFallback as InstanceFallback
    from hetero_constructs.core.spec import InstanceGroup as InstanceGroup
    from hetero_constructs.core.spec import Launcher as Launcher
    from hetero_constructs.core.spec import LauncherConfig as LauncherConfig
    from hetero_constructs.core.spec import MetricDefinition as MetricDefinition
    from hetero_constructs.core.spec import SmddpCollective as SmddpCollective
    from hetero_constructs.core.spec import TrainingChannel as TrainingChannel
    from hetero_constructs.core.spec import TrainingSpec as TrainingSpec
    from hetero_constructs.core.spec_file import (
        distribution_from_sdk_dict as distribution_from_sdk_dict,
    )
    from hetero_constructs.core.spec_file import load_spec_file as load_spec_file
    from hetero_constructs.core.spec_file import read_spec_file as read_spec_file
    from hetero_constructs.core.spec_file import spec_from_dict as spec_from_dict
    from hetero_constructs.core.violations import SpecValidationError as SpecValidationError
    from hetero_constructs.core.violations import Violation as Violation


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        # Submodules (``from hetero_constructs.core import lifecycle``) are found by the import
        # system after this AttributeError.
        raise AttributeError(f"module 'hetero_constructs.core' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


class _CorePackage(types.ModuleType):
    """The package, whose ``plan`` stays the function when its module is imported.

    The import system binds every imported submodule on its package: importing
    ``hetero_constructs.core.plan`` would otherwise make ``hetero_constructs.core.plan`` the
    module, and ``from hetero_constructs.core import plan`` depend on import order.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _LAZY and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _CorePackage


__all__ = sorted(_LAZY)
