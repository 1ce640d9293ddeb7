"""Finding what the user means: a training state machine (TARGET) and an execution (RUN).

The names are resolved by ``hetero_constructs.runs.targets``, the one resolver the Python API
uses too; here a name that matches nothing becomes a usage error (exit 2) naming the closest
candidates.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hetero_constructs.cli.output import CliError
from hetero_constructs.runs import targets
from hetero_constructs.runs.targets import (
    STATE_MACHINE_OUTPUT_PREFIX,
    StateMachineTarget,
    TargetNotFound,
    execution_arn_for,
)

#: A name that matches nothing: a usage error.
EXIT_USAGE = 2


def not_found(error: TargetNotFound) -> CliError:
    return CliError(str(error), "NotFound", exit_code=EXIT_USAGE)


def resolve_state_machine(
    target: Sequence[str], *, stepfunctions: Any, cloudformation: Any
) -> StateMachineTarget:
    """The state machine TARGET names; exit 2 naming the closest ones when none matches."""
    try:
        return targets.resolve_state_machine(
            target, stepfunctions=stepfunctions, cloudformation=cloudformation
        )
    except TargetNotFound as error:
        raise not_found(error) from None


def resolve_execution(run: str, *, stepfunctions: Any) -> str:
    """The ARN of execution RUN (an ARN or a name); exit 2 naming the closest runs."""
    try:
        return targets.resolve_execution(run, stepfunctions=stepfunctions)
    except TargetNotFound as error:
        raise not_found(error) from None


__all__ = [
    "EXIT_USAGE",
    "STATE_MACHINE_OUTPUT_PREFIX",
    "StateMachineTarget",
    "execution_arn_for",
    "not_found",
    "resolve_execution",
    "resolve_state_machine",
]
