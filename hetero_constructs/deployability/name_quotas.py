"""The name quotas of a template: state machines, roles and their paths, functions, log groups
and the training jobs a definition names, each against the service's own limit."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

from hetero_constructs.deployability.intrinsics import is_intrinsic
from hetero_constructs.deployability.quota import (
    IAM_QUOTAS,
    SFN_QUOTAS,
    Reading,
    TemplateView,
    documented_max,
    model_max,
    quota,
)
from hetero_constructs.service import model as service_model


def _names(
    view: TemplateView,
    resource_type: str,
    name_property: str,
    limit: Callable[[], int],
    what: str,
) -> Iterator[Reading]:
    """The literal (or known-value) names a template gives; generated names always fit."""
    for logical_id, properties in view.of_type(resource_type):
        if name_property not in properties:
            continue
        node = properties[name_property]
        name, estimated = view.sized(view.worst.text, node)
        yield Reading(
            f"{what} {logical_id}",
            logical_id,
            f"Properties/{name_property}",
            len(name),
            limit(),
            "characters",
            f"The {what} of {logical_id} ({name!r}) is longer than the service accepts."
            if not estimated
            else f"The {what} of {logical_id} may be longer than the service accepts.",
            estimated,
        )


_SHORTER_NAME = (
    "give a shorter name, or leave the name out and let CloudFormation generate one that fits"
)


_MODEL = "botocore's {} model: {} max {}"


@quota(
    "DEPLOY-STATE-MACHINE-NAME",
    limit="80 characters",
    source=(
        f"{SFN_QUOTAS}: names of state machines 'must not exceed 80 characters'; "
        + _MODEL.format("stepfunctions", "CreateStateMachine name", "80")
        + "."
    ),
    fix=_SHORTER_NAME,
)
def state_machine_name(view: TemplateView) -> Iterator[Reading]:
    """A state machine's name is at most 80 characters."""
    yield from _names(
        view,
        "AWS::StepFunctions::StateMachine",
        "StateMachineName",
        lambda: model_max("stepfunctions", "CreateStateMachine", "name"),
        "state machine name",
    )


@quota(
    "DEPLOY-ROLE-NAME",
    limit="64 characters",
    source=(
        f"{IAM_QUOTAS}: role names up to 64 characters; "
        + _MODEL.format("iam", "CreateRole RoleName", "64")
        + "."
    ),
    fix=_SHORTER_NAME,
)
def role_name(view: TemplateView) -> Iterator[Reading]:
    """An IAM role's name is at most 64 characters."""
    yield from _names(
        view,
        "AWS::IAM::Role",
        "RoleName",
        lambda: model_max("iam", "CreateRole", "RoleName"),
        "role name",
    )


@quota(
    "DEPLOY-ROLE-PATH",
    limit="512 characters",
    source=(
        f"{IAM_QUOTAS}: paths up to 512 characters; "
        + _MODEL.format("iam", "CreateRole Path", "512")
        + "."
    ),
    fix="use a shorter path",
)
def role_path(view: TemplateView) -> Iterator[Reading]:
    """An IAM role's path is at most 512 characters."""
    yield from _names(
        view, "AWS::IAM::Role", "Path", lambda: model_max("iam", "CreateRole", "Path"), "role path"
    )


@quota(
    "DEPLOY-FUNCTION-NAME",
    limit="64 characters",
    source=(
        "botocore's lambda model, CreateFunction FunctionName: 'If you specify only the "
        "function name, it is limited to 64 characters in length' (the model's max of 140 "
        "applies to a full ARN)."
    ),
    fix=_SHORTER_NAME,
)
def function_name(view: TemplateView) -> Iterator[Reading]:
    """A Lambda function's name is at most 64 characters."""
    yield from _names(
        view,
        "AWS::Lambda::Function",
        "FunctionName",
        lambda: documented_max(
            "lambda",
            "CreateFunction",
            "FunctionName",
            r"only the function name, it is limited to (\d+) characters",
        ),
        "function name",
    )


@quota(
    "DEPLOY-LOG-GROUP-NAME",
    limit="512 characters",
    source=_MODEL.format("logs", "CreateLogGroup logGroupName", "512") + ".",
    fix="use a shorter log group name",
)
def log_group_name(view: TemplateView) -> Iterator[Reading]:
    """A CloudWatch Logs log group's name is at most 512 characters."""
    yield from _names(
        view,
        "AWS::Logs::LogGroup",
        "LogGroupName",
        lambda: model_max("logs", "CreateLogGroup", "logGroupName"),
        "log group name",
    )


_TRAINING_JOB_NAME = re.compile(r'"TrainingJobName"\s*:\s*"((?:[^"\\]|\\.)*)"')


def _literal_fragments(node: Any) -> Iterator[str]:
    """The literal runs of a definition: a string, or a join's literal parts between references."""
    if isinstance(node, str):
        yield node
    elif is_intrinsic(node):
        ((name, argument),) = node.items()
        if name == "Fn::Join" and isinstance(argument, list) and len(argument) == 2:
            separator, parts = argument
            run: list[str] = []
            for part in parts if isinstance(parts, list) else []:
                if isinstance(part, str):
                    run.append(part)
                    continue
                yield str(separator).join(run)
                run = []
            yield str(separator).join(run)
        elif name == "Fn::Sub":
            template = argument[0] if isinstance(argument, list) else argument
            if isinstance(template, str):
                yield template


def _literal_job_names(node: Any) -> Iterator[str]:
    if isinstance(node, dict) and not is_intrinsic(node):
        for key, value in node.items():
            if key == "TrainingJobName" and isinstance(value, str):
                yield value
            else:
                yield from _literal_job_names(value)
    elif isinstance(node, list):
        for item in node:
            yield from _literal_job_names(item)


def _training_job_name_max() -> int:
    """From the core's copy of the SageMaker model (loaded when the jobs were validated)."""
    maximum = service_model.bounds("TrainingJobName").maximum
    if maximum is None:  # the model moved on; fail loudly rather than check nothing
        raise LookupError("sagemaker CreateTrainingJob.TrainingJobName has no maximum")
    return maximum


@quota(
    "DEPLOY-TRAINING-JOB-NAME",
    limit="63 characters",
    source=_MODEL.format("sagemaker", "CreateTrainingJob TrainingJobName", "63") + ".",
    fix="use a shorter training job name (or job name prefix)",
)
def training_job_name(view: TemplateView) -> Iterator[Reading]:
    """A training job name written literally in a state machine definition is at most 63.

    Every ``"TrainingJobName": "..."`` in the literal text of a definition (names a JSONPath
    or JSONata expression builds at run time, or that contain a reference, are not checked).
    """
    for logical_id, properties in view.of_type("AWS::StepFunctions::StateMachine"):
        names: list[str] = []
        if "Definition" in properties:
            names.extend(_literal_job_names(properties["Definition"]))
        for fragment in _literal_fragments(properties.get("DefinitionString")):
            for match in _TRAINING_JOB_NAME.finditer(fragment):
                raw = match.group(1)
                if "${" not in raw:
                    names.append(json.loads(f'"{raw}"'))
        for name in dict.fromkeys(names):
            if name.startswith("{%"):  # JSONata, evaluated at run time
                continue
            yield Reading(
                f"training job name {name!r} in state machine {logical_id}",
                logical_id,
                "Properties/DefinitionString",
                len(name),
                _training_job_name_max(),
                "characters",
                f"The training job name {name!r} in the definition of {logical_id} is longer "
                "than SageMaker accepts.",
            )


__all__ = [
    "function_name",
    "log_group_name",
    "role_name",
    "role_path",
    "state_machine_name",
    "training_job_name",
]
