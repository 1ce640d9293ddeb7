"""One naming scheme for what a user means: a training state machine (TARGET) and a run (RUN).

TARGET is any of:

- a state machine's ARN or name;
- ``STACK/CONSTRUCT_ID`` (or ``STACK CONSTRUCT_ID``) of a ``HeterogeneousTrainingJob`` (its
  stack output, described ``hetero-constructs:state-machine:<construct path>``), of a user's
  own state machine, or of a training task inside one: that state machine is then the target;
- ``STACK`` alone, when the stack holds one training state machine.

RUN is an execution's ARN or name. Every command of ``hetero-train`` and every entry point of
``TrainingRun`` resolve names here; a name that matches nothing raises ``TargetNotFound`` (a
``LookupError``) naming the closest candidates, never a service error.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from hetero_constructs.contract import lifecycle
from hetero_constructs.contract.training_job import error_code

STATE_MACHINE_OUTPUT_PREFIX = lifecycle.STATE_MACHINE_OUTPUT_PREFIX
#: How a served local account (``hetero-train local serve``) describes each state machine of a
#: stack, whose resources its CloudFormation stub does not hold: ``<prefix><construct path>``.
LOCAL_MACHINE_OUTPUT_PREFIX = "hetero-constructs:local-state-machine:"
_MACHINE_TYPE = "AWS::StepFunctions::StateMachine"
_CLOSEST = 5


class TargetNotFound(LookupError):
    """A TARGET or RUN that matches nothing (or more than one thing): ``candidates`` are the
    closest names that do."""

    def __init__(self, message: str, candidates: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.candidates = list(candidates)


@dataclass(frozen=True)
class StateMachineTarget:
    arn: str
    name: str
    construct_path: str | None = None


@dataclass(frozen=True)
class Entry:
    """A name under a stack: a training job, a state machine, or a training task inside one."""

    path: str  # the construct path below the stack
    arn: str  # the state machine it names
    kind: str  # "training job", "state machine", "training task"


def closest(name: str, names: Iterable[str]) -> list[str]:
    """The names most like ``name`` (at most five), best first."""
    unique = sorted(set(names))
    found = difflib.get_close_matches(name, unique, n=_CLOSEST, cutoff=0.4)
    lowered = name.lower()
    found += [n for n in unique if lowered in n.lower() and n not in found]
    return found[:_CLOSEST]


def _hint(candidates: Sequence[str]) -> str:
    return f" Closest: {', '.join(candidates)}." if candidates else ""


def _name_of(arn: str) -> str:
    return arn.rsplit(":", 1)[-1]


def is_arn(text: str, kind: str) -> bool:
    return text.startswith("arn:") and f":{kind}:" in text


# -- the names in a stack ---------------------------------------------------------------------


def _below(path: str, stack: str) -> str:
    """A construct path without its stack and a trailing ``Resource``."""
    parts = path.split("/")
    if parts and parts[0] == stack:
        parts = parts[1:]
    if len(parts) > 1 and parts[-1] == "Resource":
        parts = parts[:-1]
    return "/".join(parts)


def machine_path(resource: dict[str, Any], logical: str, stack: str) -> str:
    """A state machine's construct path below the stack: its ``aws:cdk:path`` metadata (the
    CDK CLI writes it), else its logical id without CDK's 8-digit hash (``PipelineC660917D``)."""
    path = (resource.get("Metadata") or {}).get("aws:cdk:path")
    if path:
        return _below(str(path), stack)
    return re.sub(r"[0-9A-F]{8}$", "", logical) or logical


def _squashed(path: str) -> str:
    """A construct path as CDK writes it into a logical id (letters and digits only)."""
    return re.sub(r"[^A-Za-z0-9]", "", path)


def training_tasks(definition: dict[str, Any]) -> list[str]:
    """The names of the hetero-constructs training tasks of a state machine definition, in
    nested Parallel branches and Map iterations too."""
    names: list[str] = []

    def visit(states: dict[str, Any]) -> None:
        for name, state in states.items():
            if not isinstance(state, dict):
                continue
            text = json.dumps(state.get("Parameters") or state.get("Arguments") or {})
            if state.get("Type") == "Task" and "jobNamePrefix" in text and "runnerId" in text:
                names.append(name)
            for branch in state.get("Branches") or []:
                visit(branch.get("States") or {})
            for key in ("ItemProcessor", "Iterator"):
                visit((state.get(key) or {}).get("States") or {})

    visit(definition.get("States") or {})
    return names


def _task_entries(machines: Sequence[Entry], definitions: dict[str, dict[str, Any]]) -> list[Entry]:
    """Each training task of the machines, named under its machine's parent path."""
    entries = []
    for machine in machines:
        parent = machine.path.rsplit("/", 1)[0] if "/" in machine.path else ""
        for task in training_tasks(definitions.get(machine.arn) or {}):
            path = f"{parent}/{task}" if parent else task
            entries.append(Entry(path, machine.arn, "training task"))
    return entries


def template_entries(
    body: dict[str, Any], stack: str, arns: dict[str, str], definitions: dict[str, Any]
) -> list[Entry]:
    """The names of a synthesized template: ``arns`` maps its state machines' logical ids to
    their ARNs, ``definitions`` each ARN to its definition (a local run deploys it so)."""
    entries = []
    for output in (body.get("Outputs") or {}).values():
        description = str(output.get("Description", ""))
        if description.startswith(STATE_MACHINE_OUTPUT_PREFIX):
            path = _below(description[len(STATE_MACHINE_OUTPUT_PREFIX) :], stack)
            logical = (output.get("Value") or {}).get("Ref")
            if logical in arns:
                entries.append(Entry(path, arns[logical], "training job"))
    machines = []
    for logical, resource in (body.get("Resources") or {}).items():
        if resource.get("Type") == _MACHINE_TYPE and logical in arns:
            path = machine_path(resource, logical, stack)
            machines.append(Entry(path, arns[logical], "state machine"))
    return entries + machines + _task_entries(machines, definitions)


def stack_entries(stack: str, *, stepfunctions: Any, cloudformation: Any) -> list[Entry]:
    """The names of a deployed stack; ``TargetNotFound`` when there is no such stack."""
    try:
        stacks = cloudformation.describe_stacks(StackName=stack)["Stacks"]
    except ClientError as error:
        if error_code(error) != "ValidationError":
            raise
        names = _stack_names(cloudformation)
        raise TargetNotFound(
            f"No CloudFormation stack {stack!r} was found.{_hint(closest(stack, names))} "
            "Fix: check the stack name, --region and --profile (cdk list shows the app's "
            "stacks).",
            closest(stack, names),
        ) from None
    entries: list[Entry] = []
    machines: list[Entry] = []
    for output in stacks[0].get("Outputs", []) if stacks else []:
        description = output.get("Description", "")
        arn = str(output.get("OutputValue", ""))
        if description.startswith(STATE_MACHINE_OUTPUT_PREFIX):
            path = _below(description[len(STATE_MACHINE_OUTPUT_PREFIX) :], stack)
            entries.append(Entry(path, arn, "training job"))
        elif description.startswith(LOCAL_MACHINE_OUTPUT_PREFIX):
            path = _below(description[len(LOCAL_MACHINE_OUTPUT_PREFIX) :], stack)
            machines.append(Entry(path, arn, "state machine"))
    if not machines:
        machines = _deployed_machines(stack, cloudformation)
    definitions = {}
    for machine in machines:
        described = stepfunctions.describe_state_machine(stateMachineArn=machine.arn)
        definitions[machine.arn] = json.loads(described.get("definition") or "{}")
    return entries + machines + _task_entries(machines, definitions)


def _deployed_machines(stack: str, cloudformation: Any) -> list[Entry]:
    """The stack's state machines, by CloudFormation: their construct paths (template
    metadata) and ARNs (physical ids)."""
    arns: dict[str, str] = {}
    for page in cloudformation.get_paginator("list_stack_resources").paginate(StackName=stack):
        for resource in page.get("StackResourceSummaries", []):
            if resource.get("ResourceType") == _MACHINE_TYPE and resource.get("PhysicalResourceId"):
                arns[resource["LogicalResourceId"]] = resource["PhysicalResourceId"]
    if not arns:
        return []
    body = cloudformation.get_template(StackName=stack, TemplateStage="Processed")["TemplateBody"]
    if isinstance(body, str):
        body = json.loads(body)
    resources = body.get("Resources") or {}
    return [
        Entry(machine_path(resources.get(logical) or {}, logical, stack), arn, "state machine")
        for logical, arn in arns.items()
    ]


def _stack_names(cloudformation: Any) -> list[str]:
    try:
        pages = cloudformation.get_paginator("describe_stacks").paginate()
        return [s["StackName"] for page in pages for s in page.get("Stacks", [])]
    except ClientError:
        return []


def match(stack: str, construct_id: str, entries: Sequence[Entry]) -> StateMachineTarget:
    """The state machine ``STACK/CONSTRUCT_ID`` names among a stack's ``entries``."""
    wanted = construct_id.strip("/")
    last = wanted.rsplit("/", 1)[-1]
    hits = [e for e in entries if e.path == wanted or e.path.endswith(f"/{wanted}")]
    if not hits:  # a state machine known by its logical id (no path metadata)
        hits = [e for e in entries if e.kind == "state machine" and e.path == _squashed(wanted)]
    if not hits:  # a task's name alone, or under its own parent path
        hits = [e for e in entries if e.kind == "training task" and e.path.endswith(f"/{last}")]
        hits = hits or [e for e in entries if e.kind == "training task" and e.path == last]
    machines = sorted({e.arn for e in hits})
    if len(machines) == 1:
        hit = next(e for e in hits if e.arn == machines[0])
        return StateMachineTarget(hit.arn, _name_of(hit.arn), f"{stack}/{hit.path}")
    names = [f"{stack}/{e.path}" for e in entries]
    if not hits:
        found = closest(f"{stack}/{wanted}", names)
        allowed = "; ".join(f"{stack}/{e.path} ({e.kind})" for e in entries[:20]) or "none"
        raise TargetNotFound(
            f"Stack {stack!r} has no training job, state machine or training task "
            f"{wanted!r}. Given: {stack}/{wanted}.{_hint(found)} Allowed: {allowed}. Fix: give "
            "one of these (a stack deployed before its state-machine outputs existed needs a "
            "redeploy).",
            found,
        )
    paths = sorted({f"{stack}/{e.path}" for e in hits})
    raise TargetNotFound(
        f"{wanted!r} names {len(machines)} state machines in stack {stack!r}: "
        f"{', '.join(paths)}. Fix: give more of the construct path, e.g. {paths[0]}.",
        paths,
    )


# -- TARGET and RUN ---------------------------------------------------------------------------


def _parts(target: str | Sequence[str]) -> list[str]:
    given = [target] if isinstance(target, str) else list(target)
    parts = [part for part in given if part]
    if len(parts) == 1 and "/" in parts[0] and not parts[0].startswith("arn:"):
        parts = parts[0].split("/", 1)
    return parts


def resolve_state_machine(
    target: str | Sequence[str], *, stepfunctions: Any, cloudformation: Any | None
) -> StateMachineTarget:
    """The state machine TARGET names (see the module); ``TargetNotFound`` otherwise."""
    parts = _parts(target)
    shown = " ".join(parts)
    if len(parts) == 2:
        if cloudformation is None:
            raise TargetNotFound(f"{shown!r}: STACK/CONSTRUCT_ID needs a CloudFormation client.")
        entries = stack_entries(
            parts[0], stepfunctions=stepfunctions, cloudformation=cloudformation
        )
        return match(parts[0], parts[1], entries)
    if len(parts) != 1:
        raise TargetNotFound(
            f"TARGET has {len(parts)} parts. Given: {shown!r}. Allowed: a state machine ARN, a "
            "state machine name, or STACK/CONSTRUCT_ID. Fix: give one of these."
        )
    text = parts[0]
    names: list[str] = []
    for page in stepfunctions.get_paginator("list_state_machines").paginate():
        for machine in page["stateMachines"]:
            if text in (machine["name"], machine["stateMachineArn"]):
                return StateMachineTarget(machine["stateMachineArn"], machine["name"])
            names.append(machine["name"])
    if is_arn(text, "stateMachine"):
        try:
            stepfunctions.describe_state_machine(stateMachineArn=text)
        except ClientError as error:
            if error_code(error) not in ("StateMachineDoesNotExist", "InvalidArn"):
                raise
        else:
            return StateMachineTarget(text, _name_of(text))
        names = [_name_of(text), *names]
        found = closest(_name_of(text), names[1:])
        raise TargetNotFound(
            f"No state machine {text!r} in this account and region.{_hint(found)} Fix: check "
            "the ARN, --region and --profile.",
            found,
        )
    stack = _single_stack(text, stepfunctions, cloudformation)
    if stack is not None:
        return stack
    stacks = _stack_names(cloudformation) if cloudformation is not None else []
    found = closest(text, [*names, *stacks])
    shown_names = ", ".join(sorted(names)[:20]) or "none in this account and region"
    raise TargetNotFound(
        f"No state machine is named {text!r}.{_hint(found)} Allowed: a state machine ARN, one "
        f"of the names here ({shown_names}), or STACK/CONSTRUCT_ID. Fix: check the name, "
        "--region and --profile.",
        found,
    )


def _single_stack(
    stack: str, stepfunctions: Any, cloudformation: Any | None
) -> StateMachineTarget | None:
    """A stack's one training state machine (None when ``stack`` is no stack); a stack with
    several raises ``TargetNotFound`` naming them."""
    if cloudformation is None:
        return None
    try:
        entries = stack_entries(stack, stepfunctions=stepfunctions, cloudformation=cloudformation)
    except TargetNotFound:
        return None
    training = [e for e in entries if e.kind == "training job"] or [
        e
        for e in entries
        if e.kind == "state machine"
        and any(t.arn == e.arn for t in entries if t.kind == "training task")
    ]
    arns = sorted({e.arn for e in training})
    if len(arns) == 1:
        return match(stack, training[0].path, entries)
    options = [f"{stack}/{e.path}" for e in training]
    raise TargetNotFound(
        f"Stack {stack!r} has {len(arns)} training state machines. Fix: give one as "
        f"STACK/CONSTRUCT_ID: {', '.join(options) or 'none'}.",
        options,
    )


def deployed_state_machine(
    name: str | None,
    machines: Sequence[tuple[str, str, str]],
    names: dict[str, list[Entry]],
) -> str:
    """The ARN of the state machine ``name`` names among templates deployed locally:
    ``machines`` are (ARN, name, logical id), ``names`` each stack's ``template_entries``.
    Without a name, the only one (``LookupError`` when there are several)."""
    choices = ", ".join(f"{m_name} ({logical})" for _, m_name, logical in machines) or "none"
    if name is None:
        if len(machines) == 1:
            return machines[0][0]
        raise LookupError(
            f"the template has {len(machines)} state machines; choose one with "
            f"--state-machine NAME_OR_LOGICAL_ID: {choices}"
        )
    for arn, machine_name, logical in machines:
        if name in (arn, machine_name, logical):
            return arn
    stack, _, construct_id = name.partition("/")
    if construct_id and not name.startswith("arn:") and stack in names:
        return match(stack, construct_id, names[stack]).arn
    known = [m[1] for m in machines] + [m[2] for m in machines]
    known += [f"{stack}/{e.path}" for stack, entries in names.items() for e in entries]
    found = closest(name, known)
    raise TargetNotFound(
        f"No state machine {name!r} in the template.{_hint(found)} Allowed: {choices}, or "
        f"STACK/CONSTRUCT_ID of a training job, state machine or task (stacks: "
        f"{', '.join(names) or 'none'}). Fix: give one of these.",
        found,
    )


def execution_arn_for(state_machine_arn: str, name: str) -> str:
    """An execution's ARN from its state machine's ARN and its name (the service's scheme)."""
    return state_machine_arn.replace(":stateMachine:", ":execution:", 1) + f":{name}"


def resolve_execution(run: str, *, stepfunctions: Any) -> str:
    """The ARN of execution RUN (an ARN or a name searched in every state machine);
    ``TargetNotFound`` naming the closest runs otherwise."""
    machines = [
        machine["stateMachineArn"]
        for page in stepfunctions.get_paginator("list_state_machines").paginate()
        for machine in page["stateMachines"]
    ]
    candidates = (
        [run] if is_arn(run, "execution") else [execution_arn_for(m, run) for m in machines]
    )
    found: list[str] = []
    for arn in candidates:
        try:
            stepfunctions.describe_execution(executionArn=arn)
        except ClientError as error:
            if error_code(error) not in ("ExecutionDoesNotExist", "InvalidArn"):
                raise
            continue
        found.append(arn)
    if len(found) == 1:
        return found[0]
    if found:
        raise TargetNotFound(
            f"{len(found)} executions are named {run!r}: {', '.join(found)}. Fix: give the ARN.",
            found,
        )
    recent = _recent_runs(stepfunctions, machines)
    near = closest(_name_of(run), list(recent))
    raise TargetNotFound(
        f"No execution {run!r} in this account and region.{_hint(near)} Allowed: an execution "
        "ARN or name (hetero-train list TARGET shows recent ones). Fix: check the name, "
        "--region and --profile.",
        near,
    )


def _recent_runs(stepfunctions: Any, machines: Sequence[str]) -> dict[str, str]:
    """Recent executions' names (up to 100 per state machine) -> ARNs."""
    runs: dict[str, str] = {}
    for machine in machines:
        try:
            page = stepfunctions.list_executions(stateMachineArn=machine, maxResults=100)
        except ClientError:
            continue
        for execution in page.get("executions", []):
            runs.setdefault(execution["name"], execution["executionArn"])
    return runs


__all__ = [
    "LOCAL_MACHINE_OUTPUT_PREFIX",
    "STATE_MACHINE_OUTPUT_PREFIX",
    "Entry",
    "StateMachineTarget",
    "TargetNotFound",
    "closest",
    "deployed_state_machine",
    "execution_arn_for",
    "is_arn",
    "machine_path",
    "match",
    "resolve_execution",
    "resolve_state_machine",
    "stack_entries",
    "template_entries",
    "training_tasks",
]
