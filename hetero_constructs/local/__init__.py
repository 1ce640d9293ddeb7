"""Run synthesized stacks locally, with no AWS account (moto in-process, its gaps filled).

``LocalCloud`` deploys any synthesized template into moto and runs executions of its state
machines with the stack's Python Lambdas in-process; ``run_template`` does one execution in one
call; ``LocalAccount`` serves a local cloud on 127.0.0.1 for any AWS client, and
``ServedAccount`` steers one that runs (deploy, script drills, interrupt a job). A library: its
command lines are ``hetero-train run --local`` and ``hetero-train local serve / deploy /
script / interrupt``. Modules: ``cloud`` (the local cloud and its run loop), ``account`` (the
served account), ``control`` and ``steering`` (its control channel and client), ``run`` (one
execution of a template), ``deploy`` (physical ids, intrinsics, creating resources),
``lambdas`` (in-process functions), ``events`` (EventBridge rules and delivery), ``training``
(the training-job lifecycle), ``real_jobs`` and ``hosts`` (a job's code run on every host),
``job_metrics`` (its metric definitions applied to its lines) and ``simulation`` (a drill's
stages and host lines), ``moto_gaps`` (Step
Functions where moto is thinner than AWS: ``moto_integrations``, ``moto_executions``,
``patching``; ``moto_targets`` declares every part of moto they replace, checked at start),
``faults`` (fault injection), ``results`` (what a run gives back).
"""

from __future__ import annotations

from hetero_constructs.local.account import LocalAccount
from hetero_constructs.local.cloud import LocalCloud
from hetero_constructs.local.deploy.update import StackChange
from hetero_constructs.local.events import matches
from hetero_constructs.local.faults import Faults
from hetero_constructs.local.moto_targets import UnsupportedMoto
from hetero_constructs.local.results import Clients, ExecutionResult, Follow
from hetero_constructs.local.run import run_template, template_problem
from hetero_constructs.local.steering import (
    DeployedStack,
    Interrupted,
    NotServedAccount,
    Script,
    ServedAccount,
    SteeringError,
)
from hetero_constructs.local.training import Outcome, TrainingJobAttempt

__all__ = [
    "Clients",
    "DeployedStack",
    "ExecutionResult",
    "Faults",
    "Follow",
    "Interrupted",
    "LocalAccount",
    "LocalCloud",
    "NotServedAccount",
    "Outcome",
    "Script",
    "ServedAccount",
    "StackChange",
    "SteeringError",
    "TrainingJobAttempt",
    "UnsupportedMoto",
    "matches",
    "run_template",
    "template_problem",
]
