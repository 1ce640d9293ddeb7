"""Errors the library's states catch, re-raise and pass on keep their names, as in the service.

The library's own state machine catches every error of its task (``States.ALL``) and fails with
it (a Fail state's ``ErrorPath`` / ``Error``); a Parallel or Map passes on its failed branch's or
iteration's error; ``States.TaskFailed`` matches every task error but ``States.Timeout``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from hetero_constructs.local import LocalCloud


@pytest.fixture
def cloud() -> Iterator[LocalCloud]:
    with LocalCloud("us-east-2") as local:
        yield local


def _deploy(cloud: LocalCloud, definition: dict[str, Any]) -> None:
    cloud.deploy(
        {
            "Resources": {
                "Machine": {
                    "Type": "AWS::StepFunctions::StateMachine",
                    "Properties": {"DefinitionString": json.dumps(definition)},
                }
            }
        }
    )


def _waiting(cloud: LocalCloud, **fields: Any) -> dict[str, Any]:
    """A task that waits on its token, which nobody reports: it times out."""
    queue = cloud.client("sqs").create_queue(QueueName="tokens")["QueueUrl"]
    return {
        "Type": "Task",
        "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
        "Parameters": {"QueueUrl": queue, "MessageBody": {"token.$": "$$.Task.Token"}},
        "TimeoutSeconds": 1,
        **fields,
    }


FAILED_JSONPATH = {"Type": "Fail", "ErrorPath": "$.Error", "CausePath": "$.Cause"}
FAILED_JSONATA = {
    "Type": "Fail",
    "Error": "{% $states.input.Error %}",
    "Cause": "{% $states.input.Cause %}",
}


@pytest.mark.parametrize(
    ("language", "failed"),
    [("JSONPath", FAILED_JSONPATH), ("JSONata", FAILED_JSONATA)],
)
@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({}, "States.Timeout"),
        ({"TimeoutSeconds": 30, "HeartbeatSeconds": 1}, "States.HeartbeatTimeout"),
    ],
    ids=["timeout", "heartbeat"],
)
def test_a_caught_timeout_fails_the_execution_with_its_name(
    cloud: LocalCloud, language: str, failed: dict[str, Any], fields: dict[str, Any], error: str
) -> None:
    """As the library's own state machine does: Catch States.ALL, then a Fail state that takes
    the error and cause from the caught error's output (moto failed with States.Runtime)."""
    task = _waiting(cloud, **fields)
    if language == "JSONata":
        task["Arguments"] = {
            "QueueUrl": task["Parameters"]["QueueUrl"],
            "MessageBody": {"token": "{% $states.context.Task.Token %}"},
        }
        del task["Parameters"]
    _deploy(
        cloud,
        {
            "QueryLanguage": language,
            "StartAt": "Train",
            "States": {
                "Train": {
                    **task,
                    "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Failed"}],
                    "Next": "Done",
                },
                "Done": {"Type": "Succeed"},
                "Failed": failed,
            },
        },
    )
    result = cloud.run(None, {}, name=f"{language}-{error}")
    assert (result.status, result.error) == ("FAILED", error), result.cause


def _caught_by(cloud: LocalCloud, state: dict[str, Any], catchers: list[list[str]]) -> Any:
    """Run ``state`` with one Catch per ``catchers`` entry; the output of the one that caught."""
    catch = [
        {"ErrorEquals": names, "ResultPath": "$.error", "Next": f"Caught {index}"}
        for index, names in enumerate(catchers)
    ]
    states: dict[str, Any] = {"Outer": {**state, "Catch": catch, "End": True}}
    for index in range(len(catchers)):
        states[f"Caught {index}"] = {
            "Type": "Pass",
            "Parameters": {"catcher": index, "error.$": "$.error.Error"},
            "End": True,
        }
    _deploy(cloud, {"StartAt": "Outer", "States": states})
    result = cloud.run(None, {"item": [1]}, name="caught")
    assert result.status == "SUCCEEDED", (result.error, result.cause)
    return result.output


def test_a_parallel_passes_on_its_branchs_timeout(cloud: LocalCloud) -> None:
    branch = {"StartAt": "Wait", "States": {"Wait": {**_waiting(cloud), "End": True}}}
    parallel = {"Type": "Parallel", "Branches": [branch]}
    output = _caught_by(cloud, parallel, [["States.Timeout"], ["States.ALL"]])
    assert output == {"catcher": 0, "error": "States.Timeout"}


def test_a_map_passes_on_its_iterations_timeout(cloud: LocalCloud) -> None:
    iteration = {"StartAt": "Wait", "States": {"Wait": {**_waiting(cloud), "End": True}}}
    each = {"Type": "Map", "ItemsPath": "$.item", "ItemProcessor": iteration}
    output = _caught_by(cloud, each, [["States.Timeout"], ["States.ALL"]])
    assert output == {"catcher": 0, "error": "States.Timeout"}


def test_task_failed_does_not_catch_a_timeout(cloud: LocalCloud) -> None:
    """States.TaskFailed matches any task error but States.Timeout (developer guide, "Error
    names"): a timed-out task goes on to the next catcher."""
    output = _caught_by(cloud, _waiting(cloud), [["States.TaskFailed"], ["States.ALL"]])
    assert output == {"catcher": 1, "error": "States.Timeout"}
