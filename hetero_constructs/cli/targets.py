"""Finding what the user means: a training state machine (TARGET) and an execution (RUN).

TARGET is a state machine ARN, a state machine name, or a CloudFormation stack plus a
construct id (``STACK/CONSTRUCT_ID`` or ``STACK CONSTRUCT_ID``). Each
``HeterogeneousTrainingJob`` exports its state machine's ARN as a stack output whose
description is ``hetero-constructs:state-machine:<construct path>``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from hetero_constructs.cli.aws import error_code
from hetero_constructs.cli.output import CliError
from hetero_constructs.run import lifecycle

STATE_MACHINE_OUTPUT_PREFIX = lifecycle.STATE_MACHINE_OUTPUT_PREFIX


@dataclass(frozen=True)
class StateMachineTarget:
    arn: str
    name: str
    construct_path: str | None = None


def _is_arn(text: str, kind: str) -> bool:
    return text.startswith("arn:") and f":{kind}:" in text


def _name_of(arn: str) -> str:
    return arn.rsplit(":", 1)[-1]


def resolve_state_machine(
    target: Sequence[str], *, stepfunctions: Any, cloudformation: Any
) -> StateMachineTarget:
    """The state machine TARGET names; ``CliError`` saying what exists when none matches."""
    parts = [part for part in target if part]
    if len(parts) == 1 and "/" in parts[0] and not parts[0].startswith("arn:"):
        parts = parts[0].split("/", 1)
    if len(parts) == 2:
        return _from_stack(parts[0], parts[1], cloudformation)
    if len(parts) != 1:
        raise CliError(
            f"TARGET has {len(parts)} parts. Given: {' '.join(target)!r}. Allowed: a state "
            "machine ARN, a state machine name, or STACK/CONSTRUCT_ID. Fix: give one of these."
        )
    text = parts[0]
    if _is_arn(text, "stateMachine"):
        return StateMachineTarget(text, _name_of(text))
    names: list[str] = []
    for page in stepfunctions.get_paginator("list_state_machines").paginate():
        for machine in page["stateMachines"]:
            if machine["name"] == text:
                return StateMachineTarget(machine["stateMachineArn"], machine["name"])
            names.append(machine["name"])
    shown = ", ".join(sorted(names)[:20]) or "none in this account and region"
    raise CliError(
        f"No state machine is named {text!r}. Allowed: a state machine ARN, one of the names "
        f"here ({shown}), or STACK/CONSTRUCT_ID. Fix: check the name, --region and --profile."
    )


def _from_stack(stack: str, construct_id: str, cloudformation: Any) -> StateMachineTarget:
    try:
        stacks = cloudformation.describe_stacks(StackName=stack)["Stacks"]
    except ClientError as error:
        if error_code(error) != "ValidationError":
            raise
        raise CliError(
            f"No CloudFormation stack {stack!r} was found. Given: {stack}/{construct_id}. "
            "Allowed: a deployed stack's name. Fix: check the stack name, --region and --profile "
            "(cdk list shows the app's stacks)."
        ) from None
    candidates: list[StateMachineTarget] = []
    for output in stacks[0].get("Outputs", []) if stacks else []:
        description = output.get("Description", "")
        if description.startswith(STATE_MACHINE_OUTPUT_PREFIX):
            path = description[len(STATE_MACHINE_OUTPUT_PREFIX) :]
            arn = output["OutputValue"]
            candidates.append(StateMachineTarget(arn, _name_of(arn), path))
    matches = [
        c
        for c in candidates
        if c.construct_path == construct_id or (c.construct_path or "").endswith(f"/{construct_id}")
    ]
    if len(matches) == 1:
        return matches[0]
    paths = ", ".join(str(c.construct_path) for c in candidates) or "none"
    if not matches:
        fix = (
            f"give one of them, e.g. {stack}/{_tail(candidates[0].construct_path)}"
            if candidates
            else "deploy a stack with a HeterogeneousTrainingJob (a stack deployed before the "
            "state-machine outputs existed needs a redeploy)"
        )
        raise CliError(
            f"Stack {stack!r} exports no training job {construct_id!r}. Given: "
            f"{stack}/{construct_id}. Allowed: the training jobs it exports ({paths}). Fix: {fix}."
        )
    raise CliError(
        f"{construct_id!r} matches {len(matches)} training jobs in stack {stack!r} ({paths}). "
        f"Fix: give more of the construct path, e.g. {stack}/{_below_stack(matches[0])}."
    )


def _tail(path: str | None) -> str:
    return (path or "").rsplit("/", 1)[-1]


def _below_stack(target: StateMachineTarget) -> str:
    return (target.construct_path or "").split("/", 1)[-1]


def execution_arn_for(state_machine_arn: str, name: str) -> str:
    """An execution's ARN from its state machine's ARN and its name (the service's scheme)."""
    return state_machine_arn.replace(":stateMachine:", ":execution:", 1) + f":{name}"


def resolve_execution(run: str, *, stepfunctions: Any) -> str:
    """The ARN of execution RUN (an ARN, or a name searched in every state machine)."""
    if _is_arn(run, "execution"):
        return run
    found: list[str] = []
    for page in stepfunctions.get_paginator("list_state_machines").paginate():
        for machine in page["stateMachines"]:
            arn = execution_arn_for(machine["stateMachineArn"], run)
            try:
                stepfunctions.describe_execution(executionArn=arn)
            except ClientError as error:
                if error_code(error) not in ("ExecutionDoesNotExist", "InvalidArn"):
                    raise
                continue
            found.append(arn)
    if len(found) == 1:
        return found[0]
    if not found:
        raise CliError(
            f"No execution is named {run!r} in this account and region. Allowed: an execution "
            "ARN or name (hetero-train list TARGET shows recent ones). Fix: check the name, "
            "--region and --profile."
        )
    raise CliError(
        f"{len(found)} executions are named {run!r}: {', '.join(found)}. Fix: give the ARN."
    )


__all__ = [
    "STATE_MACHINE_OUTPUT_PREFIX",
    "StateMachineTarget",
    "execution_arn_for",
    "resolve_execution",
    "resolve_state_machine",
]
