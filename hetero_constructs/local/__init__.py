"""Run synthesized stacks locally, with no AWS account (moto in-process, its gaps filled).

``LocalCloud`` deploys any synthesized template into moto and runs executions of its state
machines with the stack's Python Lambdas in-process; ``python -m hetero_constructs.local
TEMPLATE`` is its command line (``cli``). Modules: ``cloud`` (the local cloud and its run loop),
``deploy`` (physical ids, intrinsics, creating resources), ``lambdas`` (in-process functions),
``events`` (EventBridge rules and delivery), ``training`` (the training-job lifecycle),
``moto_gaps`` (Step Functions where moto is thinner than AWS), ``faults`` (fault injection).
"""

from __future__ import annotations

from hetero_constructs.local.cli import main, run_template
from hetero_constructs.local.cloud import Clients, ExecutionResult, Follow, LocalCloud
from hetero_constructs.local.events import matches
from hetero_constructs.local.faults import Faults
from hetero_constructs.local.training import Outcome, TrainingJobAttempt

__all__ = [
    "Clients",
    "ExecutionResult",
    "Faults",
    "Follow",
    "LocalCloud",
    "Outcome",
    "TrainingJobAttempt",
    "main",
    "matches",
    "run_template",
]
